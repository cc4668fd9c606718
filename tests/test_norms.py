"""The norms of `reduce: {op, dim}` (l1norm, l2norm, rmsnorm: X divided by a norm of it over one
dim, Y of X's shape; layernorm: X standardized over it, no weights): the field (one error naming
it), the dim-reduction template's second pass in both layouts on the CPU emulator against numpy
in float64 (threads sharing a column or a row, the vector and the one-element paths), nvcc in
every dtype, the aten calls KernelBench's L1Norm, L2Norm, RMSNorm and InstanceNorm forwards make
(and F.layer_norm and nn.GroupNorm without weights), and the builtin author writing such a
problem."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from emulate import HAVE_GXX, judge, run, stored
from helpers import builtin_best_offline

from kgen.arch import parse_arch
from kgen.author.dimreduce import ReduceParams
from kgen.author.families import BoundReduce, family_for
from kgen.compile import compile_source
from kgen.errors import UsageError
from kgen.loop.candidate import parse_contract
from kgen.ops import build_spec, load_op, spec_yaml
from kgen.ops.kernelbench import load_problem
from kgen.ops.reduction import EPS_OPS, NORMS, norm_from_aten, standardize_from_aten
from kgen.spec import Reduction

DATA = Path(__file__).parent / "data" / "kernelbench"
SM90 = parse_arch("sm_90", check_nvcc=False)
EPS = 1e-5
REFERENCE = {"l1norm": "x / torch.sum(torch.abs(x), dim={d}, keepdim=True)",
             "l2norm": "x / torch.sqrt(torch.sum(x * x, dim={d}, keepdim=True))",
             "rmsnorm": f"x / torch.sqrt(torch.mean(x * x, dim={{d}}, keepdim=True) + {EPS})",
             "layernorm": f"(x - torch.mean(x, dim={{d}}, keepdim=True)) / torch.sqrt(torch.var("
                          f"x, dim={{d}}, keepdim=True, correction=0) + {EPS})"}


def numpy_norm(op: str, x: np.ndarray, dim: int) -> np.ndarray:
    x = x.astype(np.float64)
    if op == "l1norm":
        return x / np.abs(x).sum(axis=dim, keepdims=True)
    if op == "l2norm":
        return x / np.sqrt((x * x).sum(axis=dim, keepdims=True))
    if op == "layernorm":
        return (x - x.mean(axis=dim, keepdims=True)) / np.sqrt(x.var(axis=dim, keepdims=True) + EPS)
    return x / np.sqrt((x * x).mean(axis=dim, keepdims=True) + EPS)


def _spec(tmp_path, op: str = "rmsnorm", dim: int = 1, dtype: str = "float32", **extra):
    """X[B, R, C] divided by its norm over `dim`."""
    reference = "float64" if dtype == "float32" else "float32"
    field = {"op": op, "dim": dim, **({"eps": EPS} if op in EPS_OPS else {})}
    data = {"name": "nrm", "sizes": ["B", "R", "C"], "reference": REFERENCE[op].format(d=dim),
            "flops": "3 * B * R * C", "bytes": "3 * B * R * C * ELEM",
            "tensors": {"x": {"shape": ["B", "R", "C"], "role": "input"},
                        "out": {"shape": ["B", "R", "C"], "role": "output"}},
            "dtypes": {dtype: {"reference": reference, "atol": 1e-5, "rtol": 1e-5}},
            "test_sizes": [{"B": 3, "R": 5, "C": 7}],
            "bench_sizes": [{"B": 16, "R": 64, "C": 65536}], "reduce": field}
    data.update(extra)
    return build_spec(data, tmp_path, "nrm.yaml")


# ---- the field ----

def test_a_spec_says_a_norm_and_it_loads_back_with_its_eps(tmp_path):
    spec = _spec(tmp_path, "rmsnorm", -2)
    assert spec.reduce == Reduction("rmsnorm", 1, EPS)
    assert "reduce: {op: rmsnorm, dim: 1, eps: 1.0e-05}" in spec_yaml(spec)
    again = tmp_path / "again.yaml"
    again.write_text(spec_yaml(spec))
    assert load_op(path=again).reduce == Reduction("rmsnorm", 1, EPS)
    assert isinstance(family_for(spec), BoundReduce)


@pytest.mark.parametrize("extra, words", [
    ({"reduce": {"op": "l2norm", "dim": 1, "eps": 1e-6}},
     "field 'reduce.eps': only rmsnorm and layernorm take eps, not l2norm"),
    ({"reduce": {"op": "rmsnorm", "dim": 1, "eps": "small"}},
     "field 'reduce.eps' should be a number >= 0"),
    ({"reduce": {"op": "rmsnorm", "dim": 1, "eps": -1.0}},
     "field 'reduce.eps' should be a number >= 0"),
    ({"tensors": {"x": {"shape": ["B", "R", "C"], "role": "input"},
                  "out": {"shape": ["B", "C"], "role": "output"}}},
     "rmsnorm gives x's shape, and out is [B,C]"),
])
def test_a_bad_norm_field_is_one_error_naming_it(tmp_path, extra, words):
    with pytest.raises(UsageError) as caught:
        _spec(tmp_path, **extra)
    assert words in str(caught.value)


# ---- the template ----

@pytest.mark.nvcc
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_every_norm_compiles_in_both_layouts(tmp_path, dtype):
    for op in NORMS:
        for dim in (1, 2):
            spec = _spec(tmp_path, op, dim, dtype)
            family = family_for(spec)
            p, _ = family.first(SM90, dtype)
            source = family.render(p, dtype, SM90)
            assert ("#define KGEN_EPS 1e-05f" in source) == (op in EPS_OPS)
            result = compile_source(source, parse_arch("sm_90"))
            assert result.ok, (op, dim, result.summary)
            contract, problems = parse_contract(source, spec)
            assert problems == () and contract.launches[0].args == ("x", "out", "B", "R", "C")


def _emulated():
    """(op, dim, params, sizes): over an inner dim with threads splitting R (shared memory) and
    alone, vectors and single elements (C not a multiple of vec); over the last dim with one warp
    and with several per row (their totals meet in shared memory), vectors and single elements;
    l1norm and layernorm also with more threads splitting R and a warp per row."""
    cases = []
    for op in NORMS:
        cases.append((op, 1, ReduceParams(op, 0, 16, 4, 4, 2), {"B": 3, "R": 37, "C": 70}))
        cases.append((op, 2, ReduceParams(op, 1, 64, 2, 4, 2), {"B": 3, "R": 5, "C": 301}))
        if op in ("l1norm", "layernorm"):
            cases.append((op, 1, ReduceParams(op, 0, 32, 1, 2, 4), {"B": 2, "R": 9, "C": 64}))
            cases.append((op, 2, ReduceParams(op, 1, 32, 4, 4, 4), {"B": 5, "R": 5, "C": 256}))
    return [pytest.param(*case, marks=[pytest.mark.slow] if k > 2 else [])
            for k, case in enumerate(cases)]


@pytest.mark.skipif(not HAVE_GXX, reason="g++ not on PATH")
@pytest.mark.parametrize("op, dim, p, sizes", _emulated())
def test_the_rendered_kernel_divides_by_the_norm_on_the_emulator(tmp_path, op, dim, p, sizes):
    """The emulator's outputs start as zeros and no expected value is 0, so a position the second
    pass misses fails."""
    spec = _spec(tmp_path, op, dim, bench_sizes=[sizes])
    source = family_for(spec).render(p, "float32", SM90)
    rng = np.random.default_rng(len(op) * 10 + dim)
    x = stored(rng.standard_normal((sizes["B"], sizes["R"], sizes["C"])) + 0.5, "float32")
    (got,) = run(source, spec, "float32", sizes, {"x": x}, tmp_path).values()
    want = numpy_norm(op, x, dim)
    assert got.shape == x.shape
    assert np.allclose(got, want, rtol=1e-5, atol=1e-6), float(np.abs(got - want).max())


def _every(tmp_path, op: str, dims: list[int], sizes: dict):
    """X[B, R, C] divided by its norm over `dims` (all three: Frobenius's for l2norm)."""
    over = tuple(dims) if len(dims) < 3 else None
    reference = {"l2norm": f"x / torch.sqrt(torch.sum(x * x, dim={over}, keepdim=True))",
                 "l1norm": f"x / torch.sum(torch.abs(x), dim={over}, keepdim=True)",
                 "layernorm": REFERENCE["layernorm"].format(d=tuple(dims))}[op]
    return _spec(tmp_path, op, dims, reference=reference, bench_sizes=[sizes],
                 reduce={"op": op, "dim": dims, **({"eps": EPS} if op in EPS_OPS else {})})


@pytest.mark.skipif(not HAVE_GXX, reason="g++ not on PATH")
@pytest.mark.parametrize("op, dims, p, sizes", [
    ("l2norm", [0, 1, 2], ReduceParams("l2norm", 1, 32, 1, 4, 2), {"B": 3, "R": 32, "C": 48}),
    ("layernorm", [1, 2], ReduceParams("layernorm", 1, 32, 1, 4, 1), {"B": 2, "R": 37, "C": 64}),
    pytest.param("l1norm", [1, 2], ReduceParams("l1norm", 1, 64, 1, 1, 1),
                 {"B": 2, "R": 19, "C": 59}, marks=pytest.mark.slow)])
def test_a_norm_over_several_dims_cut_across_blocks_on_the_emulator(tmp_path, op, dims, p,
                                                                     sizes):
    """Few long rows: on a GPU of 64 SMs the split kernels (every slice scaled by its row's
    factor, combined from the slices' states), on one of 3 the one kernel; against numpy."""
    spec = _every(tmp_path, op, dims, sizes)
    source = family_for(spec).render(p, "float32", SM90)
    contract, _ = parse_contract(source, spec)
    values = {**spec.sizes_of(sizes), "SMS": 64}
    assert [launch.kernel.rsplit("_", 1)[1] for launch in contract.launches_at(values)] == \
        ["parts", "finish"]
    rng = np.random.default_rng(len(dims))
    x = stored(rng.standard_normal((sizes["B"], sizes["R"], sizes["C"])) + 0.5, "float32")
    axes = tuple(dims)
    if op == "layernorm":
        x = (x * 3 + 2).astype(np.float32)  # off-center: a kernel that skips the mean fails
        want = (x - x.astype(np.float64).mean(axis=axes, keepdims=True)) / np.sqrt(
            x.astype(np.float64).var(axis=axes, keepdims=True) + EPS)
    else:
        want = x / (np.sqrt((x * x).sum(axis=axes, keepdims=True)) if op == "l2norm"
                    else np.abs(x).sum(axis=axes, keepdims=True))
    for sms in (64, 3):
        (got,) = run(source, spec, "float32", sizes, {"x": x}, tmp_path, sms=sms).values()
        assert np.allclose(got, want, rtol=1e-5, atol=1e-7), (sms, float(np.abs(got - want).max()))


# ---- from a KernelBench problem ----

def _calls(*steps):
    """(aten name, args, result) with fresh objects standing in for tensors."""
    return [(name, args, result) for name, args, result in steps]


def test_the_aten_calls_of_the_three_norms_are_read():
    x, a, s, m, e, r, y = (SimpleNamespace(n=n, shape=(2, 3, 4)) for n in "xasmery")
    l1 = _calls(("abs.default", (x,), a), ("sum.dim_IntList", (a, [1], True), s),
                ("div.Tensor", (x, s), y))
    assert norm_from_aten(l1, x, y) == Reduction("l1norm", 1)
    l2 = _calls(("linalg_vector_norm.default", (x, 2, [-1], True), s), ("div.Tensor", (x, s), y))
    assert norm_from_aten(l2, x, y) == Reduction("l2norm", 2)  # dim -1 of 3, made non-negative
    rms = _calls(("pow.Tensor_Scalar", (x, 2), a), ("mean.dim", (a, [1], True), m),
                 ("add.Tensor", (m, 1e-5), e), ("sqrt.default", (e,), r), ("div.Tensor", (x, r), y))
    assert norm_from_aten(rms, x, y) == Reduction("rmsnorm", 1, 1e-5)
    inverse = _calls(("mul.Tensor", (x, x), a), ("mean.dim", (a, [2], True), m),
                     ("add.Tensor", (m, 1e-6), e), ("rsqrt.default", (e,), r),
                     ("mul.Tensor", (r, x), y))
    assert norm_from_aten(inverse, x, y) == Reduction("rmsnorm", 2, 1e-6)
    # over two adjacent dims, and over every dim (torch.norm(x, p='fro'), a 0-d result)
    assert norm_from_aten(_calls(l1[0], ("sum.dim_IntList", (a, [1, 2], True), s), l1[2]), x,
                          y) == Reduction("l1norm", 1, 0.0, 2)
    fro = _calls(("linalg_vector_norm.default", (x,), s), ("div.Tensor", (x, s), y))
    assert norm_from_aten(fro, x, y) == Reduction("l2norm", 0, 0.0, 3)
    squares = _calls(("mul.Tensor", (x, x), a), ("sum.default", (a,), s),
                     ("sqrt.default", (s,), r), ("div.Tensor", (x, r), y))
    assert norm_from_aten(squares, x, y) == Reduction("l2norm", 0, 0.0, 3)
    # not norms: keepdim off over one dim, dims that are not adjacent, a square root of a sum
    # plus eps, a p=1 vector norm, a result other than the forward's output, one call too many
    assert norm_from_aten(_calls(l1[0], ("sum.dim_IntList", (a, [1], False), s), l1[2]), x, y) \
        is None
    assert norm_from_aten(_calls(l1[0], ("sum.dim_IntList", (a, [0, 2], True), s), l1[2]), x,
                          y) is None
    assert norm_from_aten(_calls(("mul.Tensor", (x, x), a), ("sum.dim_IntList", (a, [1], True), s),
                                 ("add.Tensor", (s, 1e-5), e), ("sqrt.default", (e,), r),
                                 ("div.Tensor", (x, r), y)), x, y) is None
    assert norm_from_aten(_calls(("linalg_vector_norm.default", (x, 1, [1], True), s),
                                 ("div.Tensor", (x, s), y)), x, y) is None
    assert norm_from_aten(l1, x, s) is None
    assert norm_from_aten([*l1, ("mul.Tensor", (y, 2), r)], x, r) is None


def test_the_aten_calls_of_a_layer_norm_without_weights_are_read():
    """F.layer_norm without weights; nn.InstanceNorm's view, batch norm and view back (and the
    empty buffer it makes); nn.GroupNorm without its affine, one group or one per channel."""
    x, v, buf, y = (SimpleNamespace(n=n, shape=(2, 4, 5, 6)) for n in "xvby")
    stats = (SimpleNamespace(), SimpleNamespace())
    assert standardize_from_aten(
        [("native_layer_norm.default", (x, [5, 6], None, None, 1e-6), (y, *stats))], x, y) == \
        Reduction("layernorm", 2, 1e-6, 2)
    normed = SimpleNamespace()
    instance = [("view.default", (x, [1, 8, 5, 6]), v), ("empty.memory_format", ([0],), buf),
                ("native_batch_norm.default", (v, None, None, None, None, True, 0.1, 1e-5),
                 (normed, *stats)),
                ("view.default", (normed, [2, 4, 5, 6]), y)]
    assert standardize_from_aten(instance, x, y) == Reduction("layernorm", 2, 1e-5, 2)
    for groups, first in ((1, 1), (4, 2)):
        group = [("native_group_norm.default", (x, None, None, 2, 4, 30, groups, 1e-5),
                  (y, *stats))]
        assert standardize_from_aten(group, x, y) == Reduction("layernorm", first, 1e-5,
                                                               4 - first)
    # not: a layer norm with a weight; 2 groups of 2 channels; a batch norm over the batch too
    # (view [2, 4, 30]: BatchNorm1d in training mode); running statistics; more after it
    w = SimpleNamespace(shape=(5, 6))
    assert standardize_from_aten(
        [("native_layer_norm.default", (x, [5, 6], w, None, 1e-6), (y, *stats))], x, y) is None
    assert standardize_from_aten(
        [("native_group_norm.default", (x, None, None, 2, 4, 30, 2, 1e-5), (y, *stats))], x,
        y) is None
    assert standardize_from_aten([("view.default", (x, [2, 4, 30]), v), *instance[1:]], x,
                                 y) is None
    running = [*instance[:2], ("native_batch_norm.default",
                               (v, None, None, buf, buf, False, 0.1, 1e-5), (normed, *stats)),
               instance[3]]
    assert standardize_from_aten(running, x, y) is None
    assert standardize_from_aten([*instance, ("relu.default", (y,), v)], x, v) is None


PROBLEMS = {"l1_l1norm": Reduction("l1norm", 1), "l1_l2norm": Reduction("l2norm", 1),
            "l1_rmsnorm_channels": Reduction("rmsnorm", 1, 1e-5),
            "l1_frobenius": Reduction("l2norm", 0, 0.0, 4),
            "l1_instancenorm": Reduction("layernorm", 2, 1e-5, 2)}


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if i else [])
                                  for i, n in enumerate(PROBLEMS)])
def test_each_norm_problem_gets_the_field(name):
    spec = load_problem(DATA / f"{name}.py")
    assert spec.reduce == PROBLEMS[name] and spec.pointwise == "" and spec.same_as == ""
    assert isinstance(family_for(spec), BoundReduce)


def test_the_builtin_author_writes_a_norm_problem_with_the_template(tmp_path):
    path = DATA / "l1_rmsnorm_channels.py"
    best = builtin_best_offline(path, tmp_path / "run")
    assert "template=dimreduce op=rmsnorm rows=0" in best and "#define KGEN_EPS 1e-05f" in best
    contract, problems = parse_contract(best, load_problem(path))
    assert problems == () and contract.op == "l1_rmsnorm_channels"
    assert contract.launches[0].args == ("x", "out", "batch_size", "features", "dim1", "dim2")


@pytest.mark.skipif(not HAVE_GXX, reason="g++ not on PATH")
def test_the_emulated_instance_norm_passes_kgens_checks_and_one_without_the_mean_fails(tmp_path):
    """l1_instancenorm.py's own seeded input (off-center), the Model's forward as the reference,
    kgen's tolerance and guard checks; the same kernel that subtracts 0 for the mean misses."""
    from kgen.sandbox.rejected import Rejected
    from kgen.sandbox.validate import compute_reference, make_inputs

    spec = load_problem(DATA / "l1_instancenorm.py")
    sizes = spec.test_sizes[0]
    family = family_for(spec)
    source = family.render(family.first(SM90, "float32")[0], "float32", SM90)
    centered = source.replace("return KGEN_OP == 10 ? v : 0.f;", "return 0.f;")
    assert centered != source
    inputs = make_inputs(spec, sizes, "float32", seed=3)
    refs = compute_reference(spec, "float32", inputs, sizes, on_gpu=False)
    judge(source, spec, "float32", sizes, inputs, refs, tmp_path)
    with pytest.raises(Rejected):
        judge(centered, spec, "float32", sizes, inputs, refs, tmp_path)
