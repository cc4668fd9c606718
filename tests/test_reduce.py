"""`reduce: {op, dim}`: the field in a spec file (one error naming it, bound to X's shape); the
dim-reduction template computes each op in both layouts (on the CPU emulator, against numpy in
float64, ties and sizes that are not multiples of any vector or block included) and compiles with
nvcc in every dtype; a KernelBench forward that is one reduction of its input over one dim gets
the field; the builtin author writes such a problem with the template."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from emulate import HAVE_GXX, run, stored
from helpers import builtin_best_offline

from kgen.arch import parse_arch
from kgen.author import dimreduce
from kgen.author.dimreduce import ReduceParams
from kgen.author.families import BoundReduce, family_for
from kgen.compile import compile_source
from kgen.errors import UsageError
from kgen.loop.candidate import parse_contract
from kgen.ops import build_spec, load_op, spec_yaml
from kgen.ops.kernelbench import load_problem
from kgen.ops.reduction import REDUCTIONS, from_aten
from kgen.spec import Reduction

DATA = Path(__file__).parent / "data" / "kernelbench"
SM90 = parse_arch("sm_90", check_nvcc=False)
NUMPY = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
         "argmax": np.argmax, "argmin": np.argmin}  # argmax/argmin: the first index on ties


def _spec(tmp_path, op: str = "sum", dim: int = 1, dtype: str = "float32", keep: bool = False,
          **extra):
    """X[B, R, C] reduced over `dim` (negative counts from the end)."""
    shape = ["B", "R", "C"]
    kept = list(shape)
    if keep:
        kept[dim] = "1"
    else:
        del kept[dim]
    out: dict = {"shape": kept, "role": "output"}
    if op in ("argmax", "argmin"):
        out["dtype"] = "int64"
    reference = "float64" if dtype == "float32" else "float32"
    torch_name = {"max": "amax", "min": "amin"}.get(op, op)
    data = {"name": "red", "sizes": ["B", "R", "C"],
            "reference": f"torch.{torch_name}(x, dim={dim}, keepdim={keep})",
            "flops": "B * R * C", "bytes": "B * R * C * ELEM",
            "tensors": {"x": {"shape": shape, "role": "input"}, "out": out},
            "dtypes": {dtype: {"reference": reference, "atol": 1e-5, "rtol": 1e-5}},
            "test_sizes": [{"B": 3, "R": 5, "C": 7}], "bench_sizes": [{"B": 16, "R": 256,
                                                                       "C": 1024}],
            "reduce": {"op": op, "dim": dim}}
    data.update(extra)
    return build_spec(data, tmp_path, "red.yaml")


# ---- the field ----

def test_a_spec_says_reduce_and_it_binds_x_around_the_dim(tmp_path):
    spec = _spec(tmp_path, "argmin", -1, keep=True)
    assert spec.reduce == Reduction("argmin", 2)  # the dim made non-negative
    family = family_for(spec)
    assert isinstance(family, BoundReduce) and family.by_row == 1
    assert (family.bound.outer, family.bound.r, family.bound.inner) == (("B", "R"), ("C",), ())
    assert "reduce: {op: argmin, dim: 2}" in spec_yaml(spec)
    again = tmp_path / "again.yaml"
    again.write_text(spec_yaml(spec))
    assert load_op(path=again).reduce == Reduction("argmin", 2)
    assert family_for(_spec(tmp_path, "sum", 0)).bound.inner == ("R", "C")


def test_a_size_used_twice_is_one_argument_and_a_number_is_written_in(tmp_path):
    """X[N, 3, N] over dim 0: the kernel takes N once; R is N, INNER is 3 * N."""
    spec = _spec(tmp_path, "max", 0, sizes=["N"], test_sizes=[{"N": 5}],
                 bench_sizes=[{"N": 64}], flops="N", bytes="N * ELEM",
                 tensors={"x": {"shape": ["N", "3", "N"], "role": "input"},
                          "out": {"shape": ["3", "N"], "role": "output"}})
    family = family_for(spec)
    assert family.extent == dimreduce.Extent(1, 64, 192)
    source = family.render(ReduceParams("max", 0, 32, 4, 2, 2), "float32", SM90)
    assert "#define DIMS int d_N\n" in source and "#define INNER (3 * d_N)" in source
    contract, problems = parse_contract(source, spec)
    assert problems == () and contract.launches[0].args == ("x", "out", "N")
    assert contract.launches[0].grid == ("1 * cdiv(3 * N, 64)",)


def test_the_layout_is_the_specs_even_where_inner_is_1_at_the_bench_size(tmp_path):
    family = family_for(_spec(tmp_path, "sum", 1, bench_sizes=[{"B": 64, "R": 4096, "C": 1}]))
    p, _ = family.first(SM90, "float32")
    assert p.rows == 0 and family.extent.inner == 1
    assert "ROWS = 0" in family.render(p, "float32", SM90)


def test_several_adjacent_dims_are_one_r_and_load_back_as_a_list(tmp_path):
    spec = _spec(tmp_path, "sum", 1, reference="torch.sum(x, dim=(1, 2))",
                 tensors={"x": {"shape": ["B", "R", "C"], "role": "input"},
                          "out": {"shape": ["B"], "role": "output"}},
                 reduce={"op": "sum", "dim": [-2, -1]})
    assert spec.reduce == Reduction("sum", 1, 0.0, 2) and spec.reduce.dims == (1, 2)
    family = family_for(spec)
    assert (family.bound.outer, family.bound.r, family.bound.inner) == (("B",), ("R", "C"), ())
    assert family.by_row == 1 and family.extent == dimreduce.Extent(16, 256 * 1024, 1)
    assert "dim: [1, 2]" in spec_yaml(spec)
    again = tmp_path / "again.yaml"
    again.write_text(spec_yaml(spec))
    assert load_op(path=again).reduce == spec.reduce
    source = family.render(family.first(SM90, "float32")[0], "float32", SM90)
    assert "#define RLEN (d_R * d_C)" in source and "reduce: {op: sum, dim: [1, 2]}" in source


@pytest.mark.parametrize("extra, words", [
    ({"reduce": {"op": "sum", "dim": [0, 2]}}, "[0, 2] are not adjacent dims in increasing"),
    ({"reduce": {"op": "sum", "dim": [-1, 0]}}, "are not adjacent dims in increasing order"),
    ({"reduce": {"op": "sum", "dim": []}}, "should be an integer or a list of adjacent ones"),
    ({"reduce": {"op": "sum", "dim": [1, 2, 3]}}, "dim [1, 2, 3] is out of range for x's 3"),
    ({"reduce": {"op": "median", "dim": 1}}, "field 'reduce.op': 'median' is not a reduction"),
    ({"reduce": {"op": "sum"}}, "field 'reduce' should be a mapping with op and dim"),
    ({"reduce": {"op": "sum", "dim": "1"}}, "field 'reduce.dim' should be an integer"),
    ({"reduce": {"op": "sum", "dim": 3}}, "dim 3 is out of range for x's 3 dims"),
    ({"pointwise": "x"}, "fields 'pointwise' and 'reduce' both say"),
    ({"tensors": {"x": {"shape": ["B", "R", "C"], "role": "input"},
                  "out": {"shape": ["B", "R"], "role": "output"}}},
     "out[B,R] is not x[B,R,C] without dim 1"),
    ({"tensors": {"x": {"shape": ["B", "R", "C"], "role": "input"},
                  "out": {"shape": ["B", "C"], "role": "output", "dtype": "int64"}}},
     "sum gives the run dtype, and out has dtype int64"),
])
def test_a_bad_reduce_field_is_one_error_naming_it(tmp_path, extra, words):
    with pytest.raises(UsageError) as caught:
        _spec(tmp_path, **extra)
    assert words in str(caught.value)


def test_argmax_needs_int64_indices(tmp_path):
    with pytest.raises(UsageError, match="argmax gives int64, and out has the run dtype"):
        _spec(tmp_path, tensors={"x": {"shape": ["B", "R", "C"], "role": "input"},
                                 "out": {"shape": ["B", "C"], "role": "output"}},
              reduce={"op": "argmax", "dim": 1})


def test_the_aten_calls_of_torch_reductions_map_to_an_op_and_adjacent_dims():
    """On a tensor of 4 dims."""
    assert from_aten("sum.dim_IntList", ["x", [1]], {}, 4) == Reduction("sum", 1)
    assert from_aten("max.dim", ["x", -1, True], {}, 4) == Reduction("max", 3)
    assert from_aten("amin.default", ["x", [0]], {}, 4) == Reduction("min", 0)
    assert from_aten("argmax.default", ["x", 2], {}, 4) == Reduction("argmax", 2)
    assert from_aten("sum.dim_IntList", ["x", [-1, 2]], {}, 4) == Reduction("sum", 2, 0.0, 2)
    assert from_aten("mean.dim", ["x", [1, 2, 3], True], {}, 4) == Reduction("mean", 1, 0.0, 3)
    assert from_aten("argmax.default", ["x"], {}, 4) == Reduction("argmax", 0, 0.0, 4)
    assert from_aten("sum.default", ["x"], {}, 4) == Reduction("sum", 0, 0.0, 4)
    assert from_aten("max.default", ["x"], {}, 4) == Reduction("max", 0, 0.0, 4)
    assert from_aten("amin.default", ["x"], {}, 4) == Reduction("min", 0, 0.0, 4)
    assert from_aten("sum.dim_IntList", ["x", [1, 3]], {}, 4) is None  # not adjacent
    assert from_aten("sum.dim_IntList", ["x", [1, 1]], {}, 4) is None
    assert from_aten("sum.dim_IntList", ["x", []], {}, 4) is None
    assert from_aten("sum.dim_IntList", ["x", [4]], {}, 4) is None
    assert from_aten("sum.dim_IntList", ["x", [1]], {"dtype": "float64"}, 4) is None
    assert from_aten("sum.default", ["x"], {"dtype": "float64"}, 4) is None
    assert from_aten("linalg_vector_norm.default", ["x", 2, [1]], {}, 4) is None


# ---- the template ----

@pytest.mark.nvcc
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_every_op_compiles_in_both_layouts(tmp_path, dtype):
    for op in REDUCTIONS:
        for dim in (1, 2):
            spec = _spec(tmp_path, op, dim, dtype)
            family = family_for(spec)
            p, _ = family.first(SM90, dtype)
            source = family.render(p, dtype, SM90)
            result = compile_source(source, parse_arch("sm_90"))
            assert result.ok, (op, dim, result.summary)
            contract, problems = parse_contract(source, spec)
            assert problems == () and contract.op == "red", problems
            assert contract.launches[0].args == ("x", "out", "B", "R", "C")


def _emulated():
    """(op, dim, params, sizes): both layouts, several threads sharing each output (shared
    memory), the vector path and the one-element path (C or R not a multiple of vec)."""
    cases = []
    for i, op in enumerate(REDUCTIONS):
        cases.append((op, 1, ReduceParams(op, 0, 16, 4, 4, 2), {"B": 3, "R": 37, "C": 70}))
        cases.append((op, 2, ReduceParams(op, 1, 64, 2, 4, 2), {"B": 2, "R": 3, "C": 301}))
        if i == 0:
            cases.append((op, 1, ReduceParams(op, 0, 32, 2, 2, 1), {"B": 2, "R": 9, "C": 71}))
            cases.append((op, 0, ReduceParams(op, 0, 16, 1, 4, 4), {"B": 13, "R": 2, "C": 8}))
            cases.append((op, 2, ReduceParams(op, 1, 32, 4, 4, 4), {"B": 1, "R": 5, "C": 256}))
    return [pytest.param(*case, marks=[pytest.mark.slow] if k > 2 else [])
            for k, case in enumerate(cases)]


@pytest.mark.skipif(not HAVE_GXX, reason="g++ not on PATH")
@pytest.mark.parametrize("op, dim, p, sizes", _emulated())
def test_the_rendered_kernel_reduces_over_the_dim_on_the_emulator(tmp_path, op, dim, p, sizes):
    """Values rounded to halves, so sums are exact and argmax/argmin meet ties (the first index
    wins, as numpy and torch choose); prod's factors near 1."""
    spec = _spec(tmp_path, op, dim, bench_sizes=[sizes])
    source = family_for(spec).render(p, "float32", SM90)
    rng = np.random.default_rng(len(op) * 100 + dim)
    shape = (sizes["B"], sizes["R"], sizes["C"])
    x = np.round(rng.standard_normal(shape) * 4) / 2
    if op == "prod":
        x = 1 + rng.standard_normal(shape) / 8
    x = stored(x, "float32")
    (got,) = run(source, spec, "float32", sizes, {"x": x}, tmp_path).values()
    want = NUMPY[op](x, axis=dim)
    if op.startswith("arg"):
        assert (got == want).all(), np.argwhere(got != want)[:5]
    else:
        assert np.allclose(got, want, rtol=1e-5, atol=1e-5), float(np.abs(got - want).max())


def _whole(tmp_path, op: str, sizes: dict, few: bool = True):
    """X[B, R, C] reduced over dims 1 and 2 (`op` "sum") or over all three (to a 0-d Y),
    bench sizes of few rows (the file carries the split kernels) or of many."""
    every = op != "sum"
    reference = {"sum": "torch.sum(x, dim=(1, 2))", "argmax": "torch.argmax(x)",
                 "max": "torch.amax(x)", "mean": "torch.mean(x)"}[op]
    out: dict = {"shape": [] if every else ["B"], "role": "output"}
    if op == "argmax":
        out["dtype"] = "int64"
    bench = sizes if few else {"B": 4096, "R": 64, "C": 64}
    return _spec(tmp_path, op, 0, reference=reference, bench_sizes=[bench],
                 tensors={"x": {"shape": ["B", "R", "C"], "role": "input"}, "out": out},
                 reduce={"op": op, "dim": [0, 1, 2] if every else [1, 2]})


def test_a_file_for_few_rows_carries_the_split_pair(tmp_path):
    sizes = {"B": 2, "R": 64, "C": 1024}
    few = family_for(_whole(tmp_path, "sum", sizes))
    contract, problems = parse_contract(few.render(few.first(SM90, "float32")[0], "float32",
                                                   SM90), _whole(tmp_path, "sum", sizes))
    assert problems == ()
    main, parts, finish = contract.launches
    assert (parts.kernel, finish.kernel) == ("sum_dim_f32_parts", "sum_dim_f32_finish")
    assert parts.when == finish.when and main.when == f"(not {parts.when})"
    assert finish.grid == ("1", "B")  # one block a row combines a reduction's states
    many = family_for(_whole(tmp_path, "sum", sizes, few=False))
    contract, _ = parse_contract(many.render(many.first(SM90, "float32")[0], "float32", SM90),
                                 _whole(tmp_path, "sum", sizes, few=False))
    assert len(contract.launches) == 1 and contract.launches[0].when == ""


def _split_cases():
    """(op, params, sizes): sums over the last two dims of 2 rows of 1155 and 2560 (the
    one-element and the vector path, slices of 256 and 512), and over every dim to a 0-d
    output: argmax with ties (the first index of the flat tensor wins), max, mean."""
    return [("sum", ReduceParams("sum", 1, 32, 1, 1, 2), {"B": 2, "R": 33, "C": 35}),
            ("sum", ReduceParams("sum", 1, 32, 1, 4, 1), {"B": 2, "R": 40, "C": 64}),
            ("argmax", ReduceParams("argmax", 1, 64, 1, 1, 1), {"B": 3, "R": 17, "C": 29}),
            pytest.param("max", ReduceParams("max", 1, 32, 1, 4, 2), {"B": 4, "R": 16, "C": 65},
                         marks=pytest.mark.slow),
            pytest.param("mean", ReduceParams("mean", 1, 64, 1, 2, 2),
                         {"B": 5, "R": 23, "C": 41}, marks=pytest.mark.slow)]


@pytest.mark.skipif(not HAVE_GXX, reason="g++ not on PATH")
@pytest.mark.parametrize("op, p, sizes", _split_cases())
def test_rows_cut_across_blocks_reduce_as_whole_rows_do(tmp_path, op, p, sizes):
    """On a GPU of 64 SMs these few long rows take the split kernels (a state per slice in the
    static workspace, then one block a row combining them); on one of 3 the one kernel. Both
    against numpy in float64; values rounded to halves, so sums are exact and argmax meets
    ties."""
    spec = _whole(tmp_path, op, sizes)
    source = family_for(spec).render(p, "float32", SM90)
    contract, _ = parse_contract(source, spec)
    values = {**spec.sizes_of(sizes), "SMS": 64}
    assert [launch.kernel.rsplit("_", 1)[1] for launch in contract.launches_at(values)] == \
        ["parts", "finish"]
    rng = np.random.default_rng(sum(sizes.values()))
    shape = (sizes["B"], sizes["R"], sizes["C"])
    x = stored(np.round(rng.standard_normal(shape) * 4) / 2, "float32")
    want = x.reshape(sizes["B"], -1).sum(axis=1) if op == "sum" else NUMPY[op](x)
    for sms in (64, 3):
        (got,) = run(source, spec, "float32", sizes, {"x": x}, tmp_path, sms=sms).values()
        assert got.shape == np.shape(want)
        if op == "argmax":
            assert got == want, (sms, got, want)
        else:
            assert np.allclose(got, want, rtol=1e-5, atol=1e-5), (sms, got, want)


@pytest.mark.skipif(not HAVE_GXX, reason="g++ not on PATH")
@pytest.mark.parametrize("op", ["mean", "argmax"])
def test_a_0d_output_passes_kgens_checks_and_one_off_by_one_fails(tmp_path, op):
    """Every dim reduced: the emulated default (the split pair, on 64 SMs) on kgen's own
    seeded inputs, judged by the worker's checks against the reference; the same value plus 1
    is rejected."""
    import torch

    from kgen.sandbox.launch import allocate
    from kgen.sandbox.rejected import Rejected
    from kgen.sandbox.validate import check_after_run, compute_reference, make_inputs

    sizes = {"B": 5, "R": 61, "C": 59}  # one row of 17995: over 4 slices of 4096
    spec = _whole(tmp_path, op, sizes)
    family = family_for(spec)
    source = family.render(family.first(SM90, "float32")[0], "float32", SM90)
    contract, _ = parse_contract(source, spec)
    assert [launch.kernel.rsplit("_", 1)[1] for launch in contract.launches_at(
        {**spec.sizes_of(sizes), "SMS": 64})] == ["parts", "finish"]
    inputs = make_inputs(spec, sizes, "float32", seed=3)
    refs = compute_reference(spec, "float32", inputs, sizes, on_gpu=False)
    (got,) = run(source, spec, "float32", sizes, {"x": inputs["x"].double().numpy()}, tmp_path,
                 sms=64).values()
    assert got.shape == ()
    for shift in (0, 1):
        buffers = allocate(spec, sizes, "float32", device="cpu")
        buffers["x"].data.copy_(inputs["x"])
        buffers["out"].data.copy_(torch.tensor(got + shift))
        if shift:
            with pytest.raises(Rejected, match="1 of 1 outputs of out off"):
                check_after_run(spec, "float32", sizes, buffers, inputs, refs, "here")
        else:
            check_after_run(spec, "float32", sizes, buffers, inputs, refs, "here")


def test_the_space_holds_only_runnable_configurations_in_the_spec_layout(tmp_path):
    """The search's space holds only configurations the template can run; the layout is the
    spec's, never searched."""
    family = family_for(_spec(tmp_path, "max", 1))
    space = family.space(SM90, "float32", "dimreduce")
    assert space and all(p.rows == 0 and not dimreduce.problems(p, SM90, "float32")
                         for p in space)
    assert all(q.rows == 0 for p in space[:20] for q in family.neighbours(p, SM90, "float32"))
    assert family.parse(space[3].choices) == space[3]
    assert family.parse(space[3].choices.replace("rows=0", "rows=1")) is None
    too_big = ReduceParams("max", 0, 128, 8, 8, 1)  # 7 x 8 x 128 states of 8 bytes: 56 KiB
    assert any("shared memory" in p for p in dimreduce.problems(too_big, SM90, "float16"))


# ---- from a KernelBench problem ----

PROBLEMS = {  # problem file -> the reduction its probe finds, and whether each output is a row
    "l1_sum_dim": (Reduction("sum", 1), 0),
    "l1_argmax": (Reduction("argmax", 1), 0),
    "l1_mean_dim": (Reduction("mean", 1), 0),
    "l1_min_dim": (Reduction("min", 2), 1),
    "l1_prod_dim": (Reduction("prod", 1), 0),
    "l1_argmin_dim0": (Reduction("argmin", 0), 0),
    "l1_mean_hw": (Reduction("mean", 2, 0.0, 2), 1),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if i else [])
                                  for i, n in enumerate(PROBLEMS)])
def test_each_reduction_problem_gets_the_field(name):
    """Each probe is a subprocess importing torch (seconds), so all but the first are slow."""
    spec = load_problem(DATA / f"{name}.py")
    reduction, rows = PROBLEMS[name]
    assert spec.reduce == reduction and spec.pointwise == "" and spec.same_as == ""
    family = family_for(spec)
    assert isinstance(family, BoundReduce) and family.by_row == rows


@pytest.mark.slow
def test_which_forwards_become_a_reduction(tmp_path):
    """One reduction of the input over one dim, several adjacent ones or all, keepdim or not, any
    spelling; dims that are not adjacent, a dtype= conversion, both outputs of torch.max, or a
    reduction followed by more work do not."""
    text = (DATA / "l1_mean_dim.py").read_text()
    cases = {
        "torch.amax(x, dim=-1, keepdim=True)": Reduction("max", 2),
        "x.sum(0)": Reduction("sum", 0),
        "torch.max(x, 1).values": Reduction("max", 1),
        "x.sum(dim=(1, 2))": Reduction("sum", 1, 0.0, 2),
        "x.sum(dim=(0, 2))": Reduction(),
        "x.sum()": Reduction("sum", 0, 0.0, 3),
        "x.sum(dim=1, dtype=torch.float64)": Reduction(),
        "torch.max(x, 1)": Reduction(),
        "x.sum(dim=1) * 2": Reduction(),
    }
    problem = tmp_path / "other.py"
    for forward, expected in cases.items():
        problem.write_text(text.replace("x.mean(dim=1)", forward))
        assert load_problem(problem).reduce == expected, forward


def test_the_builtin_author_writes_a_reduction_problem_with_the_template(tmp_path):
    """Offline: the template bound to the problem's names, compiled; model_new.py launches it
    by them."""
    path = DATA / "l1_argmin_dim0.py"
    best = builtin_best_offline(path, tmp_path / "run")
    assert "template=dimreduce op=argmin rows=0" in best
    assert "#define OUTER ((long long)(1))" in best and "#define RLEN (d_rows)" in best
    contract, problems = parse_contract(best, load_problem(path))
    assert problems == () and contract.op == "l1_argmin_dim0"
    assert contract.launches[0].args == ("x", "out", "rows", "cols")
    assert "'x', 'out', 'rows', 'cols'" in (tmp_path / "run" / "model_new.py").read_text()
