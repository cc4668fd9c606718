"""On a GPU: every cheat and fault kernel in tests/data/cheats gets its expected verdict against
its op's spec (or the spec its `// test-spec: NAME` line names, from tests/data/specs/), in one
session that keeps serving afterwards (the correct kernels pass after all the crashes)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import gpu_workers

from kgen.arch import local_gpu, parse_arch
from kgen.cli import KgenGroup
from kgen.cli.gpu_cmds import bench
from kgen.compile import compile_source
from kgen.gpu.evaluate import EvalOptions, evaluate
from kgen.loop.candidate import parse_contract
from kgen.ops import load_op

pytestmark = pytest.mark.gpu

CHEATS = Path(__file__).parent / "data" / "cheats"
SPECS = Path(__file__).parent / "data" / "specs"
SPEC = load_op("gemm")
ALL = sorted(CHEATS.glob("*.cu"))
FAULTS = [p for p in ALL if not p.name.startswith("correct_")]
CORRECT = [p for p in ALL if p.name.startswith("correct_")]
# Validation only for the cheats (fast); a generous wall limit, a short per-kernel limit; the
# sanitizer and the profiler have their own tests (test_feedback_gpu.py).
CHEAT_OPTIONS = EvalOptions(bench_sizes=(), kernel_timeout_s=5.0, timeout_s=180.0, profile=False,
                            sanitize=False)


def expected(path: Path) -> str:
    m = re.search(r"^// expect-verdict: (\w+)", path.read_text(), re.MULTILINE)
    assert m, f"{path.name} has no expect-verdict header"
    return m.group(1)


def spec_for(source: str):
    """The spec a test kernel is checked against: its test-spec line, else its contract's op."""
    named = re.search(r"^// test-spec: (\w+)", source, re.MULTILINE)
    if named:
        return load_op(path=SPECS / named.group(1) / "spec.yaml")
    bare, _ = parse_contract(source, None)
    assert bare is not None and bare.op
    return load_op(bare.op)


def run(path: Path, options: EvalOptions, arch: str | None = None, embed_ptx: bool = False):
    found = local_gpu()
    assert found is not None
    target = parse_arch(arch) if arch else found[1]
    source = path.read_text()
    spec = spec_for(source)
    contract, problems = parse_contract(source, spec)
    assert contract is not None, problems
    compiled = compile_source(source, target, embed_ptx=embed_ptx)
    assert compiled.ok, compiled.summary
    result = evaluate(compiled, contract, spec, target, options=options, workers=gpu_workers())
    assert result is not None
    return result


@pytest.mark.parametrize("path", FAULTS, ids=lambda p: p.stem)
def test_cheat_is_rejected_with_its_verdict(path):
    result = run(path, CHEAT_OPTIONS)
    print(f"{path.stem}: {result.verdict}: {result.message}")
    assert result.verdict == expected(path), result.message
    assert result.message
    if result.verdict in ("crash", "timeout", "launch_error"):
        assert "healthy" in result.extra["canary"]


def test_descriptions_say_what_is_wrong():
    msg = run(CHEATS / "edge_bug.cu", CHEAT_OPTIONS).message
    assert "never written" in msg and "only the partial edge tiles" in msg
    assert "out-of-bounds write" in run(CHEATS / "oob_write.cu", CHEAT_OPTIONS).message
    assert "modified input A" in run(CHEATS / "input_mutation.cu", CHEAT_OPTIONS).message
    assert "input set 2 of 3" in run(CHEATS / "cached_device_state.cu", CHEAT_OPTIONS).message


def test_the_new_checks_say_what_is_wrong():
    zeros = run(CHEATS / "softmax_zeros.cu", CHEAT_OPTIONS).message
    assert "outputs of Y off" in zeros
    ties = run(CHEATS / "argmax_last_tie.cu", CHEAT_OPTIONS).message
    assert "outputs of I off" in ties and "expected" in ties


@pytest.mark.parametrize("path", CORRECT, ids=lambda p: p.stem)
def test_correct_kernels_pass_and_are_timed_after_the_faults(path):
    # The first bench size only: the naive kernels take 0.7 s a launch at 8192^3.
    result = run(path, EvalOptions.quick(SPEC, profile=False, bench_sizes=SPEC.bench_sizes[:1]))
    print(f"{path.stem}: {result.verdict}: {result.message} {result.timings}")
    assert result.verdict == "pass", result.message
    (timing,) = result.timings
    assert timing.sizes == SPEC.bench_sizes[0]
    assert 0 < timing.p20_ms <= timing.ms <= timing.p80_ms
    assert timing.baseline_ms and timing.baseline_ms > 0 and timing.tflops > 0
    assert 0 < timing.roofline_fraction < 1.2
    assert any("re-validated" in c for c in result.checks)


def test_arch_mismatch_runs_embedded_ptx_and_says_so():
    found = local_gpu()
    if found is None or found[1].major_minor <= 80:
        pytest.skip("needs a GPU newer than sm_80")
    result = run(CHEATS / "correct_tiled.cu", CHEAT_OPTIONS, arch="sm_80", embed_ptx=True)
    assert result.verdict == "pass", result.message
    assert "timings are for the local GPU" in result.note
    bare = run(CHEATS / "correct_tiled.cu", CHEAT_OPTIONS, arch="sm_80", embed_ptx=False)
    assert bare.verdict == "launch_error" and "embed" in bare.message


def test_kgen_bench_json_on_a_saved_kernel():
    cli = KgenGroup(commands={"bench": bench})
    result = CliRunner().invoke(cli, ["bench", str(CHEATS / "correct_f16_naive.cu"), "--quick",
                                      "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout[result.stdout.index("{"):])
    assert data["verdict"] == "pass" and data["timings"][0]["baseline"].startswith("cuBLAS")
    far = CliRunner().invoke(cli, ["bench", str(CHEATS / "correct_tiled.cu"), "--arch", "sm_120"])
    assert far.exit_code == 3 and "cannot run on the local GPU" in far.output


def test_an_input_changed_only_at_a_bench_size_is_caught():
    # Bench sizes draw their inputs on the GPU and compare the buffers with them there.
    options = EvalOptions.quick(SPEC, profile=False, bench_sizes=SPEC.bench_sizes[:1])
    result = run(Path(__file__).parent / "data" / "kernels" / "gemm_mutates_at_bench_size.cu",
                 options)
    assert result.verdict == "wrong", result.message
    assert "modified input A" in result.message and "benchmark size" in result.message


@pytest.mark.parametrize("spec", [load_op("layernorm"), load_op("argmax"),
                                  load_op(path=SPECS / "argmax_ties" / "spec.yaml")],
                         ids=["uniform-normal", "normal", "randint"])
def test_inputs_drawn_on_the_gpu_follow_their_init(spec):
    import torch

    from kgen.sandbox.validate import make_inputs

    sizes = spec.bench_sizes[0]
    drawn = make_inputs(spec, sizes, "float32", 3, device="cuda")
    again = make_inputs(spec, sizes, "float32", 3, device="cuda")
    other = make_inputs(spec, sizes, "float32", 4, device="cuda")
    for tensor in spec.operands:
        x = drawn[tensor.name]
        assert x.is_cuda and tuple(x.shape) == spec.shape(tensor, sizes)
        assert torch.equal(x, again[tensor.name]) and not torch.equal(x, other[tensor.name])
        if tensor.init.dist == "randint":  # every integer of [low, high) and nothing else
            assert torch.equal(torch.unique(x).cpu(), torch.arange(int(tensor.init.a),
                                                                    int(tensor.init.b)).float())
        elif tensor.init.dist == "uniform":
            assert tensor.init.a <= float(x.min()) and float(x.max()) < tensor.init.b
        else:  # normal: mean and std within a few standard errors over millions of values
            assert abs(float(x.mean()) - tensor.init.a) < 0.01 * tensor.init.b
            assert abs(float(x.std()) - tensor.init.b) < 0.01 * tensor.init.b
