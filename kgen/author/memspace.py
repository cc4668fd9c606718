"""What the memory-bound families (elementwise, rowwise, transpose) share: their `choices` text
and reading it back, the op signature each template is written for, the valid space over a
family's axes, one-step neighbours, and the row length a default is chosen for.

A configuration is a frozen dataclass whose fields are its parameters (`op` first where a
template serves several ops); `choices` writes every field, `template=NAME k=v ...`, so the
history can name each configuration exactly.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Callable
from typing import Any

from kgen.author import memcost
from kgen.spec import OpSpec

Signature = tuple[tuple[str, str, tuple[str, ...], str | None], ...]  # name, role, shape, dtype

# The shapes the templates are written for: M x N row-major, the last dim contiguous.
MN = ("M", "N")


def choices_of(template: str, p: Any) -> str:
    return f"template={template} " + " ".join(f"{f.name}={getattr(p, f.name)}"
                                              for f in dataclasses.fields(p))


_PAIR = re.compile(r"(\w+)=([\w.]+)")


def parse_params(cls: type, template: str, text: str) -> Any | None:
    """The configuration a `choices` text names, or None when it is not exactly one of cls."""
    m = re.search(rf"\btemplate={template}\b(?P<rest>.*)", text or "")
    if not m:
        return None
    pairs = dict(_PAIR.findall(m.group("rest").splitlines()[0] if m.group("rest") else ""))
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in pairs:
            return None
        raw = pairs[f.name]
        if f.type in ("int", int):
            if not raw.isdigit():
                return None
            values[f.name] = int(raw)
        else:
            values[f.name] = raw
    return cls(**values)


def signature(spec: OpSpec) -> tuple[tuple[str, ...], Signature, tuple[str, ...]]:
    """Sizes, tensors (name, role, shape, fixed dtype) and parameter names of a spec."""
    return (spec.sizes, tuple((t.name, t.role, t.shape, t.dtype) for t in spec.tensors),
            tuple(p.name for p in spec.params))


def space(make: Callable[..., Any], axes: dict[str, tuple[int, ...]],
          valid: Callable[[Any], bool]) -> list[Any]:
    """Every valid configuration over the axes, in a fixed order (the search is deterministic)."""
    found = []
    for values in itertools.product(*axes.values()):
        p = make(**dict(zip(axes, values, strict=True)))
        if valid(p):
            found.append(p)
    return found


def neighbours(p: Any, axes: dict[str, tuple[int, ...]], valid: Callable[[Any], bool]
               ) -> list[Any]:
    """Valid configurations one step away along one axis."""
    out = []
    for name, values in axes.items():
        here = getattr(p, name)
        if here not in values:
            continue
        i = values.index(here)
        for j in (i - 1, i + 1):
            if 0 <= j < len(values):
                q = dataclasses.replace(p, **{name: values[j]})
                if valid(q):
                    out.append(q)
    return out


def row_length(spec: OpSpec | None, default: int = 4096, symbol: str = "N") -> int:
    """N (the size `symbol`: N under another name, for a `same_as` op) at the op's first bench
    size (the size a default is chosen for), else `default`."""
    if spec is not None and spec.bench_sizes and symbol in spec.bench_sizes[0]:
        return int(spec.bench_sizes[0][symbol])
    return default


def row_lengths(spec: OpSpec | None, symbol: str = "N") -> tuple[int, ...]:
    """N (as `symbol`) at each of the op's bench sizes that names one."""
    if spec is None:
        return ()
    return tuple(int(sizes[symbol]) for sizes in spec.bench_sizes if symbol in sizes)


def product(dims: tuple[str, ...]) -> str:
    """The size expression of several dims taken together ("1" for none)."""
    return " * ".join(dims) or "1"


def c_product(dims: tuple[str, ...]) -> str:
    """The same in a kernel whose size arguments are d_SYMBOL (numbers written in)."""
    return product(tuple(d if d.isdigit() else f"d_{d}" for d in dims))


# The split-row kernels' static workspace (rowwise.cu, dimreduce.cu): one state per slice of
# every row.
MAX_PARTS = 1 << 16


def few_rows(count: int) -> bool:
    """Rows too few for a block (group) each to fill the GPU: at most a quarter of the SMs (of
    the GPU the author assumes, for whether a file carries the split-row kernels; its launch
    lines then compare with the running GPU's own count, `split_condition`)."""
    return 4 * count <= memcost.ASSUMED_SMS


def split_condition(rows: str, length: str, piece: int) -> str:
    """Where a file's launch lines cut rows across blocks (slices of `piece` elements): rows
    fewer than a quarter of the GPU's SMs, each longer than four slices, and the slices of all
    rows within the workspace."""
    return (f"4 * {rows} <= SMS and {length} > {4 * piece} and {rows} * cdiv({length}, {piece})"
            f" <= {MAX_PARTS}")


def pow2_at_least(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())
