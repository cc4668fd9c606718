"""The worker's timing helpers that need no GPU: the Stopwatch that says where a check's time
goes (the Evaluation's `phases_s`)."""

from __future__ import annotations

from kgen.sandbox import timing


def test_the_stopwatch_gives_each_phase_the_time_since_the_last_lap(monkeypatch):
    clock = iter([10.0, 10.5, 12.0, 12.25, 13.0])
    monkeypatch.setattr(timing.time, "monotonic", lambda: next(clock))
    watch = timing.Stopwatch()  # 10.0
    watch.lap("validate")  # 10.5
    watch.lap("bench timed")  # 12.0
    watch.lap("validate")  # 12.25: a second lap of a phase adds to it
    watch.lap("bench checks")  # 13.0
    assert watch.rounded() == {"validate": 0.75, "bench timed": 1.5, "bench checks": 0.75}
