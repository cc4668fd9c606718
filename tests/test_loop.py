"""The loop, with the scripted model, real nvcc and a stand-in GPU evaluator."""

from __future__ import annotations

import json

import pytest
from helpers import fenced, kernel

from kgen.errors import ModelFatal
from kgen.loop.loop import Budget, Checker, run_loop
from kgen.loop.rundir import RunDir
from kgen.loop.session import Run, RunConfig, build_task, load_config, load_history
from kgen.models.base import Reply, Usage
from kgen.models.scripted import ScriptedModel
from kgen.verdict import Evaluation, Timing
from kgen.verdict import overall as overall_of

pytestmark = pytest.mark.nvcc

GOOD = kernel("gemm_naive_f32.cu")
BROKEN = GOOD.replace("acc += A", "acc += AA")


def replies(*items):
    """A ScriptedModel whose text replies report some token usage, as a real endpoint does."""
    return ScriptedModel([Reply(x, "scripted", Usage(100, 50)) if isinstance(x, str) else x
                          for x in items])


def start(tmp_path, script, **config):
    model = replies(*script)
    cfg = RunConfig("generate", "sm_89", op="gemm", dtype="float32", no_gpu=True, **config)
    run = Run.start(cfg, tmp_path / "run", model)
    return model, cfg, run.task, run.checker, run.run_dir


def test_compile_errors_go_back_summarized_then_stops_on_clean_compile(tmp_path):
    model, cfg, task, checker, run_dir = start(tmp_path, ["no code here", fenced(BROKEN),
                                                          fenced(GOOD), fenced(GOOD)])
    trajectory = run_loop(task, model, checker, run_dir, cfg.budget(), [])
    assert [a.status for a in trajectory.attempts] == ["no code", "compile error", "compiled"]
    assert "compiled cleanly" in trajectory.stop_reason
    # The third request carries the summarized error of attempt 2, not the raw nvcc log.
    last_prompt = "\n".join(m["content"] for m in model.requests[2].messages)
    assert 'identifier "AA" is undefined' in last_prompt
    assert "ptxas info" not in last_prompt
    assert "errors detected in the compilation" not in last_prompt
    summary = Run(cfg, model, task, checker, run_dir, []).finish(trajectory)
    assert summary.ok and not summary.validated
    assert (run_dir.path / "best.cu").read_text() == GOOD
    versions = json.loads((run_dir.path / "run.json").read_text())["versions"]
    assert versions["nvcc"].startswith("Build cuda_") and versions["torch"]
    for name in ("run.json", "transcript.jsonl", "results.jsonl", "report.md",
                 "attempts/002/kernel.cu", "attempts/002/compile.json", "attempts/002/nvcc.log"):
        assert (run_dir.path / name).is_file(), name
    assert len((run_dir.path / "transcript.jsonl").read_text().splitlines()) == 3
    assert "not validated" in (run_dir.path / "report.md").read_text()


def test_timings_drive_patience_and_best(tmp_path):
    times = iter([2.0, 1.0, 1.5, 1.2, 1.1, 0.5])

    def evaluator(compiled, contract, task):
        ms = next(times)
        return Evaluation("pass", timings=(Timing({"M": 64, "N": 64, "K": 64}, ms, ms, ms,
                                                 "cuBLAS", 1.0),))

    model, cfg, task, _, run_dir = start(tmp_path, [fenced(GOOD.replace("naive\n", f"v{i}\n"))
                                                   for i in range(6)], rounds=6, patience=3)
    trajectory = run_loop(task, model, Checker(evaluator), run_dir, cfg.budget(), [])
    assert len(trajectory.attempts) == 5  # attempts 3, 4, 5 bring nothing over attempt 2
    assert trajectory.best.number == 2 and "no improvement" in trajectory.stop_reason


def test_resume_continues_numbering_and_keeps_history(tmp_path):
    model, cfg, task, checker, run_dir = start(tmp_path, [fenced(BROKEN)], rounds=1)
    first = run_loop(task, model, checker, run_dir, cfg.budget(), [])
    assert first.stop_reason.startswith("all 1 rounds")
    reopened = RunDir.open(run_dir.path)
    config = load_config(reopened)
    history = load_history(reopened, build_task(config), checker)
    assert [a.status for a in history] == ["compile error"]
    assert history[0].compile.cached  # rebuilt from the cache, not recompiled
    model2 = replies(fenced(GOOD))
    trajectory = run_loop(task, model2, checker, reopened, Budget(rounds=3), history)
    assert [a.number for a in trajectory.attempts] == [1, 2]
    assert trajectory.attempts[1].status == "compiled"
    assert "AA" in "\n".join(m["content"] for m in model2.requests[0].messages)


def test_model_fatal_keeps_run_dir_consistent(tmp_path):
    model, cfg, task, checker, run_dir = start(tmp_path, [fenced(BROKEN),
                                                          ModelFatal("authentication failed")])
    with pytest.raises(ModelFatal):
        run_loop(task, model, checker, run_dir, cfg.budget(), [])
    records = run_dir.finished_records()
    assert len(records) == 1 and records[0]["status"] == "compile error"
    calls = [json.loads(x) for x in (run_dir.path / "transcript.jsonl").read_text().splitlines()]
    assert "authentication failed" in calls[-1]["error"]


def test_give_up_stops_the_run(tmp_path):
    model, cfg, task, checker, run_dir = start(tmp_path,
                                               [Reply("", "scripted", give_up="beyond me")])
    trajectory = run_loop(task, model, checker, run_dir, cfg.budget(), [])
    assert trajectory.attempts == []
    # "ended the search", not "gave up": the builtin author also ends it at the roofline.
    assert trajectory.stop_reason == "the model ended the search: beyond me"


def test_api_key_never_reaches_the_run_dir(tmp_path, monkeypatch):
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    model, cfg, task, checker, run_dir = start(tmp_path, [fenced(GOOD) + f"\nkey {secret}"])
    trajectory = run_loop(task, model, checker, run_dir, cfg.budget(), [])
    Run(cfg, model, task, checker, run_dir, []).finish(trajectory)
    for path in run_dir.path.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path


def test_out_dir_that_is_not_empty_is_refused(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "x").write_text("keep me")
    with pytest.raises(Exception, match="not empty"):
        start(tmp_path, [])


def test_write_atomic_keeps_the_files_mode(tmp_path):
    import os
    import stat

    from kgen.loop.rundir import write_atomic

    target = tmp_path / "tool.cu"
    target.write_text("old")
    target.chmod(0o755)
    write_atomic(target, "new")
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o755 and target.read_text() == "new"
    fresh = tmp_path / "fresh.txt"
    write_atomic(fresh, "x")
    assert stat.S_IMODE(os.stat(fresh).st_mode) & 0o044  # readable by others, unlike mkstemp's 0600


def test_a_candidate_that_breaks_the_gpu_is_saved_before_the_run_stops(tmp_path):
    from kgen.errors import EnvironmentProblem

    def evaluator(compiled, contract, task):
        return Evaluation("crash", "illegal address", extra={"gpu_unhealthy": "canary failed"})

    model, cfg, task, _, run_dir = start(tmp_path, [fenced(GOOD)])
    with pytest.raises(EnvironmentProblem, match="canary failed"):
        run_loop(task, model, Checker(evaluator), run_dir, cfg.budget(), [])
    records = run_dir.finished_records()
    assert [r["status"] for r in records] == ["crash"]
    assert (run_dir.attempt_dir(1) / "kernel.cu").read_text() == GOOD


def test_an_improvement_within_the_noise_neither_becomes_best_nor_resets_patience(tmp_path):
    # (median, p20, p80): attempt 2 is 1.6% faster but its spread overlaps attempt 1's.
    times = iter([(1.00, 0.97, 1.03), (0.984, 0.96, 1.01), (1.02, 0.99, 1.05),
                  (1.01, 0.98, 1.04), (0.50, 0.49, 0.51)])

    def evaluator(compiled, contract, task):
        ms, p20, p80 = next(times)
        return Evaluation("pass", timings=(Timing({"M": 64, "N": 64, "K": 64}, ms, p20, p80),))

    model, cfg, task, _, run_dir = start(tmp_path, [fenced(GOOD.replace("naive\n", f"v{i}\n"))
                                                   for i in range(5)], rounds=5, patience=3)
    trajectory = run_loop(task, model, Checker(evaluator), run_dir, cfg.budget(), [])
    assert trajectory.best.number == 1  # the noisy 1.6% "gain" of attempt 2 does not count
    assert len(trajectory.attempts) == 4 and "no improvement" in trajectory.stop_reason


def test_a_clear_improvement_beyond_the_spread_becomes_best():
    fast = Timing({"M": 1}, 0.90, 0.89, 0.91)
    slow = Timing({"M": 1}, 1.00, 0.98, 1.02)
    assert fast.beats(slow) and not slow.beats(fast)
    assert not Timing({"M": 1}, 0.95, 0.90, 0.99).beats(slow)  # spreads overlap


def test_a_candidate_is_judged_over_every_bench_size_not_the_first_alone(tmp_path):
    """Attempt 1 is faster at the first size, attempt 2 far faster at the other two: by the
    geometric mean over the three, attempt 2 is best, and the report and summary say so."""
    sizes = ({"M": 4096, "N": 4096}, {"M": 8192, "N": 8192}, {"M": 3000, "N": 5000})

    def timed(ms: tuple[float, ...]) -> Evaluation:
        return Evaluation("pass", timings=tuple(
            Timing(s, t, t * 0.99, t * 1.01, "torch", 2 * t if i else t) for i, (s, t) in
            enumerate(zip(sizes, ms, strict=True))))

    results = iter([timed((1.0, 4.0, 2.0)), timed((1.05, 3.0, 1.5))])
    model, cfg, task, _, run_dir = start(tmp_path, [fenced(GOOD), fenced(GOOD + "\n")],
                                         rounds=2)
    trajectory = run_loop(task, model, Checker(lambda c, k, t: next(results)), run_dir,
                          cfg.budget(), [])
    first, second = trajectory.attempts
    assert first.best_ms == pytest.approx((1.0 * 4.0 * 2.0) ** (1 / 3))
    assert second.best_ms == pytest.approx((1.05 * 3.0 * 1.5) ** (1 / 3))
    assert trajectory.best.number == 2
    overall = second.timing
    assert overall.geomean_of == 3 and overall.size_label == "geometric mean of 3 bench sizes"
    # speedup of the geometric means = geometric mean of the per-size speedups (1, 2, 2)
    assert overall.speedup == pytest.approx((1.05 / 1.05 * 2 * 2) ** (1 / 3))
    summary = Run(cfg, model, task, Checker(), run_dir, []).finish(trajectory)
    assert summary.best_ms == pytest.approx(second.best_ms)
    assert "(geometric mean of 3 bench sizes)" in (run_dir.path / "report.md").read_text()
    one = Timing({"M": 1}, 1.0, 0.9, 1.1)
    assert overall_of((one,)) is one and overall_of(()) is None
def test_profile_and_sanitizer_records_reach_the_model_the_report_and_the_run_directory(
        tmp_path):
    from kgen.findings import Finding, Profile, SanitizerReport

    prof = Profile(kernel="gemm_naive_f32", sizes={"M": 64, "N": 64, "K": 64}, time_us=12.0,
                   bottleneck="memory_onchip", evidence=("memory 91% of peak (L1/shared 91%)",),
                   sol_compute=30.0, sol_memory=91.0)
    wrong = SanitizerReport(sizes={"M": 1, "N": 1, "K": 1}, tools=("memcheck",), findings=(
        Finding("memcheck", "out-of-bounds __global__ write of 4 bytes", 15, "kernel.cu",
                "gemm_naive_f32", "(0,0,0)", "(0,0,0)", "C[1], 1 element past the end of C "
                "(which has 1)"),))
    results = iter([Evaluation("wrong", "M=1 N=1 K=1: 1 of 1 outputs of C off",
                               sanitizer=wrong),
                    Evaluation("pass", timings=(Timing({"M": 64, "N": 64, "K": 64}, 1.0, 1.0,
                                                       1.0, "cuBLAS", 1.0),), profile=prof)])
    model, cfg, task, _, run_dir = start(tmp_path, [fenced(GOOD), fenced(GOOD + "\n"),
                                                   fenced(GOOD + "\n\n")], rounds=2)
    trajectory = run_loop(task, model, Checker(lambda c, k, t: next(results)), run_dir,
                          cfg.budget(), [])
    assert [a.status for a in trajectory.attempts] == ["wrong", "pass"]
    fix_prompt = "\n".join(m["content"] for m in model.requests[1].messages)
    assert "sanitizer  memcheck: out-of-bounds __global__ write of 4 bytes at line 15" in fix_prompt
    assert "C[1], 1 element past the end of C" in fix_prompt
    assert "memcheck: out-of-bounds __global__ write of 4 bytes, line 15 |" in fix_prompt
    attempts = run_dir.path / "attempts"
    assert json.loads((attempts / "001" / "sanitizer.json").read_text())["tools"] == ["memcheck"]
    assert json.loads((attempts / "002" / "profile.json").read_text())["bottleneck"] == \
        "memory_onchip"
    assert "profile  gemm_naive_f32 at 64x64x64" in (attempts / "002" / "feedback.txt").read_text()
    Run(cfg, model, task, Checker(), run_dir, []).finish(trajectory)
    report = (run_dir.path / "report.md").read_text()
    assert "| profile / sanitizer |" in report
    assert "| memory_onchip (memory 91% of peak (L1/shared 91%)) |" in report
    resumed = load_history(run_dir, task, Checker())
    assert resumed[1].evaluation.profile == prof and resumed[0].evaluation.sanitizer == wrong
