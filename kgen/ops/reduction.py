"""`reduce: {op: sum, dim: 1}` in a spec: the op reduces its one operand X over one dim, so the
builtin author can write it with its dim-reduction template (kgen.author.dimreduce): a
KernelBench `torch.sum(x, dim=1)`, `torch.mean`, `torch.max(x, dim)[0]`, `torch.amin`,
`torch.prod`, `torch.argmax` or `torch.argmin` problem.

X may have any number of dims; its one output Y has X's shape with the reduced dim dropped, or
kept as a dim of 1 (keepdim). Either way X is, in memory, [OUTER, R, INNER] (OUTER the product of
the dims before the reduced one, INNER of those after) and Y is [OUTER, INNER]. sum, mean, max,
min and prod give the run's dtype; argmax and argmin give int64 indices, the first one on ties
(as torch does). As with `same_as`, validation still runs the op's own reference, so a wrong
claim costs failed candidates, never a wrong result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kgen.spec import Param, Reduction, Tensor

OPS = ("sum", "mean", "max", "min", "prod", "argmax", "argmin")
INDEX_OPS = ("argmax", "argmin")  # int64 results
FORM = ("reduce takes one operand X (2-D or more) and one output Y: X's shape with the reduced "
        "dim dropped or kept as 1, in the run's dtype (int64 for argmax and argmin), with no "
        "parameters")


@dataclass(frozen=True)
class Bound:
    """A reduction bound to a spec's names: X's shape split around the reduced dim."""

    x: str
    y: str
    outer: tuple[str, ...]  # X's dims before the reduced one (sizes or numbers)
    r: str  # the reduced dim
    inner: tuple[str, ...]  # X's dims after it

    @property
    def rows(self) -> bool:
        """True when the reduced dim is X's last: each output reduces one contiguous row."""
        return not self.inner


def parse(value: Any) -> Reduction:
    """The `reduce` field's value ({op: sum, dim: 1}); ValueError naming the field."""
    if not isinstance(value, dict) or set(value) != {"op", "dim"}:
        raise ValueError("field 'reduce' should be a mapping with op and dim (e.g. {op: sum, "
                         "dim: 1})")
    op, dim = value["op"], value["dim"]
    if op not in OPS:
        raise ValueError(f"field 'reduce.op': {op!r} is not a reduction kgen knows (known: "
                         f"{', '.join(OPS)})")
    if type(dim) is not int:
        raise ValueError(f"field 'reduce.dim' should be an integer, not {dim!r}")
    return Reduction(op, dim)


def bind(reduction: Reduction, tensors: Sequence[Tensor], sizes: Sequence[str],
         params: Sequence[Param] = ()) -> tuple[Reduction, Bound]:
    """The reduction with its dim made non-negative, and its binding to the spec's names;
    ValueError naming the field when the tensors do not have the form."""
    operands = [t for t in tensors if t.role != "output"]
    outputs = [t for t in tensors if t.role == "output"]
    why = _mismatch(reduction, operands, outputs, set(sizes), params)
    if why:
        raise ValueError(f"field 'reduce': {FORM}; {why}")
    x = operands[0]
    dim = reduction.dim % len(x.shape)
    return Reduction(reduction.op, dim), Bound(x.name, outputs[0].name, x.shape[:dim],
                                               x.shape[dim], x.shape[dim + 1:])


def _mismatch(reduction: Reduction, operands: list[Tensor], outputs: list[Tensor],
              sizes: set[str], params: Sequence[Param]) -> str:
    if len(operands) != 1 or len(outputs) != 1:
        return f"this spec has {len(operands)} operands and {len(outputs)} outputs"
    if params:
        return f"this spec has parameters ({', '.join(p.name for p in params)})"
    (x,), y = operands, outputs[0]
    if x.dtype:
        return f"{x.name} sets its own dtype"
    want = "int64" if reduction.op in INDEX_OPS else None
    if y.dtype != want:
        return (f"{reduction.op} gives {want or 'the run dtype'}, and {y.name} has "
                f"{'dtype ' + y.dtype if y.dtype else 'the run dtype'}")
    if len(x.shape) < 2:
        return f"{x.name} has {len(x.shape)} dim(s)"
    if not -len(x.shape) <= reduction.dim < len(x.shape):
        return f"dim {reduction.dim} is out of range for {x.name}'s {len(x.shape)} dims"
    odd = [d for d in x.shape if d not in sizes and not d.isdigit()]
    if odd:
        return f"{x.name}'s dim {odd[0]} is neither a size symbol nor a number"
    if all(d.isdigit() for d in x.shape):
        return f"{x.name}'s shape names no size symbol"
    dim = reduction.dim % len(x.shape)
    dropped = x.shape[:dim] + x.shape[dim + 1:]
    kept = y.shape[:dim] + y.shape[dim + 1:]
    if y.shape != dropped and not (len(y.shape) == len(x.shape) and kept == dropped):
        return (f"{y.name}[{','.join(y.shape)}] is not {x.name}[{','.join(x.shape)}] without "
                f"dim {dim}")
    return ""


# The aten ops KernelBench's reductions dispatch to (torch.sum(x, dim=1), x.mean(1, True),
# torch.max(x, dim=1)[0], torch.amax, torch.argmin(...)): the op, and whether its dim argument is
# a list (sum, mean, amax, amin) or an int.
ATEN = {"sum.dim_IntList": ("sum", True), "mean.dim": ("mean", True),
        "amax.default": ("max", True), "amin.default": ("min", True),
        "max.dim": ("max", False), "min.dim": ("min", False), "prod.dim_int": ("prod", False),
        "argmax.default": ("argmax", False), "argmin.default": ("argmin", False)}


def from_aten(name: str, args: Sequence[Any], kwargs: dict[str, Any]) -> Reduction | None:
    """The reduction an aten call is, over one dim (keepdim either way), or None: several dims,
    all of them, a dtype= conversion or an op the table lacks."""
    if name not in ATEN or kwargs or len(args) < 2:
        return None
    op, listed = ATEN[name]
    dim = args[1]
    if listed:
        if not isinstance(dim, (list, tuple)) or len(dim) != 1:
            return None
        dim = dim[0]
    if type(dim) is not int:
        return None
    return Reduction(op, dim)
