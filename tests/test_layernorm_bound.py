"""`same_as: layernorm` of any rank: X normalized over its last dims with weights of their shape
(a KernelBench nn.LayerNorm over one or several trailing dims). The binding's one error naming the
field; the row-wise template rendered under the spec's own names on the CPU emulator against numpy
in float64 (one kernel and a ladder of two, vector and one-element paths), compiled by nvcc in
every dtype; KernelBench problems read as `same_as: layernorm` with forward's eps as a parameter,
the emulated kernel's output judged by kgen's own checks against the Model; and the builtin author
writing such a problem offline."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from emulate import HAVE_GXX, judge, run, stored
from helpers import builtin_best_offline

from kgen.arch import parse_arch
from kgen.author.families import BoundRows, family_for
from kgen.author.rowwise import RowParams
from kgen.compile import compile_source
from kgen.errors import UsageError
from kgen.loop.candidate import parse_contract
from kgen.ops import build_spec
from kgen.ops.kernelbench import load_problem
from kgen.sandbox.rejected import Rejected
from kgen.sandbox.validate import compute_reference, make_inputs

DATA = Path(__file__).parent / "data" / "kernelbench"
SM90 = parse_arch("sm_90", check_nvcc=False)
EPS = 1e-3  # large enough that a kernel leaving it out is visibly off at these tolerances


def _spec(tmp_path, dtype: str = "float32", **change):
    """inp[B, C, H, W] normalized over [C, H, W] (gamma, beta) -> res, eps named epsilon."""
    reference = "float64" if dtype == "float32" else "float32"
    data = {"name": "ln4", "sizes": ["B", "C", "H", "W"],
            "params": {"epsilon": {"dtype": "float32", "value": EPS}},
            "tensors": {"inp": {"shape": ["B", "C", "H", "W"], "role": "input"},
                        "gamma": {"shape": ["C", "H", "W"], "role": "weight"},
                        "beta": {"shape": ["C", "H", "W"], "role": "weight"},
                        "res": {"shape": ["B", "C", "H", "W"], "role": "output"}},
            "reference": "torch.nn.functional.layer_norm(inp, (C, H, W), gamma, beta, epsilon)",
            "dtypes": {dtype: {"reference": reference, "atol": 1e-4, "rtol": 1e-4}},
            "test_sizes": [{"B": 3, "C": 5, "H": 3, "W": 7}],
            "bench_sizes": [{"B": 16, "C": 4, "H": 16, "W": 64}],
            "flops": "8 * B * C * H * W", "bytes": "2 * B * C * H * W * ELEM",
            "same_as": "layernorm"}
    data.update(change)
    return build_spec(data, tmp_path, "ln4.yaml")


def numpy_layernorm(x, w, b, dims: int, eps: float = EPS):
    rows = x.reshape(int(np.prod(x.shape[:x.ndim - dims])), -1).astype(np.float64)
    mean = rows.mean(axis=1, keepdims=True)
    var = ((rows - mean) ** 2).mean(axis=1, keepdims=True)
    return ((rows - mean) / np.sqrt(var + eps)).reshape(x.shape) * w + b


# ---- the field ----

def _tensors(**shapes):
    roles = {"inp": "input", "gamma": "weight", "beta": "weight", "res": "output"}
    return {name: {"shape": shape, "role": roles[name]} for name, shape in shapes.items()}


@pytest.mark.parametrize("change, words", [
    ({"params": {}, "reference": "torch.nn.functional.layer_norm(inp, (C, H, W), gamma, beta)"},
     "this spec has 0 parameters, not one float32 eps"),
    ({"tensors": _tensors(inp=["B", "C", "H", "W"], gamma=["C", "H"], beta=["C", "H"],
                          res=["B", "C", "H", "W"])},
     "are not X, weights of X's last dims, Y of X's shape"),
    ({"tensors": _tensors(inp=["B", "C", "H", "W"], gamma=["C", "H", "W"],
                          beta=["C", "H", "W"], res=["B", "C", "H"])},
     "are not X, weights of X's last dims"),
    ({"tensors": {"inp": {"shape": ["B", "C", "H", "W"], "role": "input"},
                  "gamma": {"shape": ["C", "H", "W"], "role": "input"},
                  "beta": {"shape": ["C", "H", "W"], "role": "weight"},
                  "res": {"shape": ["B", "C", "H", "W"], "role": "output"}}},
     "not an input then two weights"),
    ({"tensors": _tensors(inp=["2", "3", "4", "5"], gamma=["3", "4", "5"], beta=["3", "4", "5"],
                          res=["2", "3", "4", "5"]), "reference": "torch.nn.functional.layer_norm("
                          "inp, (3, 4, 5), gamma, beta, epsilon)"},
     "inp's shape names no size symbol"),
])
def test_a_bad_layernorm_binding_is_one_error_naming_the_field(tmp_path, change, words):
    with pytest.raises(UsageError) as caught:
        _spec(tmp_path, **change)
    assert "field 'same_as': layernorm takes an operand X" in str(caught.value)
    assert words in str(caught.value)


def test_the_family_binds_the_spec_names_and_the_normalized_dims(tmp_path):
    family = family_for(_spec(tmp_path))
    assert isinstance(family, BoundRows)
    assert family.dims.leading == ("B",) and family.dims.trailing == ("C", "H", "W")
    assert family.rows == (4 * 16 * 64,) and family.row == 4096
    source = family.render(family.first(SM90, "float32")[0], "float32", SM90)
    contract, problems = parse_contract(source, _spec(tmp_path))
    assert problems == () and contract.op == "ln4"
    assert contract.launches[0].args == ("inp", "gamma", "beta", "res", "B", "C", "H", "W",
                                         "epsilon")
    assert "#define ROW_N (d_C * d_H * d_W)" in source and "#define ROW_M (d_B)" in source


# ---- the template ----

@pytest.mark.nvcc
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_the_bound_layernorm_compiles_in_every_dtype_with_its_ladder(tmp_path, dtype):
    """Many rows: a kernel for rows of 4096, one for rows of 32768; few rows (2): those and the
    split pair."""
    for rows, launches in ((64, 2), (2, 4)):
        spec = _spec(tmp_path, dtype, bench_sizes=[{"B": rows, "C": 4, "H": 16, "W": 64},
                                                   {"B": rows, "C": 16, "H": 32, "W": 64}])
        family = family_for(spec)
        source = family.render(family.first(SM90, dtype)[0], dtype, SM90)
        contract, problems = parse_contract(source, spec)
        assert problems == () and len(contract.launches) == launches
        assert contract.launches[1].when.startswith("(C * H * W > 4096")
        result = compile_source(source, parse_arch("sm_90"))
        assert result.ok, result.summary


def _emulated():
    """(params, sizes, bench rows): one kernel over rows whose length is a multiple of the
    vector (vector path) and odd (one element per access); two kernels, a row past the first's
    chunk taking the second (streamed with online statistics there: its chunk is shorter)."""
    return [(RowParams("layernorm", 64, 2, 4, 2, 1), {"B": 3, "C": 4, "H": 3, "W": 8}, []),
            (RowParams("layernorm", 32, 2, 4, 2, 1), {"B": 5, "C": 5, "H": 3, "W": 7}, []),
            pytest.param(RowParams("layernorm", 64, 1, 4, 2, 1), {"B": 2, "C": 5, "H": 9, "W": 13},
                         [{"B": 1, "C": 1, "H": 1, "W": 900}], marks=pytest.mark.slow)]


@pytest.mark.skipif(not HAVE_GXX, reason="g++ not on PATH")
@pytest.mark.parametrize("p, sizes, bench", _emulated())
def test_the_rendered_kernel_normalizes_each_row_of_the_trailing_dims(tmp_path, p, sizes,
                                                                      bench):
    """The emulator's outputs start as zeros; the inputs are not centered (a kernel that skips
    the mean fails), the weights and biases are random (one that skips either fails)."""
    spec = _spec(tmp_path, bench_sizes=bench or [sizes])
    source = family_for(spec).render(p, "float32", SM90)
    rng = np.random.default_rng(sizes["W"])
    shape = (sizes["B"], sizes["C"], sizes["H"], sizes["W"])
    x = stored(rng.standard_normal(shape) * 2 + 3, "float32")
    w = stored(rng.uniform(0.5, 1.5, shape[1:]), "float32")
    b = stored(rng.uniform(-1, 1, shape[1:]), "float32")
    (got,) = run(source, spec, "float32", sizes, {"inp": x, "gamma": w, "beta": b},
                 tmp_path).values()
    want = numpy_layernorm(x, w, b, 3)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5), float(np.abs(got - want).max())


# ---- few long rows: each cut across blocks ----

def _rmsnorm_spec(tmp_path, m: int, n: int):
    """The shipped rmsnorm's signature under its own name, with bench rows of M x N."""
    data = {"name": "rmsnorm", "sizes": ["M", "N"],
            "params": {"eps": {"dtype": "float32", "value": EPS}},
            "tensors": {"X": {"shape": ["M", "N"], "role": "input"},
                        "weight": {"shape": ["N"], "role": "weight"},
                        "Y": {"shape": ["M", "N"], "role": "output"}},
            "reference": "X * torch.rsqrt(torch.mean(X * X, -1, keepdim=True) + eps) * weight",
            "dtypes": {"float32": {"reference": "float64", "atol": 1e-4, "rtol": 1e-4}},
            "test_sizes": [{"M": m, "N": n}], "bench_sizes": [{"M": m, "N": n}],
            "flops": "3 * M * N", "bytes": "2 * M * N * ELEM"}
    return build_spec(data, tmp_path, "rmsnorm.yaml")


def test_files_for_few_rows_add_the_split_pair_and_others_do_not(tmp_path):
    few = _spec(tmp_path, bench_sizes=[{"B": 4, "C": 64, "H": 256, "W": 256}])
    many = _spec(tmp_path, bench_sizes=[{"B": 4096, "C": 4, "H": 16, "W": 64}])
    kernels = {}
    for label, spec in (("few", few), ("many", many)):
        family = family_for(spec)
        source = family.render(family.first(SM90, "float32")[0], "float32", SM90)
        contract, problems = parse_contract(source, spec)
        assert problems == ()
        kernels[label] = [launch.kernel for launch in contract.launches]
        if label == "few":
            parts, apply = contract.launches[-2:]
            split = parts.when.replace(" ", "")
            assert apply.when == parts.when and split.startswith("(4*B<=SMSandC*H*W>")
            assert all(launch.when.replace(" ", "").endswith(f"not{split})")
                       for launch in contract.launches[:-2])
            assert parts.grid == (f"cdiv(C * H * W, {family.first(SM90, 'float32')[0].chunk})",
                                  "B")
    assert kernels["few"][-2:] == ["layernorm_row_f32_parts", "layernorm_row_f32_apply"]
    assert not any(k.endswith(("_parts", "_apply")) for k in kernels["many"])


def _split_cases():
    """(spec maker, p, sizes): layernorm over three dims with 16-byte accesses and with single
    elements (odd rows), rmsnorm's shipped signature; slices of 256 (32 threads x 4 x 2)."""
    p = RowParams("layernorm", 32, 1, 4, 2, 1)
    return [("layernorm", p, {"B": 2, "C": 4, "H": 5, "W": 64}),
            ("layernorm", p, {"B": 3, "C": 3, "H": 5, "W": 101}),
            pytest.param("rmsnorm", RowParams("rmsnorm", 32, 1, 4, 2, 0), {"M": 3, "N": 1501},
                         marks=pytest.mark.slow)]


@pytest.mark.skipif(not HAVE_GXX, reason="g++ not on PATH")
@pytest.mark.parametrize("op, p, sizes", _split_cases())
def test_rows_cut_across_blocks_give_what_whole_rows_give(tmp_path, op, p, sizes):
    """On a GPU of 64 SMs these few rows take the split pair (a state per slice in the static
    workspace, then every slice from the combined states); on one of 3 the whole-row kernels.
    Both against numpy in float64."""
    rng = np.random.default_rng(sum(sizes.values()))
    shape = tuple(sizes.values())
    x = stored(rng.standard_normal(shape) * 2 + 3, "float32")
    if op == "layernorm":
        spec = _spec(tmp_path, bench_sizes=[sizes])
        w = stored(rng.uniform(0.5, 1.5, shape[1:]), "float32")
        b = stored(rng.uniform(-1, 1, shape[1:]), "float32")
        inputs, want = {"inp": x, "gamma": w, "beta": b}, numpy_layernorm(x, w, b, 3)
    else:
        spec = _rmsnorm_spec(tmp_path, sizes["M"], sizes["N"])
        w = stored(rng.uniform(0.5, 1.5, shape[1:]), "float32")
        inputs = {"X": x, "weight": w}
        want = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + EPS) * w
    source = family_for(spec).render(p, "float32", SM90)
    contract, _ = parse_contract(source, spec)
    values = {**spec.sizes_of(sizes), "SMS": 64}
    assert [launch.kernel.rsplit("_", 1)[1] for launch in contract.launches_at(values)] == \
        ["parts", "apply"]
    for sms in (64, 3):
        (got,) = run(source, spec, "float32", sizes, inputs, tmp_path, sms=sms).values()
        assert np.allclose(got, want, rtol=1e-5, atol=1e-5), (sms, float(np.abs(got - want).max()))


# ---- from a KernelBench problem ----

_PROBLEMS: dict[str, object] = {}


def _problem(name: str):
    if name not in _PROBLEMS:
        _PROBLEMS[name] = load_problem(DATA / f"{name}.py")
    return _PROBLEMS[name]


@pytest.mark.parametrize("name, eps, weights", [
    ("l1_layernorm", 1e-5, ("ln_weight", "ln_bias")),
    pytest.param("l1_layernorm_3d", 1e-6, ("norm_weight", "norm_bias"), marks=pytest.mark.slow)])
def test_a_layernorm_problem_is_same_as_layernorm_with_forwards_eps(name, eps, weights):
    spec = _problem(name)
    assert spec.same_as == "layernorm" and [(p.name, p.value) for p in spec.params] == \
        [("eps", eps)]
    assert tuple(t.name for t in spec.weights) == weights
    assert isinstance(family_for(spec), BoundRows)


@pytest.mark.slow
def test_a_layernorm_without_its_affine_or_with_more_after_it_is_not(tmp_path):
    text = (DATA / "l1_layernorm.py").read_text()
    plain = tmp_path / "plain.py"
    plain.write_text(text.replace("elementwise_affine=True", "elementwise_affine=False"))
    more = tmp_path / "more.py"
    more.write_text(text.replace("return self.ln(x)", "return self.ln(x).relu()"))
    assert load_problem(plain).same_as == "" and load_problem(more).same_as == ""
    # without its affine it is a standardization over the last dim (kgen.ops.reduction)
    assert load_problem(plain).reduce.op == "layernorm" and load_problem(more).reduce.op == ""


@pytest.mark.skipif(not HAVE_GXX, reason="g++ not on PATH")
def test_the_emulated_kernel_passes_kgens_checks_against_the_model_and_a_biasless_one_fails(
        tmp_path):
    """The problem's own seeded input and weights (random affine), the Model's forward as the
    reference, kgen's tolerance and guard checks; the same kernel with the bias zeroed misses."""
    spec = _problem("l1_layernorm_3d")
    sizes = spec.test_sizes[0]
    family = family_for(spec)
    source = family.render(family.first(SM90, "float32")[0], "float32", SM90)
    inputs = make_inputs(spec, sizes, "float32", seed=5)
    refs = compute_reference(spec, "float32", inputs, sizes, on_gpu=False)
    judge(source, spec, "float32", sizes, inputs, refs, tmp_path)
    arrays = {k: v.double().numpy() for k, v in inputs.items()}
    biasless = {**arrays, "norm_bias": np.zeros_like(arrays["norm_bias"])}
    with pytest.raises(Rejected):
        judge(source, spec, "float32", sizes, inputs, refs, tmp_path, arrays=biasless)


@pytest.mark.slow
def test_the_builtin_author_writes_a_layernorm_problem_under_its_names(tmp_path):
    best = builtin_best_offline(DATA / "l1_layernorm_3d.py", tmp_path / "run")
    assert "template=rowwise op=layernorm" in best
    contract, problems = parse_contract(best, _problem("l1_layernorm_3d"))
    assert problems == () and contract.op == "l1_layernorm_3d"
    assert contract.launches[0].args == ("x", "norm_weight", "norm_bias", "out", "batch_size",
                                         "features", "dim1", "dim2", "eps")
    model_new = (tmp_path / "run" / "model_new.py").read_text()
    assert "'eps': ('float', 1e-06)" in model_new
