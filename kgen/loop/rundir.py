"""The run directory: everything a run did, written atomically as it happens, so it can resume.

    run.json            config, versions, git SHA, status
    transcript.jsonl    every model call: messages, reply, usage, latency, error
    attempts/NNN/       kernel.cu, reply.md, compile.json, nvcc.log, feedback.txt, evaluation.json,
                        profile.json (passed: Nsight Compute), sanitizer.json (failed)
    results.jsonl       one line per finished attempt (the source of truth for --resume)
    report.md, best.cu
    .lock               held (flock) by the one process writing the folder; holds its pid

A run directory read back is data, never code: run.json and results.jsonl are validated
(kgen.loop.results), and a second process is kept out by the lock.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import importlib.metadata
import json
import os
import platform
import re
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from kgen import __version__
from kgen.errors import UsageError
from kgen.loop.attempt import Attempt
from kgen.loop.results import read_results
from kgen.textsafe import SECRET_ENV, redact_secrets
from kgen.toolkit import nvcc_version

__all__ = ["SECRET_ENV", "RunDir", "append_line", "default_run_dir", "redact", "redact_text",
           "write_atomic"]
_HELD: dict[str, int] = {}  # run directories this process holds the lock of -> the lock's fd


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
    return redact_secrets(text)


def redact(value: Any) -> Any:
    """redact_text over a JSON-able record."""
    return json.loads(redact_text(json.dumps(value, default=str)))


def default_run_dir(label: str) -> Path:
    """runs/<UTC time>-<label>-<random>: two runs started in the same second never collide,
    and a label (an op's name) can never make it a path."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", label).strip(".")[:80] or "run"
    return Path("runs") / f"{stamp}-{safe}-{secrets.token_hex(3)}"


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
        self.notices: list[str] = []  # what reopening repaired, for the user
        self.reserved = 0  # attempt numbers up to this one are taken (records set aside)
        self._records: list[dict[str, Any]] | None = None

    @classmethod
    def create(cls, path: Path, config: dict[str, Any]) -> RunDir:
        if path.exists() and any(path.iterdir()):
            raise UsageError(f"{path} exists and is not empty; use --resume {path} to continue "
                             "it, or pick another --out")
        run = cls(path)
        path.mkdir(parents=True, exist_ok=True)
        run.lock()
        (path / "attempts").mkdir(exist_ok=True)
        versions = {"kgen": __version__, "python": platform.python_version(),
                    "platform": platform.platform(), "nvcc": nvcc_version(),
                    **{name: _installed(name) for name in ("torch", "cupy-cuda13x", "openai")}}
        run.write_meta({"config": config, "versions": versions, "git_sha": git_sha(),
                        "status": "running",
                        "started": dt.datetime.now(dt.UTC).isoformat()})
        return run

    @classmethod
    def open(cls, path: Path, skip_corrupt: bool = False) -> RunDir:
        """Reopen for --resume: locked, run.json checked, results.jsonl repaired or refused."""
        if not (path / "run.json").is_file():
            raise UsageError(f"{path} is not a kgen run directory (no run.json)")
        run = cls(path)
        run.lock()
        run.meta()  # one clear line now if run.json is damaged
        results = read_results(path / "results.jsonl", skip_corrupt)
        run._records, run.notices = results.records, results.notices
        if results.set_aside:  # their folders stay as they are: new attempts go after them
            run.reserved = max((int(p.name) for p in (path / "attempts").glob("[0-9]*")
                                if p.name.isdigit()), default=0)
        transcript = path / "transcript.jsonl"
        if transcript.is_file() and transcript.stat().st_size:
            with open(transcript, "rb+") as handle:  # a torn last call must not swallow the next
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":
                    handle.write(b"\n")
        return run

    def lock(self) -> None:
        """Hold the folder's lock for this process; UsageError naming the holder if another
        kgen process has it (two writers would record attempts twice)."""
        key = os.path.realpath(self.path)
        if key in _HELD:
            return
        fd = os.open(self.path / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise UsageError(f"{self.path} is in use by another kgen process (pid {holder}); "
                             "wait for it to finish: one process writes a run directory") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        _HELD[key] = fd

    def release(self) -> None:
        """Let another process open the folder (also done when this process ends)."""
        fd = _HELD.pop(os.path.realpath(self.path), None)
        if fd is not None:
            os.close(fd)

    def meta(self) -> dict[str, Any]:
        try:
            data = json.loads((self.path / "run.json").read_bytes().decode("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise UsageError(f"{self.path / 'run.json'} cannot be read as JSON "
                             f"({type(exc).__name__}); it is not a run directory kgen can "
                             "resume") from None
        if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
            raise UsageError(f"{self.path / 'run.json'} has no 'config' object; it is not a "
                             "run directory kgen can resume")
        return data

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
        self._records = None  # read again (validated) when next asked

    def finished_records(self) -> list[dict[str, Any]]:
        """The results lines of finished attempts, in order, as validated when reopened (a torn
        last line is dropped; corrupt lines stop the resume unless they were set aside)."""
        if self._records is None:
            self._records = read_results(self.path / "results.jsonl").records
        return list(self._records)

    def write_best(self, source: str) -> Path:
        write_atomic(self.path / "best.cu", source)
        return self.path / "best.cu"

    def write_report(self, text: str) -> Path:
        write_atomic(self.path / "report.md", text)
        return self.path / "report.md"
