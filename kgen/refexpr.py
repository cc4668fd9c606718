"""Evaluate a spec's torch reference expression (`A @ B`) over named tensors, without eval().

Allowed: the bound names (tensors, size symbols, scalar parameters), numbers, strings, True/False/
None, tuples and lists of those, + - * / @ **, unary minus, `.T`/`.mT`, and calls of
`torch.<name>` / `torch.nn.functional.<name>` (or `F.<name>`) from a short allow list, whose
keyword arguments are built from the same pieces (`dim=-1`, `normalized_shape=(N,)`).
A spec file is untrusted input, so the work is bounded before anything runs: the text's length,
its syntax nodes and nesting, and constant folding (`**` takes a small constant exponent, and
arithmetic on plain numbers never builds a huge integer: `A * 10 ** 100000000` is refused at once).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterable, Mapping
from typing import Any

from kgen import expr
from kgen.errors import UsageError
from kgen.expr import MAX_DEPTH, shown

MAX_EXPONENT = 64  # `x ** e` takes a numeric constant e with |e| <= this
MAX_BITS = 1024  # plain-number arithmetic stays below 2**1024

_TORCH_FUNCS = frozenset({"matmul", "mm", "bmm", "exp", "log", "tanh", "sigmoid", "softmax",
                          "log_softmax", "sum", "mean", "amax", "amin", "sqrt", "rsqrt", "relu",
                          "gelu", "layer_norm", "rms_norm", "abs", "maximum", "minimum", "where",
                          "cumsum", "transpose", "silu", "square", "argmax", "argmin", "conv2d",
                          "conv1d", "linear", "scaled_dot_product_attention", "mv", "addmm",
                          "clamp", "erf", "tril", "triu", "baddbmm", "einsum", "max_pool2d",
                          "avg_pool2d", "group_norm", "hardtanh", "leaky_relu", "elu",
                          "softplus", "prod", "logsumexp", "var", "std", "max", "min", "cumprod"})
_BINOPS = {ast.Add: "__add__", ast.Sub: "__sub__", ast.Mult: "__mul__", ast.Div: "__truediv__",
           ast.MatMult: "__matmul__", ast.Pow: "__pow__"}
_SEQUENCES = (str, tuple, list)


def evaluate(text: str, tensors: Mapping[str, Any]) -> Any:
    """The value of the reference expression with these tensors bound to their names."""
    text = str(text).strip()
    return _walk(_parse(text), tensors, text, _function, 0)


def check(text: str, names: Iterable[str]) -> None:
    """UsageError unless `text` is a valid reference over these input names (no torch needed)."""
    text = str(text).strip()
    _walk(_parse(text), {name: _Symbol() for name in names}, text, _stand_in, 0)


class _Symbol:
    """Stands in for a tensor when only the form of the expression is checked."""

    def __getattr__(self, name: str) -> Any:
        return self if name in ("T", "mT") else (lambda *args, **kwargs: self)

    def __neg__(self) -> _Symbol:
        return self


def _parse(text: str) -> ast.AST:
    """The syntax tree within the size expressions' limits (length, nodes, nesting)."""
    try:
        return expr.parse(text)
    except expr.ExprError as exc:
        raise UsageError(f"the reference expression: {exc}") from exc


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fold(op: type, left: Any, right: Any, text: str) -> None:
    """Refuse what would take unbounded time or memory before Python computes it."""
    if op is ast.Pow:
        if not _number(right) or abs(right) > MAX_EXPONENT:
            raise UsageError(f"`**` takes a numeric constant exponent of at most {MAX_EXPONENT} "
                             f"in {shown(text)}")
        if _number(left) and abs(left) > 1 and abs(right) * math.log2(abs(left)) > MAX_BITS:
            raise UsageError(f"a constant power too large to compute in {shown(text)}")
    elif op is ast.Mult and isinstance(left, int) and isinstance(right, int):
        if left.bit_length() + right.bit_length() > MAX_BITS:
            raise UsageError(f"a constant product too large to compute in {shown(text)}")


def _walk(node: ast.AST, tensors: Mapping[str, Any], text: str, functions: Any,
          depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise UsageError(f"the reference expression is nested too deeply: {shown(text)}")
    if isinstance(node, ast.Constant) and (node.value is None
                                           or isinstance(node.value, (int, float, str))):
        if isinstance(node.value, int) and node.value.bit_length() > MAX_BITS:
            raise UsageError(f"a constant too large in {shown(text)}")
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_walk(e, tensors, text, functions, depth + 1) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.Name) and node.id in tensors:
        return tensors[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left = _walk(node.left, tensors, text, functions, depth + 1)
        right = _walk(node.right, tensors, text, functions, depth + 1)
        if isinstance(left, _SEQUENCES) or isinstance(right, _SEQUENCES):
            raise UsageError(f"arithmetic on strings, tuples or lists is not allowed in "
                             f"{shown(text)}")
        _fold(type(node.op), left, right, text)
        return getattr(left, _BINOPS[type(node.op)])(right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_walk(node.operand, tensors, text, functions, depth + 1)
    if isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
        return getattr(_walk(node.value, tensors, text, functions, depth + 1), node.attr)
    if isinstance(node, ast.Call):
        func = functions(node.func, text)
        args = [_walk(a, tensors, text, functions, depth + 1) for a in node.args]
        if any(k.arg is None for k in node.keywords):
            raise UsageError(f"**kwargs is not allowed in a reference expression {shown(text)}")
        kwargs = {k.arg: _walk(k.value, tensors, text, functions, depth + 1)
                  for k in node.keywords if k.arg}
        return func(*args, **kwargs)
    piece = ast.get_source_segment(text, node) or type(node).__name__
    raise UsageError(f"not allowed in a reference expression: {shown(piece, 40)} in "
                     f"{shown(text)}")


_PREFIXES = ("torch.nn.functional.", "F.", "torch.")


def _allowed(node: ast.AST, text: str) -> tuple[str, str]:
    """(prefix, name) of an allowed function, else UsageError."""
    dotted = ast.get_source_segment(text, node) or type(node).__name__
    for prefix in _PREFIXES:
        if dotted.startswith(prefix) and dotted[len(prefix):] in _TORCH_FUNCS:
            return prefix, dotted[len(prefix):]
    raise UsageError(f"function {shown(dotted, 40)} is not allowed in a reference expression "
                     f"{shown(text)} (allowed: torch.{{{', '.join(sorted(_TORCH_FUNCS))}}})")


def _function(node: ast.AST, text: str) -> Any:
    import torch

    prefix, name = _allowed(node, text)
    module = torch if prefix == "torch." else torch.nn.functional
    if not hasattr(module, name):
        raise UsageError(f"{prefix}{name} does not exist in this torch ({text!r})")
    return getattr(module, name)


def _stand_in(node: ast.AST, text: str) -> Any:
    _allowed(node, text)
    return lambda *args, **kwargs: _Symbol()
