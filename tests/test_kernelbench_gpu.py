"""On a GPU: `kgen generate --kernelbench` with a chat-completions model that replies with a
correct kernel validates it against the problem's Model and writes model_new.py; a
KernelBench-style harness (exec the sources, seed, build Model and ModelNew, compare on fresh
inputs with KernelBench's float32 tolerance) finds ModelNew equal to Model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from chat_server import ChatServer, completion
from click.testing import CliRunner
from helpers import fenced, local_hopper

from kgen.arch import local_gpu
from kgen.cli import main
from kgen.compile import compile_source
from kgen.loop.candidate import parse_contract
from kgen.loop.modelnew import render
from kgen.ops.kernelbench import load_problem

pytestmark = pytest.mark.gpu

DATA = Path(__file__).parent / "data" / "kernelbench"
KERNELS = DATA / "kernels"
TOLERANCE = 1e-4  # KernelBench's float32 tolerance (atol = rtol)
# The builtin author's runs skip the final torch.compile timing and the profiles: the endpoint
# test and test_kgen_bench_kernelbench_times_eager_and_compile keep torch.compile covered, and
# test_feedback_gpu the profiles; each compile of a Model cost tens of seconds per problem.
QUICK = ("--no-compile-baseline", "--no-profile")


def kernelbench_harness(problem: str, model_new: str, trials: int = 3, seed: int = 42,
                        tolerance: float = TOLERANCE) -> None:
    """What KernelBench's evaluator does: exec both sources, seed, build Model and ModelNew the
    same way, compare outputs on fresh inputs with torch.allclose."""
    reference: dict = {}
    exec(compile(problem, "<problem>", "exec"), reference)
    custom: dict = {}
    exec(compile(model_new, "<model_new>", "exec"), custom)
    torch.manual_seed(seed)
    init = reference["get_init_inputs"]()
    with torch.no_grad():
        torch.manual_seed(seed)
        model = reference["Model"](*init).cuda()
        torch.manual_seed(seed)
        new = custom["ModelNew"](*init).cuda()
        for trial in range(trials):
            torch.manual_seed(seed + 1 + trial)
            inputs = [x.cuda() for x in reference["get_inputs"]()]
            want, got = model(*inputs), new(*inputs)
            torch.cuda.synchronize()
            want = want if isinstance(want, tuple) else (want,)
            got = got if isinstance(got, tuple) else (got,)
            assert len(want) == len(got)
            for w, g in zip(want, got, strict=True):
                assert w.shape == g.shape and w.dtype == g.dtype
                assert torch.allclose(w, g, atol=tolerance, rtol=tolerance), \
                    f"trial {trial}: max diff {float((w - g).abs().max())}"


def _arch() -> str:
    found = local_gpu()
    assert found is not None
    return found[1].name


def test_generate_kernelbench_through_the_endpoint_then_the_harness(tmp_path):
    pytest.importorskip("openai")  # a GPU machine without registries may lack it (README)
    problem = DATA / "l2_gemm_bias_gelu.py"
    with ChatServer() as server:
        server.push(completion(fenced((KERNELS / "l2_gemm_bias_gelu.cu").read_text())))
        result = CliRunner().invoke(main, [
            "generate", "--kernelbench", str(problem), "--arch", _arch(), "--rounds", "1",
            "--model", "test-model", "--base-url", server.base_url, "--out",
            str(tmp_path / "run"), "--json"],
            env={"KGEN_API_KEY": "sk-test-0123456789", "OPENAI_API_KEY": None,
                 "OPENAI_BASE_URL": None, "KGEN_BASE_URL": None, "KGEN_MODEL": None})
        assert result.exit_code == 0, result.output
        prompt = server.completions[0].text("user")
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["validated"] is True
    assert "class Model(nn.Module)" in prompt and "`linear_weight` = `self.linear.weight`" in prompt
    run = tmp_path / "run"
    report = (run / "report.md").read_text()
    print(report)
    assert "model_new.py" in report and "torch eager (Model.forward)" in report
    # by default the final timing compiles the Model too (or says why it could not)
    assert "of torch.compile (" in report or "torch.compile of the baseline failed" in report
    model_new = (run / "model_new.py").read_text()
    assert "kgen validated it on" in model_new
    kernelbench_harness(problem.read_text(), model_new)


@pytest.mark.parametrize("name", ["l1_matmul", "l1_softmax", "l1_log_softmax", "l1_swish",
                                  "l1_relu",
                                  "l1_leaky_relu", "l1_elu", "l1_softplus", "l1_hardtanh",
                                  "l1_gelu", "l1_softsign", "l1_hardsigmoid_4d",
                                  "l1_sum_dim", "l1_argmax",
                                  "l1_mean_dim", "l1_min_dim", "l1_prod_dim",
                                  "l1_argmin_dim0", "l1_l1norm", "l1_l2norm",
                                  "l1_rmsnorm_channels", "l1_layernorm", "l1_layernorm_3d",
                                  "l1_layernorm_few_rows", "l1_frobenius", "l1_mean_hw",
                                  "l1_instancenorm", "l1_cumsum"])
def test_the_builtin_author_solves_a_kernelbench_problem_for_the_harness(tmp_path, name):
    """No endpoint: l1_matmul.py says same_as: gemm (l1_softmax.py softmax, l1_log_softmax.py
    log_softmax, l1_swish.py silu), so the builtin author writes the shipped op's kernel under the
    problem's names; the activations from l1_relu.py on say `pointwise: EXPR`, which it writes with
    the elementwise template (l1_hardtanh.py at 15 x 10003, where rows are not whole vectors;
    l1_hardsigmoid_4d.py over an NCHW input, seen flat); the reductions from l1_sum_dim.py on say
    `reduce: {op, dim}`, which it writes with the dim-reduction template (over the middle dim, the
    last, and dim 0 with ties; dims of 257, 1027 and 4099; and the L1, L2 and RMS norms, whose
    second pass writes X's shape; l1_frobenius.py over every dim, one row cut across blocks;
    l1_mean_hw.py over two dims); l1_layernorm.py and l1_layernorm_3d.py (over three dims, a random
    affine; l1_layernorm_few_rows.py, 3 rows of 169855, cut across blocks) say `same_as:
    layernorm` with forward's eps, written with the row-wise template under their names;
    model_new.py launches it in KernelBench's harness. At l1_matmul's
    K = 1024 the float32 sums come near KernelBench's 1e-4 (cuBLAS's too: README, "KernelBench
    problems in and out"), which kgen's check allows for as KernelBench does."""
    problem = DATA / f"{name}.py"
    result = CliRunner().invoke(main, [
        "generate", "--kernelbench", str(problem), "--arch", _arch(), "--rounds", "2", "--out",
        str(tmp_path / "run"), "--json", *QUICK], env={"KGEN_MODEL": ""})
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["validated"] is True
    model_new = (tmp_path / "run" / "model_new.py").read_text()
    assert "kgen validated it on" in model_new and "builtin author" in model_new
    kernelbench_harness(problem.read_text(), model_new)


@pytest.mark.parametrize("n", [4096, 4100])
def test_the_builtin_wgmma_kernel_runs_from_model_new_with_tensor_maps_and_clusters(tmp_path, n):
    """A float16 matmul problem on sm_90a: the builtin author's wgmma kernel passes tensor maps
    (built by model_new.py on every forward) and, where B's rows are not 16-byte multiples
    (N = 4100), launches clusters of 2 with zeros for the maps TMA cannot make."""
    arch = local_hopper()
    problem = tmp_path / f"l1_matmul_f16_{n}.py"
    text = (DATA / "l1_matmul.py").read_text().replace("N = 4096", f"N = {n}")
    for shape in ("M, K", "K, N"):
        text = text.replace(f"torch.randn({shape})", f"torch.randn({shape}, dtype=torch.float16)")
    problem.write_text(text)
    result = CliRunner().invoke(main, [
        "generate", "--kernelbench", str(problem), "--arch", f"{arch.name}a", "--rounds", "1",
        "--out", str(tmp_path / "run"), "--json", *QUICK], env={"KGEN_MODEL": ""})
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["validated"] is True
    model_new = (tmp_path / "run" / "model_new.py").read_text()
    assert "gemm_wgmma_f16" in model_new and "('tmap', 'A'" in model_new
    assert ("(2, 1, 1)))" in model_new) == (n % 16 != 0)  # the cluster launch, where it runs
    kernelbench_harness(problem.read_text(), model_new, tolerance=1e-2)  # KernelBench's fp16


@pytest.mark.parametrize("name, kernel", [("l1_relu", "l1_relu"),
                                          ("l1_max_with_index", "l1_max_with_index"),
                                          ("l1_relu", "l1_relu_persistent")])
def test_model_new_matches_model_in_the_harness(name, kernel):
    """l1_relu_persistent's grid and stride come from the SM count, which model_new.py asks of
    the GPU: a wrong count would leave elements unwritten."""
    spec = load_problem(DATA / f"{name}.py")
    source = (KERNELS / f"{kernel}.cu").read_text()
    contract, problems = parse_contract(source, spec)
    assert contract is not None, problems
    found = local_gpu()
    compiled = compile_source(source, found[1])
    assert compiled.ok, compiled.summary
    text = render(spec, contract, compiled.cubin, found[1].name, source, "test")
    kernelbench_harness((DATA / f"{name}.py").read_text(), text)


def test_kgen_bench_kernelbench_times_eager_and_compile():
    result = CliRunner().invoke(main, ["bench", str(KERNELS / "l1_relu.cu"), "--kernelbench",
                                       str(DATA / "l1_relu.py"), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout[result.stdout.index("{"):])
    assert data["verdict"] == "pass"
    (timing,) = data["timings"]
    assert timing["baseline"] == "torch eager (Model.forward)" and timing["baseline_ms"] > 0
    failed = [c for c in data["checks"] if "torch.compile of the baseline failed" in c]
    assert (timing["compiled_ms"] or 0) > 0 or failed, data["checks"]
