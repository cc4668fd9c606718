"""Where a check's time goes, without a GPU: the Stopwatch, and the worker's evaluate (its GPU
parts stood in) handing its phases to the Evaluation's `phases_s`."""

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


def test_a_passing_check_says_where_its_time_went(monkeypatch, tmp_path):
    """The worker's evaluate with the GPU parts stood in: the phases reach the Evaluation, each
    bench size's laps added up, and the watch reaches every size's measurement."""
    from kgen.contract import Contract, Launch
    from kgen.ops import load_op
    from kgen.sandbox import launch, validate, worker
    from kgen.verdict import Timing
    from kgen.wire import EvalRequest

    spec = load_op("gemm")
    contract = Contract("gemm", "float32", (Launch("k", ("1",), ("1",), "0", ("A",), 1),))
    sizes = ({"M": 64, "N": 64, "K": 64}, {"M": 96, "N": 64, "K": 32})
    EvalRequest(spec, contract, "float32", spec.test_sizes[:1], sizes, 7).write(tmp_path, b"cubin")
    monkeypatch.setattr(worker, "_setup_torch", lambda: None)
    monkeypatch.setattr(worker, "device_info", lambda: {"name": "Fake", "cc": 90, "sms": 132,
                                                        "clock_hz": 1.5e9})
    monkeypatch.setattr(worker, "_measured", lambda what, dtype: 1.0)
    monkeypatch.setattr(launch, "load_module", lambda path, contract: {})
    monkeypatch.setattr(launch, "Runner", lambda *args: "runner")
    monkeypatch.setattr(launch, "device_limits", lambda: {})
    monkeypatch.setattr(validate, "validate", lambda *args, **kw: 3)
    watches = []

    def measure(runner, spec, dtype, sizes, seed, budget_s, timeout_s, peaks, compile_baseline,
                watch):
        watches.append(watch)
        watch.lap("bench timed")
        return Timing(dict(sizes), 1.0, 0.9, 1.1), ""
    monkeypatch.setattr(timing, "measure", measure)
    result = worker.evaluate(tmp_path)
    assert result.verdict == "pass", result.message
    assert list(result.extra["phases_s"]) == ["load", "validate", "peaks", "bench timed"]
    assert len(watches) == 2 and watches[0] is watches[1]
