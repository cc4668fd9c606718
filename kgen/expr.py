"""Safe arithmetic over size symbols: integers, + - * // % ( ), cdiv, min, max, and the
comparisons and `and`/`or`/`not` that a launch's `when=` condition needs (true is 1).
Never eval()."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

_FUNCS: dict[str, Callable[..., int]] = {"cdiv": lambda a, b: -(-a // b), "min": min,
                                         "max": max}
_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
           ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
           ast.Mod: lambda a, b: a % b}
_COMPARE = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
            ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
            ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}


class ExprError(ValueError):
    """An expression that is not allowed or cannot be evaluated."""


def check(text: str, symbols: set[str] | frozenset[str]) -> None:
    """Raise ExprError if `text` is malformed or names anything but `symbols` and the functions."""
    evaluate(text, {name: 1 for name in symbols}, dry_run=True)


def evaluate(text: str, values: Mapping[str, int], dry_run: bool = False) -> int:
    """The integer value of `text` with the given symbol values."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"cannot parse expression {text!r}") from exc
    return _walk(tree.body, values, text, dry_run)


def _walk(node: ast.AST, values: Mapping[str, int], text: str, dry_run: bool) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in values:
            known = ", ".join(sorted(values)) or "none"
            raise ExprError(f"unknown name {node.id!r} in {text!r} (allowed: {known})")
        return values[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_walk(node.operand, values, text, dry_run)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left = _walk(node.left, values, text, dry_run)
        right = _walk(node.right, values, text, dry_run)
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right == 0:
            if dry_run:
                return 1
            raise ExprError(f"division by zero in {text!r}")
        return _BINOPS[type(node.op)](left, right)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCS and not node.keywords):
        args = [_walk(a, values, text, dry_run) for a in node.args]
        want = 2 if node.func.id == "cdiv" else None
        if (want and len(args) != want) or not args:
            raise ExprError(f"{node.func.id}() takes {want or 'one or more'} arguments in {text!r}")
        if node.func.id == "cdiv" and args[1] == 0:
            if dry_run:
                return 1
            raise ExprError(f"cdiv by zero in {text!r}")
        return _FUNCS[node.func.id](*args)
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        terms = [_walk(n, values, text, dry_run) for n in (node.left, *node.comparators)]
        return int(all(_COMPARE[type(op)](a, b)
                       for op, a, b in zip(node.ops, terms, terms[1:], strict=False)))
    if isinstance(node, ast.BoolOp):
        results = [_walk(v, values, text, dry_run) != 0 for v in node.values]
        return int(all(results) if isinstance(node.op, ast.And) else any(results))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return int(_walk(node.operand, values, text, dry_run) == 0)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        raise ExprError(f"use // (integer division) or cdiv(), not / in {text!r}")
    raise ExprError(f"not allowed in an expression: {ast.unparse(node)!r} in {text!r} "
                    "(use integers, size symbols, + - * // %, cdiv, min, max, comparisons, "
                    "and/or/not)")
