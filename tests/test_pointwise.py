"""`pointwise: EXPR`: the expression language and its CUDA form; the field in a spec file (one
error naming it); the rendered kernel computes the expression (on the CPU emulator, against a
float64 reading of it) and compiles with nvcc; a KernelBench forward that is a chain of
elementwise ops on its one input gets an expression that computes what its Model computes (in
float64, on the CPU build of torch); the builtin author writes such a problem with the
elementwise template."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import torch
from emulate import HAVE_GXX, run, stored
from helpers import builtin_best_offline

from kgen.arch import parse_arch
from kgen.author.elementwise import EwParams
from kgen.author.families import BoundPointwise, family_for
from kgen.compile import compile_source
from kgen.errors import UsageError
from kgen.loop.candidate import parse_contract
from kgen.ops import build_spec, load_op, spec_yaml
from kgen.ops.kernelbench import load_problem
from kgen.ops.pointwise import check, from_aten, to_cuda
from kgen.ops.sameas import spec_binding

DATA = Path(__file__).parent / "data" / "kernelbench"
ACTIVATIONS = {  # problem file -> the expression its probe finds
    "l1_relu": "max(x, 0)",
    "l1_leaky_relu": "where(x > 0, x, 0.05 * x)",
    "l1_elu": "where(x > 0, x, 0.7 * expm1(x))",
    "l1_softplus": "where(x > 20.0, x, log1p(exp(x)))",
    "l1_hardtanh": "min(max(x, -1.0), 1.0)",
    "l1_gelu": "0.5 * x * (1 + erf(x * 0.7071067811865476))",
    "l1_softsign": "x / (abs(x) + 1.0)",
    "l1_hardsigmoid_4d": "min(max(x / 6 + 0.5, 0), 1)",  # on an NCHW input
}
EVERY = ("where(x >= 0.5, exp(x) + log(abs(x) + 1) - log1p(sigmoid(x)) * expm1(-x), "
         "tanh(erf(x)) / sqrt(x * x + 1) + rsqrt(2.0) * max(min(x, 6), -6) + pow(abs(x), 1.5) "
         "+ x ** 3)")  # every function of the language
SM90 = parse_arch("sm_90", check_nvcc=False)


# ---- the language: a float64 torch reading of it, as the tests' own second implementation ----

_TORCH = {"exp": torch.exp, "log": torch.log, "log1p": torch.log1p, "expm1": torch.expm1,
          "tanh": torch.tanh, "sigmoid": torch.sigmoid, "erf": torch.erf, "abs": torch.abs,
          "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "max": torch.maximum, "min": torch.minimum,
          "pow": torch.pow, "where": torch.where}
_OPS = {ast.Add: torch.add, ast.Sub: torch.sub, ast.Mult: torch.mul, ast.Div: torch.div,
        ast.Pow: torch.pow, ast.Gt: torch.gt, ast.GtE: torch.ge, ast.Lt: torch.lt,
        ast.LtE: torch.le, ast.Eq: torch.eq, ast.NotEq: torch.ne}


def evaluate(text: str, x: torch.Tensor) -> torch.Tensor:
    def value(node: ast.AST) -> torch.Tensor:
        if isinstance(node, ast.Name):
            return x
        if isinstance(node, ast.Constant):
            return torch.full_like(x, float(node.value))
        if isinstance(node, ast.UnaryOp):
            inner = value(node.operand)
            return -inner if isinstance(node.op, ast.USub) else inner
        if isinstance(node, ast.BinOp):
            return _OPS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.Compare):
            return _OPS[type(node.ops[0])](value(node.left), value(node.comparators[0]))
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        return _TORCH[node.func.id](*(value(a) for a in node.args))

    return value(ast.parse(check(text), mode="eval").body)


@pytest.mark.parametrize("text, canonical", [
    ("max(x,0)", "max(x, 0)"),
    ("where(x>0, x, 0.1*x)", "where(x > 0, x, 0.1 * x)"),
    ("(x\n + 1)", "x + 1"),  # one line, whatever the file's layout
    ("x ** -0.5 + pow(x, 3)", "x ** (-0.5) + pow(x, 3)"),
    ("-sigmoid(x) / rsqrt(abs(x) + 1e-05)", "-sigmoid(x) / rsqrt(abs(x) + 1e-05)"),
])
def test_the_language_takes_arithmetic_the_functions_and_where(text, canonical):
    assert check(text) == canonical


@pytest.mark.parametrize("text, words", [
    ("", "empty"),
    ("y + 1", "unknown name 'y'"),
    ("__import__('os').system('true')", "unknown function"),
    ("x.real", "is not allowed"),
    ("torch.relu(x)", "unknown function 'torch.relu'"),
    ("where(x, 1, 0)", "first argument must be a comparison"),
    ("(x > 0) * x", "may only be where()'s first argument"),
    ("where(0 < x < 1, x, 0)", "one comparison"),
    ("max(x)", "max() takes 2 positional arguments"),
    ("exp(x, base=2)", "exp() takes 1 positional argument"),
    ("x ** x", "the exponent of ** must be a number"),
    ("pow(x, x)", "pow()'s exponent must be a number"),
    ("x + 1e39", "not a finite float32 number"),
    ("x + True", "is not a number"),
    ("x + 'a'", "is not a number"),
    ("x; x", "not an expression"),
    ("x + " * 400 + "x", "longer than 1000 characters"),
    ("-" * 60 + "x", "nests deeper than"),
])
def test_what_the_language_refuses_is_said_in_one_line(text, words):
    with pytest.raises(ValueError) as caught:
        check(text)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_the_cuda_form_uses_float_literals_and_accurate_functions():
    assert to_cuda("where(x > 0, x, 0.5 * expm1(x))") == \
        "(((x > 0.0f)) ? (x) : ((0.5f * expm1f(x))))"
    assert to_cuda("x ** 2 + pow(x, 0.5) - sigmoid(-x)") == \
        "(((x * x) + powf(x, 0.5f)) - (1.f / (1.f + expf(-((-x))))))"
    assert to_cuda("min(max(x, -1), 1e-05)") == "fminf(fmaxf(x, (-1.0f)), 1e-05f)"


def test_an_aten_call_the_table_does_not_know_or_cannot_take_gives_nothing():
    assert from_aten("relu.default", ["x"], {}) == "max(x, 0)"
    assert from_aten("add.Tensor", ["x", 2.0], {"alpha": 3}) == "x + 3.0 * 2.0"
    assert from_aten("log_sigmoid_forward.default", ["x"], {}) == ""
    assert from_aten("div.Tensor_mode", ["x", 2.0], {"rounding_mode": "floor"}) == ""
    assert from_aten("gelu.default", ["x"], {"approximate": "cubic"}) == ""
    assert from_aten("relu.default", ["x"], {"inplace": True}) == ""
    assert from_aten("mul.Tensor", ["x", [1, 2]], {}) == ""


# ---- the field in a spec ----

def _rows(**extra) -> dict:
    data = {"name": "act", "sizes": ["B", "D"], "reference": "torch.relu(x)",
            "flops": "B * D", "bytes": "2 * B * D * ELEM",
            "tensors": {"x": {"shape": ["B", "D"], "role": "input"},
                        "out": {"shape": ["B", "D"], "role": "output"}},
            "dtypes": {"float32": {"reference": "float64", "atol": 1e-5, "rtol": 1e-5}},
            "test_sizes": [{"B": 3, "D": 5}], "bench_sizes": [{"B": 16, "D": 16384}],
            "pointwise": "max(x,0)"}
    data.update(extra)
    return data


def test_a_spec_says_pointwise_and_it_binds_its_operand_and_output(tmp_path):
    spec = build_spec(_rows(), tmp_path, "act.yaml")
    assert spec.pointwise == "max(x, 0)" and spec.same_as == ""
    assert spec_binding(spec) == {"X": "x", "Y": "out"}
    assert isinstance(family_for(spec), BoundPointwise)
    assert "pointwise: max(x, 0)" in spec_yaml(spec)
    again = tmp_path / "again.yaml"
    again.write_text(spec_yaml(spec))
    assert load_op(path=again).pointwise == "max(x, 0)"


@pytest.mark.parametrize("extra, words", [
    ({"pointwise": "relu(x)"}, "field 'pointwise': unknown function 'relu'"),
    ({"pointwise": 3}, "field 'pointwise' should be a str"),
    ({"same_as": "silu"}, "fields 'same_as' and 'pointwise' both say"),
    ({"tensors": {"x": {"shape": ["B", "D"], "role": "input"},
                  "y": {"shape": ["B", "D"], "role": "input"},
                  "out": {"shape": ["B", "D"], "role": "output"}}, "reference": "x + y"},
     "field 'pointwise': pointwise takes one operand X and one output Y of the same shape"),
    ({"tensors": {"x": {"shape": ["B", "D"], "role": "input"},
                  "out": {"shape": ["D", "B"], "role": "output"}}},
     r"x[B,D] -> out[D,B] are not one shape of one dim or more"),
])
def test_a_bad_pointwise_field_is_one_error_naming_it(tmp_path, extra, words):
    with pytest.raises(UsageError) as caught:
        build_spec(_rows(**extra), tmp_path, "act.yaml")
    assert words in str(caught.value)


def _spec(tmp_path, expression: str, dtype: str = "float32"):
    reference = "float64" if dtype == "float32" else "float32"
    return build_spec(_rows(pointwise=expression, dtypes={
        dtype: {"reference": reference, "atol": 1e-5, "rtol": 1e-5}}), tmp_path, "act.yaml")


@pytest.mark.nvcc
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_every_function_of_the_language_compiles_in_the_elementwise_template(tmp_path, dtype):
    spec = _spec(tmp_path, EVERY, dtype)
    source = family_for(spec).render(EwParams(op="pointwise"), dtype, SM90)
    assert f"#define KGEN_EXPR ({to_cuda(EVERY)})" in source
    assert "act computes pointwise (its spec says pointwise: where(x >= 0.5," in source
    result = compile_source(source, parse_arch("sm_90"))
    assert result.ok, result.summary
    contract, problems = parse_contract(source, spec)
    assert problems == () and contract.op == "act"
    assert contract.launches[0].args == ("x", "out", "B", "D")


def _emulated_params():
    return [pytest.param(text, marks=[pytest.mark.slow] if i else [])
            for i, text in enumerate([EVERY, *ACTIVATIONS.values()])]


@pytest.mark.skipif(not HAVE_GXX, reason="g++ not on PATH")
@pytest.mark.parametrize("expression", _emulated_params())
def test_the_rendered_kernel_computes_the_expression_on_the_emulator(tmp_path, expression):
    """7 x 301 elements: five blocks of 512 (one step each) on an emulated GPU, and 3 elements
    past the last whole vector, which take the one-at-a-time tail. Normal draws times 8 reach
    softplus's threshold and the far tails of exp and erf."""
    spec = _spec(tmp_path, expression)
    source = family_for(spec).render(EwParams(op="pointwise", threads=128, vec=4, ept=1),
                                     "float32", SM90)
    x = stored(np.random.default_rng(5).standard_normal((7, 301)) * 8, "float32")
    (got,) = run(source, spec, "float32", {"B": 7, "D": 301}, {"x": x}, tmp_path).values()
    want = evaluate(expression, torch.from_numpy(x)).numpy()
    assert np.isfinite(want).all()
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5), float(np.abs(got - want).max())


def _nchw(tmp_path, expression: str):
    """X[B, C, 5, B]: four dims, one a number, one symbol twice."""
    return build_spec(_rows(
        sizes=["B", "C"], pointwise=expression, flops="B * C * B * 5",
        bytes="2 * B * C * 5 * B * ELEM",
        tensors={"x": {"shape": ["B", "C", 5, "B"], "role": "input"},
                 "out": {"shape": ["B", "C", 5, "B"], "role": "output"}},
        test_sizes=[{"B": 3, "C": 7}], bench_sizes=[{"B": 64, "C": 256}]), tmp_path, "act.yaml")


@pytest.mark.nvcc
def test_an_operand_of_any_rank_is_seen_flat_and_its_dims_are_the_arguments(tmp_path):
    """Each size symbol is one int argument (B once, though X uses it twice); the number is
    written into the kernel's product."""
    spec = _nchw(tmp_path, "x * 2")
    source = family_for(spec).render(EwParams(op="pointwise"), "float32", SM90)
    assert "#define KGEN_DIMS , int d_B, int d_C\n" in source
    assert "#define KGEN_TOTAL ((long long)1 * d_B * d_C * 5 * d_B)" in source
    contract, problems = parse_contract(source, spec)
    assert problems == ()
    (launch,) = contract.launches
    assert launch.args == ("x", "out", "B", "C") and launch.grid[0].startswith("cdiv(B*C*5*B,")
    result = compile_source(source, parse_arch("sm_90"))
    assert result.ok, result.summary


@pytest.mark.skipif(not HAVE_GXX, reason="g++ not on PATH")
def test_the_rendered_kernel_computes_the_expression_over_four_dims_on_the_emulator(tmp_path):
    """3 x 7 x 5 x 3 = 315 elements: 78 vectors of 4 and 3 elements past the last."""
    expression = ACTIVATIONS["l1_elu"]
    spec = _nchw(tmp_path, expression)
    source = family_for(spec).render(EwParams(op="pointwise", threads=32, vec=4, ept=1),
                                     "float32", SM90)
    x = stored(np.random.default_rng(6).standard_normal((3, 7, 5, 3)) * 4, "float32")
    (got,) = run(source, spec, "float32", {"B": 3, "C": 7}, {"x": x}, tmp_path).values()
    want = evaluate(expression, torch.from_numpy(x)).numpy()
    assert got.shape == (3, 7, 5, 3)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5), float(np.abs(got - want).max())


# ---- from a KernelBench problem ----

def _model_output(path: Path, x: torch.Tensor) -> torch.Tensor:
    space: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), space)
    return space["Model"](*space["get_init_inputs"]())(x)


def _activation_params():
    return [pytest.param(name, marks=[pytest.mark.slow] if i else [])
            for i, name in enumerate(ACTIVATIONS)]


@pytest.mark.parametrize("name", _activation_params())
def test_each_activation_problem_gets_an_expression_that_computes_its_model(name):
    """Each probe is a subprocess importing torch (seconds), so all but the first are slow.
    In float64, over normal draws scaled past softplus's threshold, and the points where the
    pieces meet."""
    path = DATA / f"{name}.py"
    spec = load_problem(path)
    assert spec.pointwise == ACTIVATIONS[name] and spec.same_as == ""
    assert isinstance(family_for(spec), BoundPointwise)
    torch.manual_seed(1)
    x = torch.cat([torch.randn(4, 1000, dtype=torch.float64) * 12, torch.tensor(
        [[0.0, -0.0, 1.0, -1.0, 20.0, 20.5, -20.5, 3.0, -3.0, 1e-8] * 100],
        dtype=torch.float64)])
    want = _model_output(path, x)
    got = evaluate(spec.pointwise, x)
    assert torch.allclose(got, want, rtol=1e-12, atol=1e-12), float((got - want).abs().max())


@pytest.mark.slow
def test_which_forwards_become_an_expression(tmp_path):
    """A mask used as a number becomes where(c, 1, 0); a 3-D input is taken as a 2-D one; a
    tensor made inside forward, a weight, a reduction or an op the table lacks (logsigmoid)
    give none."""
    text = (DATA / "l1_relu.py").read_text()
    cases = {
        "(x > 0) * x": "where(x > 0.0, 1, 0) * x",
        "x ** 2 + torch.exp(-x)": "x ** 2.0 + exp(-x)",
        "torch.where(x < 1, x, 0.5 * x)": "where(x < 1.0, x, x * 0.5)",
        "torch.nn.functional.relu6(x) / 6": "min(max(x, 0.0), 6.0) / 6.0",
        "x + torch.ones_like(x)": "",
        "torch.nn.functional.logsigmoid(x)": "",
        "x * x.abs().sum(dim=1, keepdim=True)": "",
    }
    problem = tmp_path / "other.py"
    for forward, expected in cases.items():
        problem.write_text(text.replace("torch.relu(x)", forward))
        spec = load_problem(problem)
        assert spec.pointwise == expected, forward
        if expected:
            x = torch.randn(3, 7, dtype=torch.float64)
            assert torch.allclose(evaluate(spec.pointwise, x), _model_output(problem, x)), forward
    problem.write_text(text.replace("torch.randn(batch_size, dim)",
                                    "torch.randn(batch_size, 4, dim)"))
    assert load_problem(problem).pointwise == "max(x, 0)"
    weighted = text.replace("super().__init__()", "super().__init__()\n"
                            "        self.scale = nn.Parameter(torch.ones(1))")
    problem.write_text(weighted.replace("torch.relu(x)", "torch.relu(x) * self.scale"))
    assert load_problem(problem).pointwise == ""


def test_the_builtin_author_writes_an_activation_problem_with_the_elementwise_template(
        tmp_path):
    """Offline: the problem's expression in the elementwise template, compiled, its contract
    bound to the problem's names; model_new.py launches it by them."""
    path = DATA / "l1_leaky_relu.py"
    best = builtin_best_offline(path, tmp_path / "run")
    assert "template=elementwise op=pointwise" in best
    assert "#define KGEN_EXPR ((((x > 0.0f)) ? (x) : ((0.05f * x))))" in best
    contract, problems = parse_contract(best, load_problem(path))
    assert problems == () and contract.op == "l1_leaky_relu"
    assert contract.launches[0].args == ("x", "out", "batch_size", "dim")
    assert "'x', 'out'" in (tmp_path / "run" / "model_new.py").read_text()


def test_the_builtin_author_writes_a_four_dim_activation_problem(tmp_path):
    path = DATA / "l1_hardsigmoid_4d.py"
    best = builtin_best_offline(path, tmp_path / "run")
    contract, problems = parse_contract(best, load_problem(path))
    assert problems == () and contract.op == "l1_hardsigmoid_4d"
    assert contract.launches[0].args == ("x", "out", "batch_size", "channels", "height", "width")
    assert "x[batch_size,channels,height,width] seen flat" in best
