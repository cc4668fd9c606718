"""The loop, run directories and resume, with a scripted model, real nvcc and a stand-in GPU."""

from __future__ import annotations

import json

import pytest

from kgen import jobs
from kgen.errors import ModelFatal
from kgen.loop import Budget, Checker, run_loop
from kgen.models.base import Reply, Usage
from kgen.runs import RunDir
from sandbox.verdict import RunResult, Timing

pytestmark = pytest.mark.nvcc

GOOD = """// kgen: op=gemm dtype=float32
// kgen: choices naive
// kgen: launch gemm_naive grid=(cdiv(N,16), cdiv(M,16)) block=(16,16) args=(A, B, C, M, N, K)
extern "C" __global__ void gemm_naive(const float* A, const float* B, float* C,
                                      int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
"""
BROKEN = GOOD.replace("acc += A", "acc += AA")


class FakeModel:
    """Scripted replies; records every request it was given."""

    name = "fake"
    is_language_model = True

    def __init__(self, replies):
        self.replies = list(replies)
        self.requests = []

    def describe(self) -> str:
        return "fake: scripted replies for tests"

    def complete(self, request):
        self.requests.append(request)
        item = self.replies.pop(0)
        if isinstance(item, Exception):
            raise item
        if isinstance(item, Reply):
            return item
        return Reply(item, "fake", Usage(100, 50), 0.01)


def fenced(code: str) -> str:
    return f"Here is the kernel.\n\n```cuda\n{code}```\n"


def start(tmp_path, replies, **config):
    model = FakeModel(replies)
    cfg = jobs.JobConfig("generate", "sm_89", op="gemm", dtype="float32", no_gpu=True, **config)
    task, checker, run_dir = jobs.start(cfg, tmp_path / "run", model)
    return model, cfg, task, checker, run_dir


def test_compile_errors_go_back_summarized_then_stops_on_clean_compile(tmp_path):
    model, cfg, task, checker, run_dir = start(tmp_path, ["no code here", fenced(BROKEN),
                                                          fenced(GOOD), fenced(GOOD)])
    outcome = run_loop(task, model, checker, run_dir, cfg.budget(), [])
    assert [a.status for a in outcome.attempts] == ["no code", "compile error", "compiled"]
    assert "compiled cleanly" in outcome.stop_reason
    # The third request carries the summarized error of attempt 2, not the raw nvcc log.
    last_prompt = "\n".join(m["content"] for m in model.requests[2].messages)
    assert 'identifier "AA" is undefined' in last_prompt
    assert "ptxas info" not in last_prompt
    assert "errors detected in the compilation" not in last_prompt
    summary = jobs.finish(task, checker, run_dir, outcome, model)
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
        return RunResult("pass", timings=(Timing({"M": 64, "N": 64, "K": 64}, ms, ms, ms,
                                                 "cuBLAS", 1.0),))

    model, cfg, task, _, run_dir = start(tmp_path, [fenced(GOOD.replace("naive\n", f"v{i}\n"))
                                                   for i in range(6)], rounds=6, patience=3)
    outcome = run_loop(task, model, Checker(evaluator), run_dir, cfg.budget(), [])
    assert len(outcome.attempts) == 5  # attempts 3, 4, 5 bring nothing over attempt 2
    assert outcome.best.number == 2 and "no improvement" in outcome.stop_reason


def test_resume_continues_numbering_and_keeps_history(tmp_path):
    model, cfg, task, checker, run_dir = start(tmp_path, [fenced(BROKEN)], rounds=1)
    first = run_loop(task, model, checker, run_dir, cfg.budget(), [])
    assert first.stop_reason.startswith("all 1 rounds")
    reopened = RunDir.open(run_dir.path)
    config = jobs.load_config(reopened)
    history = jobs.load_history(reopened, jobs.build_task(config), checker)
    assert [a.status for a in history] == ["compile error"]
    assert history[0].compile.cached  # rebuilt from the cache, not recompiled
    model2 = FakeModel([fenced(GOOD)])
    outcome = run_loop(task, model2, checker, reopened, Budget(rounds=3), history)
    assert [a.number for a in outcome.attempts] == [1, 2]
    assert outcome.attempts[1].status == "compiled"
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
    model, cfg, task, checker, run_dir = start(tmp_path, [Reply("", "fake", give_up="beyond me")])
    outcome = run_loop(task, model, checker, run_dir, cfg.budget(), [])
    assert outcome.attempts == [] and "beyond me" in outcome.stop_reason


def test_api_key_never_reaches_the_run_dir(tmp_path, monkeypatch):
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    model, cfg, task, checker, run_dir = start(tmp_path, [fenced(GOOD) + f"\nkey {secret}"])
    outcome = run_loop(task, model, checker, run_dir, cfg.budget(), [])
    jobs.finish(task, checker, run_dir, outcome, model)
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

    from kgen.runs import write_atomic

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
        return RunResult("crash", "illegal address", extra={"gpu_unhealthy": "canary failed"})

    model, cfg, task, _, run_dir = start(tmp_path, [fenced(GOOD)])
    with pytest.raises(EnvironmentProblem, match="canary failed"):
        run_loop(task, model, Checker(evaluator), run_dir, cfg.budget(), [])
    records = run_dir.finished_records()
    assert [r["status"] for r in records] == ["crash"]
    assert (run_dir.attempt_dir(1) / "kernel.cu").read_text() == GOOD
