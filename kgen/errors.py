"""One exception family; the CLI turns each into one clear line and its exit code (the
README's exit-code table)."""

from pathlib import Path


class KgenError(Exception):
    """A problem kgen reports to the user; exit_code follows the README's exit-code table."""

    exit_code = 2


class UsageError(KgenError):
    """Bad input from the user: unknown option or arch, missing file, invalid spec or contract."""

    exit_code = 2


class EnvironmentProblem(KgenError):
    """The machine lacks something: no nvcc, no GPU for a GPU command, sandbox unusable."""

    exit_code = 3


class ModelFatal(KgenError):
    """The model endpoint failed for good: authentication, unknown model, retries exhausted."""

    exit_code = 4


class Signalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread so a run closes as after Ctrl-C; the CLI
    exits 128 + the signal's number (143 for SIGTERM, 129 for SIGHUP; Ctrl-C is 130)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def require_file(path: Path) -> None:
    """UsageError unless `path` is a regular file: missing and not-a-file (a directory,
    /dev/null) are told apart, since "no such file" about a path that exists misleads."""
    if path.is_file():
        return
    if not path.exists():
        raise UsageError(f"no such file: {path}")
    what = "a directory" if path.is_dir() else "not a regular file"
    raise UsageError(f"{path} is {what}; give a file")
