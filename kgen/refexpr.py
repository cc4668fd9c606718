"""Evaluate a spec's torch reference expression (`A @ B`) over named tensors, without eval().

Allowed: the bound names (tensors, size symbols, scalar parameters), numbers, strings, True/False/
None, tuples and lists of those, + - * / @ **, unary minus, `.T`/`.mT`, and calls of
`torch.<name>` / `torch.nn.functional.<name>` (or `F.<name>`) from a short allow list, whose
keyword arguments are built from the same pieces (`dim=-1`, `normalized_shape=(N,)`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from typing import Any

from kgen.errors import UsageError

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
    return _walk(_parse(text), tensors, text, _function)


def check(text: str, names: Iterable[str]) -> None:
    """UsageError unless `text` is a valid reference over these input names (no torch needed)."""
    _walk(_parse(text), {name: _Symbol() for name in names}, text, _stand_in)


class _Symbol:
    """Stands in for a tensor when only the form of the expression is checked."""

    def __getattr__(self, name: str) -> Any:
        return self if name in ("T", "mT") else (lambda *args, **kwargs: self)

    def __neg__(self) -> _Symbol:
        return self


def _parse(text: str) -> ast.AST:
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise UsageError(f"cannot parse the reference expression {text!r}") from exc


def _walk(node: ast.AST, tensors: Mapping[str, Any], text: str, functions: Any) -> Any:
    if isinstance(node, ast.Constant) and (node.value is None
                                           or isinstance(node.value, (int, float, str))):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_walk(e, tensors, text, functions) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.Name) and node.id in tensors:
        return tensors[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left = _walk(node.left, tensors, text, functions)
        right = _walk(node.right, tensors, text, functions)
        if isinstance(left, _SEQUENCES) or isinstance(right, _SEQUENCES):
            raise UsageError(f"arithmetic on strings, tuples or lists is not allowed in {text!r}")
        return getattr(left, _BINOPS[type(node.op)])(right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_walk(node.operand, tensors, text, functions)
    if isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
        return getattr(_walk(node.value, tensors, text, functions), node.attr)
    if isinstance(node, ast.Call):
        func = functions(node.func, text)
        args = [_walk(a, tensors, text, functions) for a in node.args]
        if any(k.arg is None for k in node.keywords):
            raise UsageError(f"**kwargs is not allowed in a reference expression {text!r}")
        kwargs = {k.arg: _walk(k.value, tensors, text, functions) for k in node.keywords if k.arg}
        return func(*args, **kwargs)
    raise UsageError(f"not allowed in a reference expression: {ast.unparse(node)!r} in {text!r}")


_PREFIXES = ("torch.nn.functional.", "F.", "torch.")


def _allowed(node: ast.AST, text: str) -> tuple[str, str]:
    """(prefix, name) of an allowed function, else UsageError."""
    dotted = ast.unparse(node)
    for prefix in _PREFIXES:
        if dotted.startswith(prefix) and dotted[len(prefix):] in _TORCH_FUNCS:
            return prefix, dotted[len(prefix):]
    raise UsageError(f"function {dotted!r} is not allowed in a reference expression {text!r} "
                     f"(allowed: torch.{{{', '.join(sorted(_TORCH_FUNCS))}}})")


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
