"""Running untrusted work: a process group with limits, a clean environment, bubblewrap's path.

Shared by the compile stage (nvcc on generated source) and the GPU stage (the worker); each builds
its own bubblewrap command line (kgen.compile.isolation, kgen.gpu.sandbox).
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# Environment variables that may carry credentials; never passed to untrusted work.
_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE",
                   "SESSION")
_KEEP = ("PATH", "LANG", "LC_ALL", "TERM", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH",
         "LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV", "NVIDIA_VISIBLE_DEVICES",
         "NVIDIA_DRIVER_CAPABILITIES", "TMPDIR")


def scrubbed_env(base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """An allow-listed environment with anything that looks like a secret removed."""
    base = os.environ if base is None else base
    env = {k: v for k, v in base.items()
           if k in _KEEP and not any(m in k.upper() for m in _SECRET_MARKERS)}
    env.update(extra)
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return env


@functools.cache
def bwrap_path() -> str | None:
    """bubblewrap's path if it is installed and can actually create a sandbox here."""
    path = shutil.which("bwrap")
    if path is None:
        return None
    try:
        probe = subprocess.run([path, "--ro-bind", "/", "/", "--unshare-net", "--die-with-parent",
                                "true"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if probe.returncode == 0 else None


def isolation_name() -> str:
    """What kgen can use on this machine, for messages and `kgen doctor`."""
    if bwrap_path():
        return "bubblewrap (no network, read-only system, private /tmp)"
    return "limits only (bubblewrap not usable: no network or filesystem isolation)"


@dataclass(frozen=True)
class Finished:
    """How a limited process ended; output is capped and decoded so it can never crash kgen."""

    returncode: int | None  # None when killed for time
    output: str
    seconds: float
    timed_out: bool
    truncated: bool


def _limit(memory_bytes: int | None) -> None:
    if memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


# Every limited process still running, from any thread: an interrupted run kills them all, also
# those a compile or GPU thread started (only the main thread sees the interrupt).
_LIVE: set[subprocess.Popen] = set()
_LIVE_LOCK = threading.Lock()


def kill_all() -> None:
    """Kill every limited process still running (and its tree): a run is ending."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for proc in live:
        kill_group(proc)


def run_limited(cmd: Sequence[str], *, cwd: Path, timeout: float, env: Mapping[str, str],
                memory_bytes: int | None = None, max_output: int = 256 * 1024) -> Finished:
    """Run cmd in its own process group; kill the whole group at the timeout; cap the output."""
    log_path = cwd / f".output-{os.getpid()}-{time.monotonic_ns()}.log"
    start = time.monotonic()
    with open(log_path, "w+b") as log:
        proc = subprocess.Popen(list(cmd), cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=lambda: _limit(memory_bytes))
        with _LIVE_LOCK:
            _LIVE.add(proc)
        try:
            returncode: int | None = proc.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            kill_group(proc)
            returncode, timed_out = None, True
        except BaseException:  # Ctrl-C: the child is in its own session and did not get SIGINT
            kill_group(proc)
            log_path.unlink(missing_ok=True)
            raise
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(proc)
        seconds = time.monotonic() - start
        size = log.seek(0, os.SEEK_END)
        log.seek(0)
        # Keep the head (where the first errors are) and the tail (ptxas/nvlink summaries).
        if size > max_output:
            head = log.read(max_output // 2)
            log.seek(size - max_output // 2)
            data = head + b"\n[... output truncated ...]\n" + log.read()
        else:
            data = log.read()
    log_path.unlink(missing_ok=True)
    text = data.decode("utf-8", errors="replace")
    return Finished(returncode, text, seconds, timed_out, size > max_output)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process and everything it started (nvcc's children, a hung worker).

    bwrap --new-session puts the sandboxed tree in its own session, out of reach of killpg, so
    the descendants are found through /proc first and each one is killed and waited for.
    """
    tree = _descendants(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for pid in tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in tree) and time.monotonic() < deadline:
        time.sleep(0.02)


def _descendants(root: int) -> list[int]:
    """Every process below `root`, from /proc (empty where there is no /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[-1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")
