"""Safe arithmetic over size symbols: integers, + - * // % ( ), cdiv, min, max, and the
comparisons and `and`/`or`/`not` that a launch's `when=` condition needs (true is 1). Never eval().

Expressions come from models (launch contracts) and from spec files, so the work is bounded before
anything is evaluated: the text's length, the number of syntax nodes, the nesting depth, and every
value (an intermediate larger than MAX_VALUE is refused, so no product grows without bound).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

MAX_LENGTH = 1000  # characters; a real grid or shape expression is a few dozen
MAX_NODES = 300  # syntax nodes
MAX_DEPTH = 40  # nesting
MAX_VALUE = 2**63  # no size, product or intermediate leaves the 64-bit range

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


def shown(text: str, width: int = 60) -> str:
    """The expression as messages quote it: clipped, so a 100k-term one stays one short line."""
    text = " ".join(str(text).split())
    return repr(text if len(text) <= width else text[:width - 3] + "...")


def check(text: str, symbols: set[str] | frozenset[str]) -> None:
    """Raise ExprError if `text` is malformed or names anything but `symbols` and the functions."""
    evaluate(text, {name: 1 for name in symbols}, dry_run=True)


def evaluate(text: str, values: Mapping[str, int], dry_run: bool = False) -> int:
    """The integer value of `text` with the given symbol values."""
    text = str(text).strip()
    return _walk(parse(text), values, text, dry_run, 0)


def parse(text: str) -> ast.expr:
    """The syntax tree of `text`, within the length, node and depth limits."""
    text = str(text).strip()
    if len(text) > MAX_LENGTH:
        raise ExprError(f"expression too long ({len(text)} characters, at most {MAX_LENGTH}): "
                        f"{shown(text)}")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ExprError(f"cannot parse expression {shown(text)}") from exc
    nodes = sum(1 for _ in ast.walk(tree))
    if nodes > MAX_NODES:
        raise ExprError(f"expression too complex ({nodes} syntax nodes, at most {MAX_NODES}): "
                        f"{shown(text)}")
    return tree.body


def _bounded(value: int, text: str) -> int:
    if abs(value) > MAX_VALUE:
        raise ExprError(f"value out of range (beyond 2**63) in {shown(text)}")
    return value


def _walk(node: ast.AST, values: Mapping[str, int], text: str, dry_run: bool, depth: int) -> int:
    if depth > MAX_DEPTH:
        raise ExprError(f"expression nested too deeply (more than {MAX_DEPTH}): {shown(text)}")
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return _bounded(node.value, text)
    if isinstance(node, ast.Name):
        if node.id not in values:
            known = ", ".join(sorted(values)) or "none"
            raise ExprError(f"unknown name {node.id[:40]!r} in {shown(text)} (allowed: {known})")
        return values[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_walk(node.operand, values, text, dry_run, depth + 1)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left = _walk(node.left, values, text, dry_run, depth + 1)
        right = _walk(node.right, values, text, dry_run, depth + 1)
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right == 0:
            if dry_run:
                return 1
            raise ExprError(f"division by zero in {shown(text)}")
        return _bounded(_BINOPS[type(node.op)](left, right), text)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCS and not node.keywords):
        args = [_walk(a, values, text, dry_run, depth + 1) for a in node.args]
        want = 2 if node.func.id == "cdiv" else None
        if (want and len(args) != want) or not args:
            raise ExprError(f"{node.func.id}() takes {want or 'one or more'} arguments in "
                            f"{shown(text)}")
        if node.func.id == "cdiv" and args[1] == 0:
            if dry_run:
                return 1
            raise ExprError(f"cdiv by zero in {shown(text)}")
        return _FUNCS[node.func.id](*args)
    if isinstance(node, (ast.Compare, ast.BoolOp)) or (
            isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        return _condition(node, values, text, dry_run, depth)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        raise ExprError(f"use // (integer division) or cdiv(), not / in {shown(text)}")
    piece = ast.get_source_segment(text, node) or type(node).__name__
    raise ExprError(f"not allowed in an expression: {shown(piece, 40)} in "
                    f"{shown(text)} (use integers, size symbols, + - * // %, cdiv, min, max, "
                    "comparisons, and/or/not)")


def _condition(node: ast.AST, values: Mapping[str, int], text: str, dry_run: bool,
               depth: int) -> int:
    """A comparison or a boolean combination, as 1 or 0."""
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        terms = [_walk(n, values, text, dry_run, depth + 1)
                 for n in (node.left, *node.comparators)]
        return int(all(_COMPARE[type(op)](a, b)
                       for op, a, b in zip(node.ops, terms, terms[1:], strict=False)))
    if isinstance(node, ast.BoolOp):
        results = [_walk(v, values, text, dry_run, depth + 1) != 0 for v in node.values]
        return int(all(results) if isinstance(node.op, ast.And) else any(results))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return int(_walk(node.operand, values, text, dry_run, depth + 1) == 0)
    raise ExprError(f"not allowed in an expression: {shown(ast.unparse(node), 40)} in "
                    f"{shown(text)}")
