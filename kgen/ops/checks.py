"""Field checks for a spec file (untrusted input): each raises ValueError naming the field, which
the loader turns into one UsageError line."""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from kgen import expr

MAX_SIZE = 2**31 - 1  # a size is a CUDA int argument
MAX_ELEMENTS = 2**31  # elements in one tensor at any test or bench size (8 GiB of float32)
_NAME = re.compile(r"[a-z0-9_]{1,64}")  # names a folder (runs/<time>-<name>-<arch>): never a path
_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}")
_RESERVED = {"cdiv", "min", "max", "ELEM", "torch", "F", "T", "mT"}


def op_name(value: Any, where: str = "name") -> str:
    """An op name: lower-case letters, digits and '_' (it becomes part of a folder name)."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise ValueError(f"field '{where}' must be 1-64 characters of a-z, 0-9 and _ "
                         f"(got {_show(value)})")
    return value


def symbol(value: Any, where: str) -> str:
    """A size or tensor name: an identifier expressions and prompts can use as it is."""
    if not isinstance(value, str) or not _SYMBOL.fullmatch(value) or keyword.iskeyword(value) \
            or value in _RESERVED:
        raise ValueError(f"field '{where}': {_show(value)} is not a usable name (a letter or _, "
                         "then letters, digits or _, at most 32; not a keyword or cdiv/min/max)")
    return value


def mapping(value: Any, where: str) -> Mapping[Any, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"field '{where}' should be a mapping (got {type(value).__name__})")
    return value


def nonempty(value: Any, where: str, what: str) -> Any:
    if not value:
        raise ValueError(f"field '{where}' needs at least one {what}")
    return value


def tolerance(value: Any, where: str) -> float:
    """atol/rtol: a finite number, not negative (a bool is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(
            value) or value < 0:
        raise ValueError(f"field '{where}' must be a finite number >= 0 (got {_show(value)})")
    return float(value)


def size_value(value: Any, where: str) -> int:
    """One size: an integer (not a bool) from 1 to 2**31-1."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SIZE:
        raise ValueError(f"field '{where}' must be an integer from 1 to {MAX_SIZE} "
                         f"(got {_show(value)})")
    return value


def elements(shapes: Mapping[str, tuple[str, ...]], sizes: Iterable[dict[str, int]],
             where: str) -> None:
    """Every tensor at every size stays within MAX_ELEMENTS (the worker allocates them)."""
    for entry in sizes:
        for name, shape in shapes.items():
            count = 1
            for dim in shape:
                count *= expr.evaluate(dim, entry)
            if count < 0 or count > MAX_ELEMENTS:
                raise ValueError(f"field '{where}': tensor {name} would hold {count} elements at "
                                 f"{entry} (at most {MAX_ELEMENTS}, none negative)")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
