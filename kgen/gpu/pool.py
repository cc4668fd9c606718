"""Warm workers: one sandboxed worker per slot (a GPU, or N per GPU) serving candidate after
candidate, so torch is imported, the GPU checked and its peaks measured once, not per candidate.

A worker (`python -m kgen.sandbox.worker --serve FOLDER`, in bubblewrap like any worker) answers
each job folder FOLDER/job-N (request.json, kernel.cubin) named on its stdin with job-N/result.json.
It is replaced after a crash or a timeout (killed with its process group), when it exits, after
`max_jobs` candidates, or when its log grows too big; its successor on the same GPU gets the peaks
it measured. After a failed candidate the pool runs the canary on that GPU itself.
"""

from __future__ import annotations

import contextlib
import json
import queue
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kgen import process
from kgen.errors import EnvironmentProblem
from kgen.gpu import client
from kgen.gpu.devices import Slot, slots, visible_gpus
from kgen.gpu.sandbox import gpu_sandbox
from kgen.verdict import Evaluation, Verdict
from kgen.wire import PEAKS_FILE, READY_JOB, RESULT_FILE, EvalRequest

MAX_JOBS = 50  # candidates per worker before a fresh one (leaks in cupy/torch stay bounded)
MAX_LOG = 8 * 2**20  # bytes of worker output before a fresh one
POLL_S = 0.005


def serve_command(folder: Path) -> list[str]:
    return [sys.executable, "-m", "kgen.sandbox.worker", "--serve", str(folder)]


def _no_core() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class WarmWorker:
    """One serving worker process in its own folder."""

    def __init__(self, slot: Slot, *, unsafe: bool, command: Sequence[str] | None,
                 peaks: dict[str, Any] | None):
        self.slot = slot
        self.folder = Path(tempfile.mkdtemp(prefix="kgen-warm-"))
        (self.folder / READY_JOB).mkdir()
        if peaks:
            (self.folder / PEAKS_FILE).write_text(json.dumps(peaks))
        env = client.worker_env(self.folder)
        if slot.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = slot.gpu.uuid
        prefix = [] if unsafe else gpu_sandbox(self.folder)
        self.isolation = "none" if unsafe else ("bubblewrap" if prefix else "limits only")
        cmd = [*prefix, *(list(command) if command else serve_command(self.folder))]
        self.log_path = self.folder / "worker.log"
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, cwd=self.folder, env=env, stdin=subprocess.PIPE,
                                     stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True, preexec_fn=_no_core)
        self.jobs = 0
        self.ready: Evaluation | None = None

    def wait_ready(self, timeout_s: float) -> Evaluation:
        """The start-up canary's verdict (torch imported, the GPU checked)."""
        if self.ready is None:
            self.ready = self._await(self.folder / READY_JOB, timeout_s, 0)
        return self.ready

    def submit(self, kind: str, request: EvalRequest | None, binary: bytes | None,
               timeout_s: float) -> Evaluation:
        """One job (`eval` a candidate or run the `canary`) to its verdict or its timeout."""
        self.jobs += 1
        job = self.folder / f"job-{self.jobs:06d}"
        job.mkdir()
        if request is not None and binary is not None:
            request.write(job, binary)
        offset = self.log_path.stat().st_size
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(f"{kind} {job.name}\n".encode())
            self.proc.stdin.flush()
        except OSError:
            pass  # it has exited: _await reads how
        try:
            return self._await(job, timeout_s, offset)
        finally:
            shutil.rmtree(job, ignore_errors=True)

    def _await(self, job: Path, timeout_s: float, offset: int) -> Evaluation:
        start = time.monotonic()
        result = job / RESULT_FILE
        timed_out = False
        while not result.exists():
            if self.proc.poll() is not None:
                time.sleep(0.05)  # a result written just before the exit still counts
                break
            if time.monotonic() - start > timeout_s:
                self.kill(keep_folder=True)
                timed_out = True
                break
            time.sleep(POLL_S)
        done = process.Finished(self.proc.poll(), self._output(offset),
                                time.monotonic() - start, timed_out and not result.exists(),
                                False)
        return client.read_result(job, done)

    def _output(self, offset: int) -> str:
        """What the worker printed since `offset` (the tail: its last words)."""
        with open(self.log_path, "rb") as log:
            log.seek(max(offset, log.seek(0, 2) - client.MAX_OUTPUT))
            return log.read().decode("utf-8", errors="replace")

    def how_it_ended(self) -> str:
        """`status 3: <its last line of output>` for a worker that has exited."""
        with contextlib.suppress(OSError):
            last = self._output(0).strip().splitlines()
            if last:
                return f"status {self.proc.poll()}: {last[-1][:120]}"
        return f"status {self.proc.poll()}"

    @property
    def worn_because(self) -> str:
        """Why to replace it now ("exited", "log too big"), or "" to keep it."""
        if self.proc.poll() is not None:
            return "exited"
        try:
            size = self.log_path.stat().st_size
        except OSError:
            size = 0
        return "log too big" if size > MAX_LOG else ""

    def kill(self, keep_folder: bool = False) -> None:
        """End the worker and everything it started; remove its folder."""
        if self.proc.poll() is None:
            process.kill_group(self.proc)
        for handle in (self.proc.stdin, self._log):
            with contextlib.suppress(OSError):
                if handle is not None:
                    handle.close()
        if not keep_folder:
            shutil.rmtree(self.folder, ignore_errors=True)


@dataclass
class SlotStats:
    label: str
    busy_s: float = 0.0  # time spent judging candidates
    candidates: int = 0
    restarts: int = 0
    why: dict[str, int] = field(default_factory=dict)  # restart reason -> how many times


class WorkerPool:
    """Warm workers over the slots; `run` judges one candidate on the next free worker.

    Thread-safe: several runs (an experiment's cells, a round's candidates) share one pool; each
    slot's worker serves one candidate at a time.
    """

    def __init__(self, slot_list: Sequence[Slot], *, unsafe: bool = False,
                 max_jobs: int = MAX_JOBS, command: Sequence[str] | None = None,
                 start_timeout_s: float = 180.0):
        self.slots = list(slot_list)
        self.unsafe = unsafe
        self.max_jobs = max_jobs
        self.command = command
        self.start_timeout_s = start_timeout_s
        self.stats = [SlotStats(s.label) for s in self.slots]
        self.started = time.monotonic()
        self._workers: list[WarmWorker | None] = [None] * len(self.slots)
        self._idle: queue.SimpleQueue[int] = queue.SimpleQueue()
        for index in range(len(self.slots)):
            self._idle.put(index)
        self._lock = threading.Lock()
        # Held while a slot's worker judges a candidate, and by `holding` for every slot on
        # that slot's GPU: a profile replaying kernels there would skew another's timing.
        self._turns = [threading.Lock() for _ in self.slots]
        self._peaks: dict[str, dict[str, Any]] = {}
        self._closed = False
        # Every worker is started from this one thread, which lives as long as the pool:
        # bubblewrap's --die-with-parent (PR_SET_PDEATHSIG) kills the sandbox when the *thread*
        # that started it ends, and a round's candidates are judged on threads that end with it.
        self._spawner = ThreadPoolExecutor(1, thread_name_prefix="kgen-worker-start")

    @classmethod
    def local(cls, per_gpu: int = 1, **options: Any) -> WorkerPool:
        """per_gpu workers on every visible GPU, each pinned by CUDA_VISIBLE_DEVICES."""
        return cls(slots(visible_gpus(), per_gpu), **options)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, request: EvalRequest, binary: bytes, *, timeout_s: float) -> Evaluation:
        """Judge one candidate on the next free worker (waiting for one if all are busy).

        Once the pool is closed (Ctrl-C, an experiment stopping) a candidate in flight gets no
        verdict: KeyboardInterrupt, so its run closes as interrupted and it is judged again later.
        """
        index = self._idle.get()
        try:
            with self._turns[index]:  # the whole judgement, the canary after a failure too
                result = self._judge(index, request, binary, timeout_s)
        finally:
            self._idle.put(index)
        if self._closed:
            raise KeyboardInterrupt("the GPU worker pool was closed")
        return result

    @contextlib.contextmanager
    def holding(self, result: Evaluation) -> Iterator[dict[str, str]]:
        """While the checks after a verdict run on the GPU of the slot that judged `result`
        (its `worker` label), no slot on that GPU judges another candidate; they get that GPU
        through CUDA_VISIBLE_DEVICES. A result from no slot here holds nothing."""
        label = result.extra.get("worker")
        index = next((k for k, s in enumerate(self.slots) if s.label == label), None)
        if index is None:
            yield {}
            return
        gpu = self.slots[index].gpu
        same = [k for k, s in enumerate(self.slots) if s.gpu == gpu]
        with contextlib.ExitStack() as stack:
            for k in same:  # in index order, as every holder takes them: no deadlock
                stack.enter_context(self._turns[k])
            yield {"CUDA_VISIBLE_DEVICES": gpu.uuid} if gpu is not None else {}

    def warm(self) -> None:
        """Start every slot's worker now, so the first candidates do not wait for torch."""
        for index in range(len(self.slots)):
            self._worker(index)

    def busy(self) -> list[dict[str, Any]]:
        """Per worker slot: busy seconds, candidates judged, restarts (and why) and the busy
        fraction."""
        wall = max(time.monotonic() - self.started, 1e-9)
        with self._lock:
            return [{"worker": s.label, "busy_s": round(s.busy_s, 3), "candidates": s.candidates,
                     "restarts": s.restarts, "restarted_for": dict(s.why),
                     "busy_fraction": round(s.busy_s / wall, 4)}
                    for s in self.stats]

    def close(self) -> None:
        """Kill every worker; no new one starts after this."""
        with self._lock:
            self._closed = True
        for worker in list(self._workers):
            if worker is not None:
                worker.kill()
        self._spawner.shutdown(wait=False)

    def _worker(self, index: int) -> WarmWorker:
        with self._lock:
            if self._closed:
                raise KeyboardInterrupt("the GPU worker pool was closed")
            worker = self._workers[index]
            if worker is None:
                slot = self.slots[index]
                worker = self._spawner.submit(
                    WarmWorker, slot, unsafe=self.unsafe, command=self.command,
                    peaks=self._peaks.get(slot.gpu.uuid if slot.gpu else "")).result()
                self._workers[index] = worker
        return worker

    def _ready(self, index: int) -> WarmWorker:
        """A worker that passed its start-up canary; EnvironmentProblem if none can."""
        if (old := self._workers[index]) is not None and old.proc.poll() is not None:
            # never blame the next candidate; say how it ended, the only trace of why
            self._retire(index, f"exited between candidates ({old.how_it_ended()})")
        worker = self._worker(index)
        ready = worker.wait_ready(self.start_timeout_s)
        if not ready.passed:
            self._retire(index, "start-up canary failed")
            raise EnvironmentProblem(f"the GPU worker on {self.slots[index].label} did not pass "
                                     f"its start-up canary ({ready.verdict}: {ready.message})")
        return worker

    def _judge(self, index: int, request: EvalRequest, binary: bytes,
               timeout_s: float) -> Evaluation:
        worker = self._ready(index)
        started = time.monotonic()
        result = worker.submit("eval", request, binary, timeout_s)
        busy = time.monotonic() - started
        self._keep_peaks(index, result)
        with self._lock:
            self.stats[index].busy_s += busy
            self.stats[index].candidates += 1
        why = (f"{Verdict(result.verdict).value} verdict"
               if result.verdict in (Verdict.CRASH, Verdict.TIMEOUT)
               else worker.worn_because or ("max jobs" if worker.jobs >= self.max_jobs else ""))
        if why:
            self._retire(index, why)
        health = self._health(index) if Verdict(result.verdict).needs_health_check else {}
        note = "UNSAFE: the worker ran without bubblewrap (--unsafe-no-sandbox)" if self.unsafe \
            else ("isolation: limits only (bubblewrap not usable here)"
                  if worker.isolation == "limits only" else "")
        extra = {**result.extra, **health, "isolation": worker.isolation,
                 "wall_s": round(busy, 3), "worker": self.slots[index].label,
                 "warm": worker.jobs > 1}
        return replace(result, note="; ".join(n for n in (result.note, note) if n), extra=extra)

    def _keep_peaks(self, index: int, result: Evaluation) -> None:
        peaks = result.extra.pop("peaks", None)
        slot = self.slots[index]
        if isinstance(peaks, dict):
            with self._lock:
                self._peaks[slot.gpu.uuid if slot.gpu else ""] = peaks

    def _retire(self, index: int, why: str) -> None:
        worker = self._workers[index]
        if worker is not None:
            worker.kill()
            self._workers[index] = None
            with self._lock:
                stats = self.stats[index]
                stats.restarts += 1
                stats.why[why] = stats.why.get(why, 0) + 1
        self._worker(index)  # the successor starts importing torch now

    def _health(self, index: int, tries: int = 2) -> dict[str, str]:
        """After a failed candidate: the canary on the same GPU (a fresh worker's start-up canary,
        or a canary job on the surviving one), tried twice like evaluate.ensure_healthy."""
        last = None
        for attempt in range(tries):
            if attempt:
                self._retire(index, "canary failed after a candidate")
                time.sleep(3.0)
            worker = self._worker(index)
            try:
                last = (worker.wait_ready(self.start_timeout_s) if worker.jobs == 0
                        else worker.submit("canary", None, None, self.start_timeout_s))
            except EnvironmentProblem as exc:
                last = Evaluation("crash", str(exc))
            if last.passed:
                return {"canary": f"GPU healthy after the failure (canary passed on "
                                  f"{last.device or self.slots[index].label})"}
        return {"gpu_unhealthy": "the GPU did not pass the canary kernel after a candidate failed "
                                 f"({last.verdict if last else '?'}: "
                                 f"{last.message if last else ''}); stopping rather than blaming "
                                 "the next candidate"}
