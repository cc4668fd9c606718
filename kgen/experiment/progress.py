"""An experiment's progress as values: cells done of all, the ETA, tokens spent, the best so far
per op. The CLI prints it; it is fed from the scheduler's threads, so it holds a lock."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from kgen.experiment.cells import Listed
from kgen.loop.attempt import Attempt
from kgen.loop.loop import Trajectory


@dataclass
class Best:
    ms: float
    speedup: float | None
    cell: str


@dataclass
class Tally:
    total: int  # cells of the grid
    done: int = 0  # finished before this session and during it
    failed: int = 0  # this session: error or stopped
    started: float = field(default_factory=time.monotonic)
    finished_now: int = 0
    tokens: dict[str, int] = field(default_factory=dict)  # cell id -> tokens this session
    best: dict[str, Best] = field(default_factory=dict)  # op label -> fastest passing
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def attempt(self, listed: Listed, attempt: Attempt, trajectory: Trajectory) -> None:
        with self._lock:
            self.tokens[listed.id] = trajectory.tokens
            ms = attempt.best_ms
            if ms is None or attempt.evaluation is None:
                return
            op = listed.cell.op.label
            if op not in self.best or ms < self.best[op].ms:
                speedup = attempt.timing.speedup if attempt.timing else None
                self.best[op] = Best(ms, speedup, listed.id)

    def cell_done(self, status: str, earlier: bool = False) -> None:
        """A cell ended (`earlier`: it had finished before this session, and is skipped)."""
        with self._lock:
            if earlier:
                self.done += 1
            elif status == "finished":
                self.done += 1
                self.finished_now += 1
            else:
                self.failed += 1

    @property
    def spent_tokens(self) -> int:
        return sum(self.tokens.values())

    def eta_s(self) -> float | None:
        """Seconds left at this session's pace (None until a cell has finished)."""
        if not self.finished_now:
            return None
        pace = (time.monotonic() - self.started) / self.finished_now
        return pace * max(0, self.total - self.done - self.failed)

    def line(self) -> str:
        """`cells 12/40 (1 failed), ETA 6m10s, 48,210 tokens; best: gemm 1.92 ms (0.41x) ...`"""
        eta = self.eta_s()
        parts = [f"cells {self.done}/{self.total}" + (f" ({self.failed} failed)"
                                                       if self.failed else ""),
                 f"ETA {_duration(eta)}" if eta is not None else "ETA -",
                 f"{self.spent_tokens:,} tokens"]
        with self._lock:
            best = [f"{op} {b.ms:.3f} ms" + (f" ({b.speedup:.2f}x)" if b.speedup else "")
                    for op, b in sorted(self.best.items())]
        return ", ".join(parts) + ("; best: " + ", ".join(best) if best else "")


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"
