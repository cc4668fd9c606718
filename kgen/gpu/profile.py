"""The profile check: a candidate that passed runs once more, under Nsight Compute, at the first
bench size; the curated metrics come back as a Profile on its Evaluation. Missing ncu, missing
permission (ERR_NVGPUCTRPERM) and missing metrics are said in the Profile, never fatal.

    ncu --clock-control none --target-processes all --profile-from-start off
        -k regex:^(KERNELS)$ --metrics ... --csv --page raw --log-file LOG
        python -m kgen.sandbox.worker --mode profile

The worker brackets the one measured run of the contract with cudaProfilerStart/Stop, after its
warm-up, and the kernel-name filter keeps torch's kernels out: so ncu measures exactly the
launches that ran, whichever launch lines' `when` held (counting launches instead, kgen had to
decide those conditions itself, which it cannot for one over the GPU's SM count).
`--clock-control none` keeps the GPU's own clocks (the default locks them low). Inside the
worker's bubblewrap sandbox, bounded in time like every worker.

One profile at a time on this host: a second ncu collecting while another does fails in the
driver ("==ERROR== An error was reported by the driver", two GPU tests at once on an H100,
2026-12-05). ncu's own lock file, /tmp/nsight-compute-lock, is no help: each sandboxed worker
has a private /tmp. So kgen holds a lock of its own (PROFILE_LOCK) around every ncu run.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path

from kgen import toolkit
from kgen.contract import Contract
from kgen.findings import Profile
from kgen.gpu import ncu, wrapped
from kgen.wire import EvalRequest

_PERMISSION = ("ERR_NVGPUCTRPERM", "does not have permission", "LibraryNotLoaded",
               "Failed to initialize the profiler")
_unusable: str | None = None  # set once ncu cannot profile on this machine: later ones skip
# Said by ncu on every run with --clock-control none: not a reason for anything.
_NOISE = ("unmodified GPU clocks",)
# Shared by every kgen process on the host, whoever runs it (the sandboxed workers never see it).
PROFILE_LOCK = Path(tempfile.gettempdir()) / "kgen-ncu.lock"


@contextlib.contextmanager
def one_profile_at_a_time() -> Iterator[None]:
    """Hold the host's profile lock (waiting for it): threads and processes alike, since each
    open of the file is a lock of its own; the kernel releases it if kgen dies."""
    try:
        fd: int | None = _open_lock(PROFILE_LOCK)
    except OSError:  # no lock to be had (a read-only temporary folder): unserialized, as before
        fd = None
    if fd is None:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _open_lock(path: Path) -> int:
    """The lock file opened read-only (flock needs no more), so another user's file serves too;
    created world-readable when missing. Where even that fails (a file nobody else may read), a
    lock of this user's own: profiles then wait only for this user's."""
    try:
        return os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        pass
    except PermissionError:
        return _open_lock_of_user(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:  # another process made it meanwhile
        return _open_lock(path)
    except PermissionError:
        return _open_lock_of_user(path)
    os.fchmod(fd, 0o644)  # whatever the umask: other users' kgen opens it too
    return fd


def _open_lock_of_user(path: Path) -> int:
    own = path.with_name(f"{path.stem}-{os.getuid()}{path.suffix}")
    return os.open(own, os.O_RDONLY | os.O_CREAT, 0o600)


def command(exe: str, contract: Contract) -> list[str]:
    """The ncu command line that measures the candidate's kernels inside the worker's profiler
    range (probe._profile: one run of the contract)."""
    names = sorted({launch.kernel for launch in contract.launches})
    return [exe, "--target-processes", "all", "--clock-control", "none",
            "--profile-from-start", "off",
            "--kernel-name", "regex:^(" + "|".join(re.escape(n) for n in names) + ")$",
            "--metrics", ",".join(ncu.METRICS), "--csv", "--page", "raw", "--log-file", "{log}"]


def collect(request: EvalRequest, binary: bytes, *, timeout_s: float = 240.0,
            unsafe: bool = False, env: Mapping[str, str] | None = None) -> Profile:
    """Profile one launch at request.bench_sizes[0]; every problem is a Profile with `error`.
    `env`: added to the worker's environment (wrapped.run)."""
    global _unusable
    started = time.monotonic()
    exe = toolkit.tool("ncu")
    if exe is None:
        return Profile(error=f"Nsight Compute: {toolkit.missing('ncu')}", unavailable=True)
    if _unusable:
        return Profile(error=_unusable, unavailable=True)
    cmd = command(str(exe), request.contract)
    with one_profile_at_a_time():
        waited = time.monotonic() - started
        run = wrapped.run(cmd, request, binary, "profile", timeout_s=timeout_s, unsafe=unsafe,
                          env=env)
    result = read(run, request)
    if result.error and any(m in run.text + run.output for m in _PERMISSION):
        _unusable = result.error
        result = replace(result, unavailable=True)
    # The wait is kept apart: with several workers, a profile's own cost would otherwise grow
    # with how many others stood before it in the queue.
    return replace(result, seconds=round(time.monotonic() - started - waited, 3),
                   waited_s=round(waited, 3))


def read(run: wrapped.Wrapped, request: EvalRequest) -> Profile:
    """The Profile of the longest launch ncu measured, or one that says why there is none."""
    text = run.text + "\n" + run.output
    if run.timed_out:
        return Profile(error=f"ncu did not finish within {run.seconds:.0f} s")
    if "ERR_NVGPUCTRPERM" in text or "does not have permission" in text:
        return Profile(error="no permission to read the GPU performance counters "
                             "(ERR_NVGPUCTRPERM): run as root, or load the driver with "
                             "NVreg_RestrictProfilingToAdminUsers=0")
    rows = ncu.parse_csv(run.text) or ncu.parse_csv(run.output)
    if not rows:
        said = [ln.strip() for ln in text.splitlines()
                if ("==ERROR==" in ln or "==WARNING==" in ln or "Error" in ln)
                and not any(n in ln for n in _NOISE)][:3]
        worker = run.probe.get("error") or ""
        why = "; ".join(said + ([f"worker: {worker}"] if worker else [])) or (
            text.strip().splitlines()[-1][:300] if text.strip() else "no output")
        return Profile(error=f"ncu measured no launch of the candidate: {why[:500]}")
    sizes = request.bench_sizes[0]
    ideal = request.spec.byte_count(sizes, request.dtype)
    summaries = [ncu.summarize(row, sizes, ideal) for row in rows]
    summaries.sort(key=lambda p: -(p.time_us or 0.0))
    main, rest = summaries[0], summaries[1:]
    others = tuple(f"{p.kernel}: {p.time_us or 0:.1f} us, {p.short()}" for p in rest)
    return replace(main, others=others)
