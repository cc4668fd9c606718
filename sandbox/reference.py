"""Evaluate a spec's torch reference expression (`A @ B`) over named tensors, without eval().

Allowed: the input names, numbers, + - * / @ **, unary minus, `.T`/`.mT`, and calls of
`torch.<name>` / `torch.nn.functional.<name>` from a short allow list with constant keywords.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from kgen.errors import UsageError

_TORCH_FUNCS = frozenset({"matmul", "mm", "bmm", "exp", "log", "tanh", "sigmoid", "softmax",
                          "log_softmax", "sum", "mean", "amax", "amin", "sqrt", "rsqrt", "relu",
                          "gelu", "layer_norm", "rms_norm", "abs", "maximum", "minimum", "where",
                          "cumsum", "transpose", "silu", "square"})
_BINOPS = {ast.Add: "__add__", ast.Sub: "__sub__", ast.Mult: "__mul__", ast.Div: "__truediv__",
           ast.MatMult: "__matmul__", ast.Pow: "__pow__"}


def evaluate(text: str, tensors: Mapping[str, Any]) -> Any:
    """The value of the reference expression with these tensors bound to their names."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise UsageError(f"cannot parse the reference expression {text!r}") from exc
    return _walk(tree.body, tensors, text)


def _walk(node: ast.AST, tensors: Mapping[str, Any], text: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.Name) and node.id in tensors:
        return tensors[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _walk(node.left, tensors, text), _walk(node.right, tensors, text)
        return getattr(left, _BINOPS[type(node.op)])(right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_walk(node.operand, tensors, text)
    if isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
        return getattr(_walk(node.value, tensors, text), node.attr)
    if isinstance(node, ast.Call):
        func = _function(node.func, text)
        args = [_walk(a, tensors, text) for a in node.args]
        kwargs = {k.arg: _constant(k.value, text) for k in node.keywords if k.arg}
        return func(*args, **kwargs)
    raise UsageError(f"not allowed in a reference expression: {ast.unparse(node)!r} in {text!r}")


def _function(node: ast.AST, text: str) -> Any:
    import torch

    dotted = ast.unparse(node)
    for prefix, module in (("torch.nn.functional.", torch.nn.functional), ("F.",
                           torch.nn.functional), ("torch.", torch)):
        name = dotted[len(prefix):]
        if dotted.startswith(prefix) and name in _TORCH_FUNCS and hasattr(module, name):
            return getattr(module, name)
    raise UsageError(f"function {dotted!r} is not allowed in a reference expression {text!r} "
                     f"(allowed: torch.{{{', '.join(sorted(_TORCH_FUNCS))}}})")


def _constant(node: ast.AST, text: str) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_constant(node.operand, text)
    if isinstance(node, ast.Tuple):
        return tuple(_constant(e, text) for e in node.elts)
    raise UsageError(f"keyword arguments must be constants in {text!r}")
