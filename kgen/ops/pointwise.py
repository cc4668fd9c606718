"""`pointwise: EXPR` in a spec: the op is Y = EXPR(X), element by element, over its one operand X
and one output Y of the same shape, any rank (bound in order: kgen.ops.sameas), so the builtin
author can write it with its elementwise template, which sees them flat. A KernelBench problem whose
forward is a chain of elementwise aten ops on its one input (ReLU, sigmoid, ELU, softplus, ...) gets
the field from its probe (`from_aten`).

EXPR is a small language over `x` (never eval()'d): numbers; + - * /; unary minus; `a ** c`
with a numeric constant c; the functions exp, log, log1p, expm1, tanh, sigmoid, erf, abs, sqrt,
rsqrt, max(a, b), min(a, b), pow(a, c); and where(COND, a, b), where COND is one comparison
(< <= > >= == !=). The kernel evaluates it in float32 with CUDA's accurate functions (expf, erff,
tanhf, ...). max and min are fmaxf and fminf, which return the other operand for a NaN where torch
propagates it. Validation still runs the op's own reference, so a wrong expression costs failed
candidates, never a wrong result.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Sequence
from typing import Any

from kgen.expr import MAX_DEPTH, MAX_LENGTH, MAX_NODES

# name -> (argument count, how CUDA writes it; pow: _power, which needs its constant's value)
_FUNCS: dict[str, tuple[int, Callable[..., str] | None]] = {
    "exp": (1, lambda a: f"expf({a})"), "log": (1, lambda a: f"logf({a})"),
    "log1p": (1, lambda a: f"log1pf({a})"), "expm1": (1, lambda a: f"expm1f({a})"),
    "tanh": (1, lambda a: f"tanhf({a})"), "erf": (1, lambda a: f"erff({a})"),
    "sigmoid": (1, lambda a: f"(1.f / (1.f + expf(-({a}))))"),
    "abs": (1, lambda a: f"fabsf({a})"), "sqrt": (1, lambda a: f"sqrtf({a})"),
    "rsqrt": (1, lambda a: f"rsqrtf({a})"), "max": (2, lambda a, b: f"fmaxf({a}, {b})"),
    "min": (2, lambda a, b: f"fminf({a}, {b})"), "pow": (2, None),
    "where": (3, lambda c, a, b: f"(({c}) ? ({a}) : ({b}))"),
}
FUNCTIONS = tuple(_FUNCS)
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_COMPARE = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
            ast.NotEq: "!="}


def check(text: str) -> str:
    """The expression in one canonical line; ValueError saying what is wrong."""
    return ast.unparse(_parse(text))


def to_cuda(text: str) -> str:
    """The expression as a CUDA float expression in the variable `x`."""
    return _cuda(_parse(text).body)


def _parse(text: str) -> ast.Expression:
    if not isinstance(text, str) or not text.strip():
        raise ValueError("the expression is empty")
    if len(text) > MAX_LENGTH:
        raise ValueError(f"the expression is longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an expression: {exc.msg}") from exc
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise ValueError(f"the expression has more than {MAX_NODES} parts")
    _check(tree.body, 0, condition=False)
    return tree


def _check(node: ast.AST, depth: int, condition: bool) -> None:
    """Raise ValueError unless `node` is in the language; `condition`: where()'s first slot."""
    if depth > MAX_DEPTH:
        raise ValueError(f"the expression nests deeper than {MAX_DEPTH}")
    inner = depth + 1
    if isinstance(node, ast.Compare):
        if not condition:
            raise ValueError("a comparison may only be where()'s first argument")
        if len(node.ops) != 1 or type(node.ops[0]) not in _COMPARE:
            raise ValueError("where()'s condition is one comparison (< <= > >= == !=)")
        for side in (node.left, node.comparators[0]):
            _check(side, inner, condition=False)
        return
    if condition:
        raise ValueError("where()'s first argument must be a comparison, such as x > 0")
    if isinstance(node, ast.Name):
        if node.id != "x":
            raise ValueError(f"unknown name {node.id!r}: the expression's one variable is x")
    elif isinstance(node, ast.Constant):
        _number(node.value)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        _check(node.operand, inner, condition=False)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        _check(node.left, inner, condition=False)
        _constant(node.right, "the exponent of **")
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        _check(node.left, inner, condition=False)
        _check(node.right, inner, condition=False)
    elif isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else ""
        if name not in _FUNCS:
            raise ValueError(f"unknown function {ast.unparse(node.func)[:30]!r} (known: "
                             f"{', '.join(FUNCTIONS)})")
        count = _FUNCS[name][0]
        if node.keywords or len(node.args) != count:
            raise ValueError(f"{name}() takes {count} positional argument"
                             f"{'s' if count > 1 else ''}")
        for i, arg in enumerate(node.args):
            if name == "pow" and i == 1:
                _constant(arg, "pow()'s exponent")
            else:
                _check(arg, inner, condition=name == "where" and i == 0)
    else:
        raise ValueError(f"{ast.unparse(node)[:40]!r} is not allowed (numbers, x, + - * /, "
                         f"** by a constant, and {', '.join(FUNCTIONS)})")


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{value!r} is not a number")
    if not math.isfinite(value) or abs(value) > 3.4e38:
        raise ValueError(f"{value!r} is not a finite float32 number")
    return float(value)


def _constant(node: ast.AST, what: str) -> float:
    sign = 1.0
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        sign, node = (-1.0 if isinstance(node.op, ast.USub) else 1.0), node.operand
    if not isinstance(node, ast.Constant):
        raise ValueError(f"{what} must be a number")
    return sign * _number(node.value)


def _literal(value: float) -> str:
    text = repr(float(value))  # shortest round-trip form: 0.5, 2.0, 1e-05
    return f"{text}f"


def _cuda(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return "x"
    if isinstance(node, ast.Constant):
        return _literal(_number(node.value))
    if isinstance(node, ast.UnaryOp):
        return f"({'-' if isinstance(node.op, ast.USub) else '+'}{_cuda(node.operand)})"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return _power(_cuda(node.left), _constant(node.right, ""))
    if isinstance(node, ast.BinOp):
        return f"({_cuda(node.left)} {_BINOPS[type(node.op)]} {_cuda(node.right)})"
    if isinstance(node, ast.Compare):
        return (f"({_cuda(node.left)} {_COMPARE[type(node.ops[0])]} "
                f"{_cuda(node.comparators[0])})")
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    write = _FUNCS[node.func.id][1]
    if write is None:  # pow
        return _power(_cuda(node.args[0]), _constant(node.args[1], ""))
    return write(*(_cuda(a) for a in node.args))


def _power(base: str, exponent: float) -> str:
    # small integer powers as products: exact, and defined for a negative base as torch is
    if exponent in (1.0, 2.0, 3.0):
        return "(" + " * ".join([base] * int(exponent)) + ")"
    return f"powf({base}, {_literal(exponent)})"


# ---- from a KernelBench forward's aten calls (kgen.ops.kbprobe) ----

Arg = str | float | None  # an expression (a tensor computed so far), a number, or None


def from_aten(name: str, args: Sequence[Arg], kwargs: dict[str, Arg]) -> str:
    """The expression of one elementwise aten call (`relu.default`, `add.Tensor`, ...) whose
    tensor arguments are the expressions given, or "" when the call is not one this knows."""
    builder = _ATEN.get(name)
    if builder is None:
        return ""
    try:
        text = builder(*args, **kwargs)
    except (TypeError, ValueError):  # an argument the builder does not take, or of a wrong kind
        return ""
    return text if len(text) <= MAX_LENGTH else ""


def _e(a: Arg) -> str:
    """An argument as an operand: an expression in parentheses, or a number."""
    if isinstance(a, str):
        return a if a == "x" else f"({a})"
    if isinstance(a, (int, float)) and not isinstance(a, bool):
        return repr(_number(a))
    raise ValueError(f"{a!r} is not an operand")


def _scaled(a: Arg, alpha: Arg) -> str:
    return _e(a) if alpha in (1, 1.0) else f"{_e(alpha)} * {_e(a)}"


def _clamp(x: Arg, lo: Arg = None, hi: Arg = None) -> str:
    text = _e(x)
    if lo is not None:
        text = f"max({text}, {_e(lo)})"
    if hi is not None:
        text = f"min({text}, {_e(hi)})"
    return text


def _elu(x: Arg, alpha: Arg = 1.0, scale: Arg = 1.0, input_scale: Arg = 1.0) -> str:
    neg = f"{_e(alpha)} * expm1({_scaled(x, input_scale)})"
    return _scaled(f"where({_e(x)} > 0, {_e(x)}, {neg})", scale)


def _softplus(x: Arg, beta: Arg = 1.0, threshold: Arg = 20.0) -> str:
    bx = _scaled(x, beta)
    soft = f"log1p(exp({bx}))" if beta in (1, 1.0) else f"log1p(exp({bx})) / {_e(beta)}"
    return f"where({bx} > {_e(threshold)}, {_e(x)}, {soft})"


def _gelu(x: Arg, approximate: Arg = "none") -> str:
    if approximate == "tanh":
        u = f"0.7978845608028654 * ({_e(x)} + 0.044715 * {_e(x)} ** 3)"
        return f"0.5 * {_e(x)} * (1 + tanh({u}))"
    if approximate != "none":
        raise ValueError(approximate)
    return f"0.5 * {_e(x)} * (1 + erf({_e(x)} * 0.7071067811865476))"


def _div(a: Arg, b: Arg, rounding_mode: Arg = None) -> str:
    if rounding_mode is not None:
        raise ValueError(rounding_mode)
    return f"{_e(a)} / {_e(b)}"


def _call(function: str) -> Callable[[Arg], str]:
    return lambda a: f"{function}({_e(a)})"


def _compare(op: str) -> Callable[[Arg, Arg], str]:
    return lambda a, b: f"{_e(a)} {op} {_e(b)}"


_COMPARISONS = (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="), ("eq", "=="),
                ("ne", "!="))
_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772, 1.0507009873554805

_ATEN: dict[str, Callable[..., str]] = {
    "relu.default": lambda x: f"max({_e(x)}, 0)",
    "sigmoid.default": lambda x: f"sigmoid({_e(x)})",
    "silu.default": lambda x: f"{_e(x)} * sigmoid({_e(x)})",
    "gelu.default": _gelu,
    "leaky_relu.default": lambda x, slope=0.01: f"where({_e(x)} > 0, {_e(x)}, "
                                                f"{_e(slope)} * {_e(x)})",
    "elu.default": _elu,
    "selu.default": lambda x: _elu(x, _SELU_ALPHA, _SELU_SCALE),
    "celu.default": lambda x, alpha=1.0: f"where({_e(x)} > 0, {_e(x)}, "
                                         f"{_e(alpha)} * expm1({_e(x)} / {_e(alpha)}))",
    "softplus.default": _softplus,
    "mish.default": lambda x: f"{_e(x)} * tanh({_softplus(x)})",
    "hardtanh.default": lambda x, lo=-1.0, hi=1.0: _clamp(x, lo, hi),
    "clamp.default": _clamp,
    "clamp_min.default": lambda x, lo: _clamp(x, lo),
    "clamp_max.default": lambda x, hi: _clamp(x, None, hi),
    "hardsigmoid.default": lambda x: f"min(max({_e(x)} / 6 + 0.5, 0), 1)",
    "hardswish.default": lambda x: f"{_e(x)} * min(max({_e(x)} + 3, 0), 6) / 6",
    "threshold.default": lambda x, th, value: f"where({_e(x)} > {_e(th)}, {_e(x)}, "
                                              f"{_e(value)})",
    "where.self": lambda c, a, b: f"where({c}, {_e(a)}, {_e(b)})",
    "add.Tensor": lambda a, b, alpha=1: f"{_e(a)} + {_scaled(b, alpha)}",
    "add.Scalar": lambda a, b, alpha=1: f"{_e(a)} + {_scaled(b, alpha)}",
    "sub.Tensor": lambda a, b, alpha=1: f"{_e(a)} - {_scaled(b, alpha)}",
    "sub.Scalar": lambda a, b, alpha=1: f"{_e(a)} - {_scaled(b, alpha)}",
    "rsub.Scalar": lambda a, b, alpha=1: f"{_e(b)} - {_scaled(a, alpha)}",
    "mul.Tensor": lambda a, b: f"{_e(a)} * {_e(b)}",
    "mul.Scalar": lambda a, b: f"{_e(a)} * {_e(b)}",
    "div.Tensor": _div, "div.Scalar": _div, "div.Tensor_mode": _div,
    "neg.default": lambda x: f"-{_e(x)}",
    "reciprocal.default": lambda x: f"1 / {_e(x)}",
    "pow.Tensor_Scalar": lambda x, c: f"{_e(x)} ** {repr(_number(c))}",
    "maximum.default": lambda a, b: f"max({_e(a)}, {_e(b)})",
    "minimum.default": lambda a, b: f"min({_e(a)}, {_e(b)})",
    **{f"{f}.default": _call(f)
       for f in ("exp", "log", "log1p", "expm1", "tanh", "erf", "abs", "sqrt", "rsqrt")},
    **{f"{name}.{kind}": _compare(op) for name, op in _COMPARISONS
       for kind in ("Scalar", "Tensor")},
    **{name: lambda x, **_: _e(x)
       for name in ("clone.default", "alias.default", "detach.default")},
}
