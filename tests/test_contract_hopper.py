"""The launch contract's Hopper parts: tensor-map arguments, clusters, when= conditions, SMS."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgen.contract import TensorMapArg, parse_arg
from kgen.loop.candidate import parse_contract
from kgen.ops import load_op

DATA = Path(__file__).parent / "data"
COPY = load_op(path=DATA / "specs" / "copy2d" / "spec.yaml")
GEMM = load_op("gemm")
TMA = (DATA / "hopper" / "tma_copy.cu").read_text()
CLUSTER = (DATA / "hopper" / "cluster_copy.cu").read_text()


def test_tmap_arguments_parse_with_box_x_first_and_swizzle():
    arg = parse_arg("tmap(A, box=(64, BM), swizzle=128)")
    assert arg == TensorMapArg("A", ("64", "BM"), 128)
    assert arg.box_dims({"BM": 128}) == (64, 128)
    assert parse_arg("M") == "M"


@pytest.mark.parametrize("text, words", [
    ("tmap(A)", "box="), ("tmap(A, box=(64, 8), swizzle=100)", "swizzle must be one of"),
    ("tmap(1, box=(8,))", "write tmap("), ("tmap(A, box=(8, 8), pad=1)", "optionally swizzle"),
])
def test_malformed_tmap_arguments_say_how_to_write_them(text, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        parse_arg(text)


def test_the_test_kernels_contracts_parse():
    tma, problems = parse_contract(TMA, COPY)
    assert tma is not None, problems
    (arg, *_), = [launch.arguments() for launch in tma.launches]
    assert arg == TensorMapArg("X", ("32", "32"), 0)
    cluster, problems = parse_contract(CLUSTER, COPY)
    assert cluster is not None, problems
    assert cluster.launches[0].cluster_dims({}) == (2, 1, 1)


@pytest.mark.parametrize("box, swizzle, words", [
    ("(300, 32)", 0, "outside 1..256"),
    ("(3, 32)", 0, "not a multiple of 16"),
    ("(64, 32)", 128, "exceeds the 128-byte swizzle span"),
])
def test_a_bad_box_is_a_contract_error_on_its_line(box, swizzle, words):
    source = TMA.replace("tmap(X, box=(32, 32))", f"tmap(X, box={box}, swizzle={swizzle})")
    contract, problems = parse_contract(source, COPY)
    assert contract is None
    assert any(words in p.message and p.line == 2 for p in problems), problems


def test_a_box_of_the_wrong_rank_is_refused():
    source = TMA.replace("tmap(X, box=(32, 32))", "tmap(X, box=(32,))")
    contract, problems = parse_contract(source, COPY)
    assert contract is None and "the box has 1 dims but X has 2" in problems[0].message


def _gemm_with_maps(when: str = "") -> str:
    body = ('extern "C" __global__ void g(const __grid_constant__ CUtensorMap a, const '
            '__grid_constant__ CUtensorMap b, __half* C, int M, int N, int K) {}\n'
            'extern "C" __global__ void f(const __half* A, const __half* B, __half* C, int M, '
            'int N, int K) {}\n')
    launch = ("// kgen: launch g grid=(SMS) block=(384) smem=1024 args=(tmap(A, box=(64, 128), "
              f"swizzle=128), tmap(B, box=(64, 64), swizzle=128), C, M, N, K){when}\n")
    return "// kgen: op=gemm dtype=float16\n" + launch + body


def test_a_stride_tma_cannot_use_is_a_contract_error_naming_the_size():
    contract, problems = parse_contract(_gemm_with_maps(), GEMM)
    assert contract is None
    assert "K=1" in problems[0].message and "not a multiple of 16" in problems[0].message
    assert "when=" in problems[0].message  # says how to fix it: a guarded launch and a fallback


def test_a_guarded_launch_with_a_fallback_covers_every_size():
    source = _gemm_with_maps(" when=(K % 8 == 0 and N % 8 == 0)") + (
        "// kgen: launch f grid=(cdiv(N,16), cdiv(M,16)) block=(16,16) args=(A, B, C, M, N, K) "
        "when=(K % 8 != 0 or N % 8 != 0)\n")
    contract, problems = parse_contract(source, GEMM)
    assert contract is not None, problems
    names = {s["K"]: [launch.kernel for launch in contract.launches_at({**s, "SMS": 132})]
             for s in GEMM.test_sizes}
    assert names[5] == ["f"] and names[1000] == ["g"]


def test_a_size_where_no_launch_runs_is_a_contract_error():
    source = _gemm_with_maps(" when=(K % 8 == 0 and N % 8 == 0)")
    source = source.replace("tmap(A, box=(64, 128), swizzle=128), tmap(B, box=(64, 64), "
                            "swizzle=128)", "A, B")
    contract, problems = parse_contract(source, GEMM)
    assert contract is None and "no launch runs at M=1 N=1 K=1" in problems[0].message


def test_sms_is_a_symbol_of_launch_expressions_and_unknown_fields_are_refused():
    source = TMA.replace("grid=(cdiv(N,32), cdiv(M,32))", "grid=(min(SMS, cdiv(N,32)))")
    assert parse_contract(source, COPY)[0] is not None
    source = TMA.replace("smem=0", "smem=0 clusters=(2)")
    contract, problems = parse_contract(source, COPY)
    assert contract is None and "unknown field(s) clusters" in problems[0].message


def test_an_optional_tensor_map_is_no_problem_where_strides_cannot_make_one():
    source = _gemm_with_maps().replace("swizzle=128)", "swizzle=128, optional=1)")
    contract, problems = parse_contract(source, GEMM)
    assert contract is not None, problems
    assert all(a.optional for a in contract.launches[0].arguments() if isinstance(a, TensorMapArg))


def test_optional_takes_zero_or_one():
    with pytest.raises(ValueError, match="optional is 0 or 1"):
        parse_arg("tmap(A, box=(8, 8), optional=2)")


def test_the_launch_geometry_check_knows_sms_and_skips_launches_a_when_rules_out():
    """Found on the H200: the builtin wgmma kernel's persistent grid (min(SMS, tiles)) was refused
    before any run as an unknown name; and a guarded launch must not be judged at sizes it skips."""
    from kgen.arch import parse_arch
    from kgen.author.space import default, render
    from kgen.loop.geometry import launch_problems

    target = parse_arch("sm_90a")
    contract, problems = parse_contract(render(default(target, "bfloat16"), "bfloat16"), GEMM)
    assert contract is not None, problems
    assert launch_problems(contract, GEMM, target) == ()
    # grid=(K // 8) is empty at K=5 and K=1, where this launch does not run: no problem there.
    guarded = _gemm_with_maps(" when=(K % 8 == 0 and N % 8 == 0)").replace(
        "grid=(SMS)", "grid=(K // 8)") + (
        "// kgen: launch f grid=(cdiv(N,16), cdiv(M,16)) block=(16,16) args=(A, B, C, M, N, K) "
        "when=(K % 8 != 0 or N % 8 != 0)\n")
    contract, problems = parse_contract(guarded, GEMM)
    assert contract is not None, problems
    assert launch_problems(contract, GEMM, parse_arch("sm_90")) == ()
    unguarded = guarded.replace(" when=(K % 8 == 0 and N % 8 == 0)", "", 1)
    contract, _ = parse_contract(unguarded.replace("swizzle=128)", "swizzle=128, optional=1)"),
                                 GEMM)
    assert contract is not None
    assert "grid=(0,) has a dimension below 1" in launch_problems(
        contract, GEMM, parse_arch("sm_90"))[0].message


def test_a_cluster_launch_takes_the_function_handle_from_either_cupy_kind():
    from types import SimpleNamespace

    from kgen.sandbox.launch import _function_handle

    assert _function_handle(SimpleNamespace(ptr=7)) == 7  # cupy.cuda.Function
    assert _function_handle(SimpleNamespace(kernel=SimpleNamespace(ptr=9))) == 9  # RawKernel
