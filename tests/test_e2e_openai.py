"""`kgen generate` and `kgen fix` end to end through a real chat-completions server on a socket."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chat_server import ChatServer, auth_error, completion, http_error
from click.testing import CliRunner
from helpers import kernel

from kgen.cli import main

pytestmark = pytest.mark.nvcc
pytest.importorskip("openai")  # a GPU machine without registries may lack it (README)

KEY = "sk-e2e-9f8e7d6c5b4a39281706"
GOOD = kernel("gemm_naive_restrict_f32.cu")
BROKEN = GOOD.replace("acc += A[row * K + k]", "acc += A[row * K + kk]")


def _reply(source: str, prose: str = "One thread per output element.") -> str:
    return f"{prose}\n\n```cuda\n{source}```\n"


@pytest.fixture
def server():
    with ChatServer() as s:
        yield s


def _kgen(server: ChatServer, *args: str, gpu: bool = False):
    env = {"KGEN_API_KEY": KEY, "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None,
           "KGEN_BASE_URL": None, "KGEN_MODEL": None}
    flags = [] if gpu else ["--no-gpu"]
    return CliRunner().invoke(main, [*args, "--model", "test-model", "--base-url",
                                     server.base_url, *flags], env=env)


def _generate(server: ChatServer, out: Path, *extra: str):
    return _kgen(server, "generate", "--op", "gemm", "--arch", "sm_89", "--out", str(out),
                 "--json", *extra)


def _summary(result) -> dict:
    return json.loads(result.stdout.strip().splitlines()[-1])


def _files_text(folder: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())


def test_500_then_success(server, tmp_path):
    server.push(http_error(500), completion(_reply(GOOD)))
    result = _generate(server, tmp_path / "run")
    assert result.exit_code == 0, result.output
    summary = _summary(result)
    assert summary["ok"] and summary["attempts"] == 1 and summary["validated"] is False
    best = Path(summary["best"]).read_text()
    assert best.startswith("// kgen: op=gemm dtype=float32") and "gemm_f32" in best
    assert len(server.completions) == 2  # the 500 was retried by the client
    transcript = (tmp_path / "run" / "transcript.jsonl").read_text().splitlines()
    assert json.loads(transcript[0])["usage"] == {"prompt_tokens": 120, "completion_tokens": 40}


def test_reply_without_code_is_told_and_asked_again(server, tmp_path):
    server.push(completion("I would tile it with 128x128 blocks and use mma.sync."),
                completion(_reply(GOOD)))
    result = _generate(server, tmp_path / "run")
    assert result.exit_code == 0, result.output
    assert _summary(result)["attempts"] == 2
    second = server.completions[1].text("user")
    assert "No kernel found in your reply" in second
    assert "| 1 | - | no code |" in second


def test_broken_reply_then_good_sends_the_summary_not_the_raw_log(server, tmp_path):
    server.push(completion(_reply(BROKEN)), completion(_reply(GOOD)))
    result = _generate(server, tmp_path / "run")
    assert result.exit_code == 0, result.output
    assert _summary(result)["attempts"] == 2
    second = server.completions[1].text("user")
    assert 'identifier "kk" is undefined' in second
    assert "acc += A[row * K + kk]" in second  # the offending line, in context
    raw_log = (tmp_path / "run" / "attempts" / "001" / "nvcc.log").read_text()
    assert 'kernel.cu(9): error: identifier "kk" is undefined' in raw_log
    assert "kernel.cu(" not in second and "ptxas" not in second  # never the raw log
    first = server.completions[0].text("user")
    assert "No kernel found" not in first and "## History" not in first


def test_every_reply_fails_to_compile_exits_1(server, tmp_path):
    server.push(*[completion(_reply(BROKEN))] * 2)
    result = _generate(server, tmp_path / "run", "--rounds", "2")
    assert result.exit_code == 1, result.output
    summary = _summary(result)
    assert not summary["ok"] and summary["attempts"] == 2 and summary["best"] is None


def test_401_is_one_line_exit_4_and_no_key_anywhere(server, tmp_path):
    server.push(auth_error(f"Incorrect API key provided: {KEY}."))
    result = _generate(server, tmp_path / "run")
    assert result.exit_code == 4, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("kgen: error:")]
    assert len(errors) == 1 and "authentication failed" in errors[0]
    assert "Traceback" not in result.output
    assert KEY not in result.output and KEY not in _files_text(tmp_path / "run")
    assert len(server.completions) == 1


def test_think_text_is_dropped_and_never_sent_back(server, tmp_path):
    thinking = ("<think>SECRET-REASONING: maybe\n```cuda\n__global__ void decoy() {}\n```\n"
                "</think>")
    server.push(completion(thinking + _reply(BROKEN), reasoning_content="SECRET-FIELD"),
                completion(_reply(GOOD)))
    result = _generate(server, tmp_path / "run")
    assert result.exit_code == 0, result.output
    kernel = (tmp_path / "run" / "attempts" / "001" / "kernel.cu").read_text()
    assert "decoy" not in kernel and "gemm_f32" in kernel
    sent = json.dumps(server.completions[1].body)
    assert "SECRET" not in sent
    assert "SECRET" not in _files_text(tmp_path / "run")


def test_fix_through_the_endpoint(server, tmp_path):
    broken = tmp_path / "gemm.cu"
    broken.write_text(BROKEN)
    server.push(completion(_reply(GOOD, "Renamed kk to k on line 9.")))
    result = _kgen(server, "fix", str(broken), "--arch", "sm_89", "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    assert broken.read_text() == BROKEN  # the input is never overwritten without --in-place
    assert (tmp_path / "gemm.fixed.cu").read_text() == GOOD
    request = server.completions[0].text("user")
    assert "9 |     for (int k = 0; k < K; ++k) acc += A[row * K + kk]" in request
    assert 'identifier "kk" is undefined' in request


def test_fix_with_401_exits_4(server, tmp_path):
    broken = tmp_path / "gemm.cu"
    broken.write_text(BROKEN)
    server.push(auth_error())
    result = _kgen(server, "fix", str(broken), "--arch", "sm_89", "--out", str(tmp_path / "run"))
    assert result.exit_code == 4, result.output
    assert not (tmp_path / "gemm.fixed.cu").exists()


SMALL_GEMM = """\
name: gemm
description: C = A @ B, row-major, float32 accumulation (small sizes, so the GPU test is quick).
sizes: [M, N, K]
tensors:
  A: {shape: [M, K], role: input}
  B: {shape: [K, N], role: input}
  C: {shape: [M, N], role: output}
dtypes:
  float32: {reference: float64, atol: 1.0e-3, rtol: 1.0e-3}
reference: A @ B
test_sizes: [{M: 1, N: 1, K: 1}, {M: 127, N: 129, K: 65}]
bench_sizes: [{M: 1024, N: 1024, K: 1024}]
flops: 2 * M * N * K
bytes: (M * K + K * N + M * N) * ELEM
"""


@pytest.mark.gpu
def test_gpu_correctness_and_time_are_fed_back(server, tmp_path):
    from kgen.arch import local_gpu

    spec = tmp_path / "gemm" / "spec.yaml"
    spec.parent.mkdir()
    spec.write_text(SMALL_GEMM)
    server.push(completion(_reply(GOOD)), completion(_reply(GOOD.replace("16x16", "again"))))
    result = _kgen(server, "generate", "--op-file", str(spec), "--arch", local_gpu()[1].name,
                   "--out", str(tmp_path / "run"), "--rounds", "2", "--json", gpu=True)
    assert result.exit_code == 0, result.output
    assert _summary(result)["validated"] is True
    second = server.completions[1].text("user")
    assert "| 1 (best) |" in second and "| pass |" in second
    assert "time   1024x1024x1024:" in second and "ms" in second


def test_gpu_verdicts_and_times_reach_the_next_request(server, tmp_path):
    """The loop with a stand-in evaluator: what a GPU would report goes back over the socket."""
    from kgen.arch import parse_arch
    from kgen.loop.loop import Budget, Checker, run_loop
    from kgen.loop.rundir import RunDir
    from kgen.loop.task import Task
    from kgen.models.openai_backend import OpenAIModel
    from kgen.ops import load_op
    from kgen.verdict import Evaluation, Timing

    verdicts = iter([
        Evaluation("wrong", "412 of 16383 outputs off (max abs 3.1, rows 96-126 only)"),
        Evaluation("pass", "all 6 sizes x 3 input sets correct", (Timing(
            {"M": 4096, "N": 4096, "K": 4096}, 19.6, 19.5, 19.8, "cuBLAS", 2.8, 7.0),)),
        Evaluation("crash", "CUDA_ERROR_ILLEGAL_ADDRESS"),
    ])
    checker = Checker(evaluator=lambda compiled, contract, task: next(verdicts))
    server.push(completion(_reply(GOOD)), completion(_reply(GOOD.replace("16x16", "fixed"))),
                completion(_reply(GOOD.replace("16x16", "faster"))))
    task = Task("generate", parse_arch("sm_89"), load_op("gemm"), "float32")
    model = OpenAIModel("test-model", server.base_url, KEY, env={}, max_retries=0)
    run_dir = RunDir.create(tmp_path / "run", {"test": True})
    outcome = run_loop(task, model, checker, run_dir, Budget(rounds=3), [])
    assert [a.status for a in outcome.attempts] == ["wrong", "pass", "crash"]
    second, third = (r.text("user") for r in server.completions[1:])
    assert "wrong  412 of 16383 outputs off (max abs 3.1, rows 96-126 only)" in second
    assert "Attempt 1 ended with status `wrong`" in second
    assert "| 2 (best) | one thread per output, fixed blocks | pass |" in third
    assert "19.600 ms, 7.0 TFLOP/s, 0.14x of cuBLAS" in third  # the history table
    assert "time   4096x4096x4096: 19.600 ms" in third  # the best attempt's records
    assert "## Best so far: attempt 2" in third
    assert server.pending == 0
