"""The parent side of the trust boundary: spawn one fresh worker per candidate, bounded in time
and output, sandboxed (a pool of warm workers that serve candidate after candidate: kgen.gpu.pool).

The parent never imports cupy or torch and never creates a CUDA context; it only writes files into
the worker's own folder, runs `python -m kgen.sandbox.worker`, and reads result.json back.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from kgen import process
from kgen.errors import EnvironmentProblem
from kgen.gpu.sandbox import KGEN_ROOT, gpu_sandbox
from kgen.verdict import Evaluation
from kgen.wire import RESULT_FILE, EvalRequest

MAX_OUTPUT = 64 * 1024  # bytes of worker stdout/stderr kept (head + tail)
MAX_RESULT = 1024 * 1024  # result.json larger than this is not trusted
# The worker never got to the candidate: an environment problem, never a verdict on the kernel.
_CANNOT_START = ("No module named", "can't open file", "execvp", "No such file or directory: "
                 f"'{sys.executable}'", "error while loading shared libraries")


class Workers(Protocol):
    """Where candidates are judged: fresh workers, or the warm pool (kgen.gpu.pool)."""

    def run(self, request: EvalRequest, binary: bytes, *, timeout_s: float) -> Evaluation:
        """Judge one candidate; every outcome about the kernel is an Evaluation. A pool that
        checked the GPU after a failure says so in extra (`canary` or `gpu_unhealthy`)."""
        ...

    def holding(self, result: Evaluation) -> AbstractContextManager[dict[str, str]]:
        """Keep the GPU that judged `result` free of other candidates while the checks after
        the verdict (profile, sanitizer) run there; gives what to add to their environment."""
        ...


@dataclass
class FreshWorkers:
    """A new worker for every candidate, one at a time (`--fresh-workers`; `kgen bench`)."""

    unsafe: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def run(self, request: EvalRequest, binary: bytes, *, timeout_s: float) -> Evaluation:
        with self._lock:  # two candidates timed at once on one GPU would disturb each other
            return run_worker(request, binary, timeout_s=timeout_s, unsafe=self.unsafe)

    @contextlib.contextmanager
    def holding(self, result: Evaluation) -> Iterator[dict[str, str]]:
        with self._lock:  # the same GPU (the environment's), so the same turn
            yield {}


def worker_command(workdir: Path, canary: bool = False, mode: str | None = None) -> list[str]:
    """`python -m kgen.sandbox.worker`; mode profile|sanitize: one launch under a wrapping tool."""
    return [sys.executable, "-m", "kgen.sandbox.worker", *(["--canary"] if canary else []),
            *(["--mode", mode] if mode else []), str(workdir)]


def worker_env(workdir: Path) -> dict[str, str]:
    """The worker's whole environment: allow-listed, secrets removed, HOME in its own folder."""
    env = process.scrubbed_env(HOME=str(workdir), TMPDIR=str(workdir))
    paths = [str(KGEN_ROOT)] + [p for p in env.get("PYTHONPATH", "").split(":") if p]
    env["PYTHONPATH"] = ":".join(dict.fromkeys(paths))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_worker(request: EvalRequest | None, binary: bytes | None, *, timeout_s: float,
               unsafe: bool = False, command: Sequence[str] | None = None,
               workdir: Path | None = None, canary: bool = False) -> Evaluation:
    """Run one worker to completion or timeout; every outcome about the kernel is an Evaluation.

    A worker that cannot start at all (no interpreter, kgen or torch/cupy missing inside the
    sandbox) raises EnvironmentProblem: that is the machine's fault, not the candidate's.
    """
    own = workdir is None
    folder = Path(tempfile.mkdtemp(prefix="kgen-worker-")) if workdir is None else workdir
    try:
        if request is not None and binary is not None:
            request.write(folder, binary)
        prefix = [] if unsafe else gpu_sandbox(folder)
        cmd = [*prefix, *(command or worker_command(folder, canary))]
        done = process.run_limited(cmd, cwd=folder, timeout=timeout_s,
                                     env=worker_env(folder), max_output=MAX_OUTPUT)
        result = read_result(folder, done)
        note = "UNSAFE: the worker ran without bubblewrap (--unsafe-no-sandbox)" if unsafe else (
            "" if prefix else "isolation: limits only (bubblewrap not usable here)")
        extra = {**result.extra, "isolation": "none" if unsafe else
                 ("bubblewrap" if prefix else "limits only"), "wall_s": round(done.seconds, 3)}
        return replace(result, note=_join(result.note, note), extra=extra)
    finally:
        if own:
            shutil.rmtree(folder, ignore_errors=True)


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def read_result(folder: Path, done: process.Finished) -> Evaluation:
    """The worker's verdict, or one made from how it ended (timeout, signal, exit code)."""
    tail = done.output.strip()[-2000:]
    cut = " (output truncated)" if done.truncated else ""
    if done.timed_out:
        return Evaluation("timeout", f"the worker did not finish within {done.seconds:.0f} s and "
                         "was killed with its process group (an endless kernel?)",
                         extra={"output": tail})
    path = folder / RESULT_FILE
    if path.is_file() and path.stat().st_size <= MAX_RESULT:
        try:
            result = Evaluation.from_json(json.loads(path.read_text()))
        except (ValueError, TypeError, KeyError):
            result = None
        if result is not None and result.extra.get("environment"):
            raise EnvironmentProblem(f"the GPU worker cannot run here: {result.message}")
        if result is not None:
            return result
    if any(marker in tail for marker in _CANNOT_START):
        raise EnvironmentProblem("the GPU worker could not start: "
                                 f"{tail.splitlines()[-1][:300] if tail else 'no output'} "
                                 f"(interpreter {sys.executable}; kgen at {KGEN_ROOT})")
    code = done.returncode
    how = (f"was killed by signal {signal.Signals(-code).name}" if code is not None and code < 0
           and -code in signal.valid_signals() else f"exited with code {code}")
    last = tail.splitlines()[-1][:500] if tail else "no output"
    return Evaluation("crash", f"the worker {how} without a result: {last}{cut}",
                     extra={"output": tail})


def check_health(timeout_s: float = 120.0, unsafe: bool = False,
                 command: Sequence[str] | None = None) -> Evaluation:
    """The canary: a fresh worker runs a tiny kernel with a known answer."""
    return run_worker(None, None, timeout_s=timeout_s, unsafe=unsafe, command=command,
                      canary=True)
