"""Running an experiment's pending cells on this machine: `jobs` cells at once (threads), all
judging their candidates on one shared pool of warm GPU workers, so while one cell waits for its
model or nvcc another keeps each GPU busy. Model calls are gated per model entry.

Ctrl-C (or a fatal endpoint, or a GPU that fails its canary) stops the experiment: no new cell
starts, the pool is closed so in-flight candidates end without a verdict, and every running cell
closes its run directory as interrupted; running again continues.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from kgen.errors import KgenError
from kgen.experiment.cells import Listed
from kgen.experiment.grid import Grid
from kgen.experiment.runner import ExperimentDir, labels, run_cell
from kgen.gpu.pool import WorkerPool
from kgen.loop.attempt import Attempt
from kgen.loop.loop import Trajectory

# ("skipped" (finished before) | "start" | "attempt" | "done", the cell, the detail)
Event = Callable[[str, Listed, Any], None]


@dataclass
class Local:
    """The local scheduler's settings and state."""

    jobs: int
    pool: WorkerPool | None
    on_event: Event = lambda kind, cell, detail: None
    stop: threading.Event = field(default_factory=threading.Event)
    failure: BaseException | None = None

    def run(self, exp: ExperimentDir, grid: Grid, cells: list[Listed]) -> dict[str, Any]:
        """Run `cells` (the pending ones); the session record (workers' busy time)."""
        started = time.monotonic()
        gates = {m.name: threading.Semaphore(m.concurrency) for m in grid.models}
        executor = ThreadPoolExecutor(max_workers=max(1, self.jobs),
                                      thread_name_prefix="kgen-cell")
        todo = list(cells)
        running: dict[Future, Listed] = {}
        try:
            while todo or running:
                while todo and len(running) < self.jobs and not self.stop.is_set():
                    listed = todo.pop(0)
                    self.on_event("start", listed, None)
                    running[executor.submit(self._one, exp, grid, listed,
                                            gates[listed.cell.model.name])] = listed
                if not running:
                    break
                done, _ = wait(running, timeout=0.5, return_when=FIRST_COMPLETED)
                for future in done:
                    self._finish(exp, running.pop(future), future)
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP as Signalled
            self._halt(exc)
            for future, listed in running.items():
                future.exception()  # each closes its run directory at its next step
                self._finish(exp, listed, future)
        finally:
            executor.shutdown(wait=True, cancel_futures=True)
        return {"started": dt.datetime.now(dt.UTC).isoformat(), "jobs": self.jobs,
                "cells_run": len(cells) - len(todo), "wall_s": round(time.monotonic() - started,
                                                                       3),
                "workers": self.pool.busy() if self.pool is not None else []}

    def _one(self, exp: ExperimentDir, grid: Grid, listed: Listed,
             gate: threading.Semaphore) -> dict[str, Any]:
        return run_cell(listed, exp.cell_dir(listed.id), grid, workers=self.pool, gate=gate,
                        on_attempt=self._attempt)

    def _attempt(self, listed: Listed, attempt: Attempt, trajectory: Trajectory) -> None:
        self.on_event("attempt", listed, (attempt, trajectory))
        if self.stop.is_set():
            raise KeyboardInterrupt  # the run closes itself as interrupted, resumable

    def _finish(self, exp: ExperimentDir, listed: Listed, future: Future) -> None:
        error = future.exception()
        if error is None:
            record = future.result()
        else:
            record = {"id": listed.id, **labels(listed), "status": "stopped",
                      "message": str(error) or type(error).__name__}
            if isinstance(error, KgenError):
                self._halt(error)
            elif not isinstance(error, KeyboardInterrupt):
                self._halt(error)
        exp.record(record)
        self.on_event("done", listed, record)

    def _halt(self, error: BaseException) -> None:
        """Stop everything: no new cells; in-flight candidates end; the first cause is kept."""
        if self.failure is None:
            self.failure = error
        self.stop.set()
        if self.pool is not None:
            self.pool.close()
