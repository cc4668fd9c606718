"""The run directory: everything a run did, written atomically as it happens, so it can resume.

    run.json            config, versions, git SHA, status
    transcript.jsonl    every model call: messages, reply, usage, latency, error
    attempts/NNN/       kernel.cu, reply.md, compile.json, nvcc.log, feedback.txt, evaluation.json,
                        profile.json (passed: Nsight Compute), sanitizer.json (failed)
    results.jsonl       one line per finished attempt (the source of truth for --resume)
    report.md, best.cu
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from kgen import __version__
from kgen.errors import UsageError
from kgen.loop.attempt import Attempt
from kgen.toolkit import nvcc_version

SECRET_ENV = ("OPENAI_API_KEY", "KGEN_API_KEY")


def write_atomic(path: Path, text: str) -> None:
    """Write via a temp file and rename, so a reader never sees half a file (keys redacted)."""
    text = redact_text(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    # mkstemp makes the file 0600: keep an existing file's mode, else the usual 0666 & ~umask.
    if path.exists():
        shutil.copymode(path, tmp)
    else:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
    os.replace(tmp, path)


def append_line(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON line and flush it to disk (a crash keeps every earlier line whole)."""
    with open(path, "a") as handle:
        handle.write(json.dumps(redact(record), default=str) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def redact_text(text: str) -> str:
    """Replace any configured API key found in text (keys never reach the run directory)."""
    for name in SECRET_ENV:
        secret = os.environ.get(name, "")
        if len(secret) >= 8:
            text = text.replace(secret, "[redacted]")
    return text


def redact(value: Any) -> Any:
    """redact_text over a JSON-able record."""
    return json.loads(redact_text(json.dumps(value, default=str)))


def default_run_dir(label: str) -> Path:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return Path("runs") / f"{stamp}-{label}"


def _installed(distribution: str) -> str | None:
    """A package's version without importing it (torch and cupy are slow to import)."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def git_sha() -> str | None:
    """kgen's own commit when it runs from a checkout (with -dirty for local changes), else None."""
    here = Path(__file__).resolve().parent
    if not (here.parent / ".git").exists():
        return None  # an installed wheel: the version says what it is
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5, cwd=here).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5, cwd=here).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (sha + ("-dirty" if dirty else "")) or None


class RunDir:
    """One run's folder. Only the loop writes it; `--resume` reads it back."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def create(cls, path: Path, config: dict[str, Any]) -> RunDir:
        if path.exists() and any(path.iterdir()):
            raise UsageError(f"{path} exists and is not empty; use --resume {path} to continue "
                             "it, or pick another --out")
        run = cls(path)
        (path / "attempts").mkdir(parents=True, exist_ok=True)
        versions = {"kgen": __version__, "python": platform.python_version(),
                    "platform": platform.platform(), "nvcc": nvcc_version(),
                    **{name: _installed(name) for name in ("torch", "cupy-cuda13x", "openai")}}
        run.write_meta({"config": config, "versions": versions, "git_sha": git_sha(),
                        "status": "running",
                        "started": dt.datetime.now(dt.UTC).isoformat()})
        return run

    @classmethod
    def open(cls, path: Path) -> RunDir:
        if not (path / "run.json").is_file():
            raise UsageError(f"{path} is not a kgen run directory (no run.json)")
        return cls(path)

    def meta(self) -> dict[str, Any]:
        return json.loads((self.path / "run.json").read_text())

    def write_meta(self, meta: dict[str, Any]) -> None:
        write_atomic(self.path / "run.json", json.dumps(redact(meta), indent=2, default=str))

    def update_meta(self, **changes: Any) -> None:
        self.write_meta({**self.meta(), **changes})

    def log_call(self, record: dict[str, Any]) -> None:
        append_line(self.path / "transcript.jsonl", record)

    def attempt_dir(self, number: int) -> Path:
        return self.path / "attempts" / f"{number:03d}"

    def save_attempt(self, attempt: Attempt, reply_text: str) -> None:
        """Write the attempt's files, then its results line: the line marks it finished."""
        folder = self.attempt_dir(attempt.number)
        if attempt.source is not None:
            write_atomic(folder / "kernel.cu", attempt.source)
        write_atomic(folder / "reply.md", reply_text)
        if attempt.compile is not None:
            write_atomic(folder / "compile.json", json.dumps(attempt.compile.to_json(), indent=2))
            write_atomic(folder / "nvcc.log", attempt.compile.log)
        write_atomic(folder / "feedback.txt", attempt.feedback())
        if attempt.evaluation is not None:
            write_atomic(folder / "evaluation.json",
                         json.dumps(attempt.evaluation.to_json(), indent=2))
            for name, found in (("profile", attempt.evaluation.profile),
                                ("sanitizer", attempt.evaluation.sanitizer)):
                if found is not None:
                    write_atomic(folder / f"{name}.json", json.dumps(found.to_json(), indent=2))
        append_line(self.path / "results.jsonl", attempt.to_json())

    def finished_records(self) -> list[dict[str, Any]]:
        """The results lines of finished attempts, in order (a torn last line is ignored)."""
        path = self.path / "results.jsonl"
        if not path.exists():
            return []
        records = []
        for line in path.read_text().splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                break
        return records

    def write_best(self, source: str) -> Path:
        write_atomic(self.path / "best.cu", source)
        return self.path / "best.cu"

    def write_report(self, text: str) -> Path:
        write_atomic(self.path / "report.md", text)
        return self.path / "report.md"
