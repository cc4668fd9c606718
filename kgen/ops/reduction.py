"""`reduce: {op: sum, dim: 1}` in a spec: the op reduces its one operand X over one dim, so the
builtin author can write it with its dim-reduction template (kgen.author.dimreduce): a
KernelBench `torch.sum(x, dim=1)`, `torch.mean`, `torch.max(x, dim)[0]`, `torch.amin`,
`torch.prod`, `torch.argmax` or `torch.argmin` problem.

X may have any number of dims; its one output Y has X's shape with the reduced dim dropped, or
kept as a dim of 1 (keepdim). Either way X is, in memory, [OUTER, R, INNER] (OUTER the product of
the dims before the reduced one, INNER of those after) and Y is [OUTER, INNER]. Several adjacent
dims (`dim: [1, 2]`, or every dim: torch.sum(x), torch.norm(x, p='fro')) are reduced as one, R
their product. sum, mean, max, min and prod give the run's dtype; argmax and argmin give int64
indices, the first one on ties (as torch does). As with `same_as`, validation still runs the
op's own reference, so a wrong claim costs failed candidates, never a wrong result.

The norms divide X by a norm of it over the dim, so Y has X's shape: l1norm x / sum(|x|),
l2norm x / sqrt(sum(x^2)), rmsnorm x / sqrt(mean(x^2) + eps) (`reduce: {op: rmsnorm, dim: 1,
eps: 1e-5}`): KernelBench's L1Norm, L2Norm and RMSNorm (over channels) problems, read from their
aten calls by `norm_from_aten`. layernorm is a layer norm without weights, (x - mean) /
sqrt(var + eps) with the biased variance over the dims (`reduce: {op: layernorm, dim: [2, 3],
eps: 1e-5}`): F.layer_norm without weight and bias, nn.InstanceNorm2d (affine off, its default:
over H and W), and nn.GroupNorm without its affine with one group (over C, H and W) or a group
per channel (over H and W), read by `standardize_from_aten`. Only rmsnorm and layernorm take
eps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kgen.spec import Param, Reduction, Tensor

REDUCTIONS = ("sum", "mean", "max", "min", "prod", "argmax", "argmin")  # Y without the dim
# X divided by a norm over the dim (layernorm: X less its mean, then divided): Y is X's shape
NORMS = ("l1norm", "l2norm", "rmsnorm", "layernorm")
EPS_OPS = ("rmsnorm", "layernorm")  # the ops that take eps
OPS = (*REDUCTIONS, *NORMS)
INDEX_OPS = ("argmax", "argmin")  # int64 results
FORM = ("reduce takes one operand X (2-D or more) and one output Y: X's shape with the reduced "
        "dim(s) dropped or kept as 1 (X's shape itself for the norms), in the "
        "run's dtype (int64 for argmax and argmin), with no parameters")


@dataclass(frozen=True)
class Bound:
    """A reduction bound to a spec's names: X's shape split around the reduced dim."""

    x: str
    y: str
    outer: tuple[str, ...]  # X's dims before the reduced ones (sizes or numbers)
    r: tuple[str, ...]  # the reduced dims (one, or several adjacent: R is their product)
    inner: tuple[str, ...]  # X's dims after them

    @property
    def rows(self) -> bool:
        """True when the reduced dim is X's last: each output reduces one contiguous row."""
        return not self.inner


def parse(value: Any) -> Reduction:
    """The `reduce` field's value ({op: sum, dim: 1}, {op: sum, dim: [1, 2]}, {op: rmsnorm,
    dim: 1, eps: 1e-5}, {op: layernorm, dim: [2, 3], eps: 1e-5}); ValueError naming the field.
    Several dims must be adjacent, in increasing order, all counted from the front or all from
    the back ([1, 2], [-2, -1])."""
    if not isinstance(value, dict) or not {"op", "dim"} <= set(value) <= {"op", "dim", "eps"}:
        raise ValueError("field 'reduce' should be a mapping with op and dim, and eps for "
                         "rmsnorm and layernorm (e.g. {op: sum, dim: 1})")
    op, dim, eps = value["op"], value["dim"], value.get("eps", 0.0)
    if op not in OPS:
        raise ValueError(f"field 'reduce.op': {op!r} is not a reduction kgen knows (known: "
                         f"{', '.join(OPS)})")
    dims = dim if isinstance(dim, list) else [dim]
    if not dims or any(type(d) is not int for d in dims):
        raise ValueError(f"field 'reduce.dim' should be an integer or a list of adjacent ones, "
                         f"not {dim!r}")
    if "eps" in value and op not in EPS_OPS:
        raise ValueError(f"field 'reduce.eps': only rmsnorm and layernorm take eps, not {op}")
    if type(eps) not in (int, float) or not 0 <= eps < 1e30:
        raise ValueError(f"field 'reduce.eps' should be a number >= 0, not {eps!r}")
    if any(b != a + 1 for a, b in zip(dims, dims[1:], strict=False)) or \
            (min(dims) < 0 <= max(dims)):
        raise ValueError(f"field 'reduce.dim': {dim} are not adjacent dims in increasing order, "
                         "all counted from the front or all from the back")
    return Reduction(op, dims[0], float(eps), len(dims))


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
    dim, end = reduction.dim % len(x.shape), reduction.dim % len(x.shape) + reduction.count
    bound = Bound(x.name, outputs[0].name, x.shape[:dim], x.shape[dim:end], x.shape[end:])
    return Reduction(reduction.op, dim, reduction.eps, reduction.count), bound


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
    if not -len(x.shape) <= reduction.dim < len(x.shape) or \
            reduction.dim % len(x.shape) + reduction.count > len(x.shape):
        shown = reduction.dim if reduction.count == 1 else list(
            range(reduction.dim, reduction.dim + reduction.count))
        return f"dim {shown} is out of range for {x.name}'s {len(x.shape)} dims"
    odd = [d for d in x.shape if d not in sizes and not d.isdigit()]
    if odd:
        return f"{x.name}'s dim {odd[0]} is neither a size symbol nor a number"
    if all(d.isdigit() for d in x.shape):
        return f"{x.name}'s shape names no size symbol"
    dim, end = reduction.dim % len(x.shape), reduction.dim % len(x.shape) + reduction.count
    if reduction.op in NORMS:
        return "" if y.shape == x.shape else (f"{reduction.op} gives {x.name}'s shape, and "
                                              f"{y.name} is [{','.join(y.shape)}]")
    dropped = x.shape[:dim] + x.shape[end:]
    kept = y.shape[:dim] + y.shape[end:]
    if y.shape != dropped and not (len(y.shape) == len(x.shape) and kept == dropped):
        which = f"dim {dim}" if reduction.count == 1 else f"dims {dim} to {end - 1}"
        return (f"{y.name}[{','.join(y.shape)}] is not {x.name}[{','.join(x.shape)}] without "
                f"{which}")
    return ""


# The aten ops KernelBench's reductions dispatch to (torch.sum(x, dim=1), x.mean(1, True),
# torch.max(x, dim=1)[0], torch.amax, torch.argmin(...)): the op, and whether its dim argument is
# a list (sum, mean, amax, amin: one dim or several) or an int. Over every dim (torch.sum(x),
# x.mean(), torch.max(x), torch.amax(x), torch.argmax(x): the flat index) they dispatch to
# ALL_DIMS's, with the tensor alone.
ATEN = {"sum.dim_IntList": ("sum", True), "mean.dim": ("mean", True),
        "amax.default": ("max", True), "amin.default": ("min", True),
        "max.dim": ("max", False), "min.dim": ("min", False), "prod.dim_int": ("prod", False),
        "argmax.default": ("argmax", False), "argmin.default": ("argmin", False)}
ALL_DIMS = {"sum.default": "sum", "mean.default": "mean", "max.default": "max",
            "min.default": "min", "amax.default": "max", "amin.default": "min",
            "prod.default": "prod", "argmax.default": "argmax", "argmin.default": "argmin"}


def adjacent(dims: Sequence[Any], rank: int) -> tuple[int, int] | None:
    """(first, count) of dims that are one or several adjacent dims of a tensor of `rank` dims
    (negative ones counted from the end, in any order), else None."""
    if not dims or any(type(d) is not int or not -rank <= d < rank for d in dims):
        return None
    found = sorted({d % rank for d in dims})
    if len(found) != len(dims) or found[-1] - found[0] != len(found) - 1:
        return None
    return found[0], len(found)


def from_aten(name: str, args: Sequence[Any], kwargs: dict[str, Any],
              rank: int) -> Reduction | None:
    """The reduction an aten call on a tensor of `rank` dims is, over one dim, several adjacent
    ones or all of them (keepdim either way), or None: dims that are not adjacent, a dtype=
    conversion or an op the tables lack."""
    if kwargs:
        return None
    if name in ALL_DIMS and (len(args) == 1 or (name.startswith("arg") and len(args) == 2
                                                and args[1] is None)):
        return Reduction(ALL_DIMS[name], 0, 0.0, rank)
    if name not in ATEN or len(args) < 2:
        return None
    op, listed = ATEN[name]
    dims = args[1] if listed else [args[1]]
    if not isinstance(dims, (list, tuple)):
        return None
    found = adjacent(dims, rank)
    return None if found is None else Reduction(op, found[0], 0.0, found[1])


def norm_from_aten(calls: Sequence[tuple[str, Sequence[Any], Any]], x: Any,
                   out: Any) -> Reduction | None:
    """The norm a forward's aten calls compute, or None. `calls` are (aten name, args, result)
    in order, tensors compared by identity with X and the output. Read: x / sum(|x|, d, keepdim),
    x / norm(x, 2, d, keepdim) (linalg_vector_norm) or x / sqrt(sum(x^2)), x / sqrt(mean(x^2, d,
    keepdim) + eps) or x * rsqrt(...) (x^2 as x ** 2 or x * x); d one dim or several adjacent
    ones, or none at all for every dim (torch.norm(x, p='fro'), whose 0-d result broadcasts).
    Every call must take part."""
    known: dict[int, tuple] = {id(x): ("x",)}  # tensor -> what it is, in terms of X

    def what(value: Any) -> tuple:
        return known.get(id(value), ("?",))

    rank = len(x.shape)

    def over(dims: Any, keep: Any) -> tuple[int, int] | None:
        """(first, count) of the dims a reduction kept for broadcasting reads: one or several
        adjacent dims with keepdim, or every dim (no dims: a 0-d result broadcasts too)."""
        if dims is None or (isinstance(dims, (list, tuple)) and not dims):
            return 0, rank
        ok = isinstance(dims, (list, tuple)) and keep is True
        return adjacent(dims, rank) if ok else None

    for name, args, result in calls:
        a = [what(v) for v in args[:2]]
        found: tuple | None = None
        if name == "abs.default" and a[0] == ("x",):
            found = ("abs",)
        elif (name == "pow.Tensor_Scalar" and a[0] == ("x",) and args[1] == 2) or (
                name == "mul.Tensor" and a == [("x",), ("x",)]):
            found = ("square",)
        elif name in ("sum.dim_IntList", "mean.dim", "sum.default", "mean.default") and \
                len(args) in (1, 3) and a[0][0] in ("abs", "square"):
            dim = over(*args[1:]) if len(args) == 3 else over(None, None)
            kind = {("sum", "abs"): "l1", ("sum", "square"): "sumsq",
                    ("mean", "square"): "meansq"}.get((name.split(".")[0], a[0][0]))
            found = (kind, dim, 0.0) if dim is not None and kind else None
        elif name == "linalg_vector_norm.default" and 1 <= len(args) <= 4 and \
                a[0] == ("x",) and (len(args) == 1 or args[1] == 2):
            dim = over(args[2] if len(args) > 2 else None, args[3] if len(args) > 3 else None)
            found = ("l2", dim, 0.0) if dim is not None else None
        elif name == "add.Tensor" and a[0][0] == "meansq" and type(args[1]) in (int, float):
            found = ("meansq", a[0][1], a[0][2] + args[1])
        elif name in ("sqrt.default", "rsqrt.default") and a[0][0] in ("sumsq", "meansq"):
            found = ({"sumsq": "l2", "meansq": "rms"}[a[0][0]], *a[0][1:])
            found = found if name == "sqrt.default" else ("inverse", *found)
        elif name == "div.Tensor" and a[0] == ("x",) and a[1][0] in ("l1", "l2", "rms"):
            found = ("norm", *a[1])
        elif name == "mul.Tensor" and ("x",) in a and any(k[0] == "inverse" for k in a):
            found = ("norm", *next(k for k in a if k[0] == "inverse")[1:])
        if found is None:
            return None
        known[id(result)] = found
    last = what(out)  # ("norm", l1 | l2 | rms, (dim, count), eps): only rms ever adds an eps
    if last[0] != "norm":
        return None
    (dim, count), eps = last[2], float(last[3])
    return Reduction({"l1": "l1norm", "l2": "l2norm", "rms": "rmsnorm"}[last[1]], dim, eps,
                     count)


def standardize_from_aten(calls: Sequence[tuple[str, Sequence[Any], Any]], x: Any,
                          out: Any) -> Reduction | None:
    """The layer norm without weights (`layernorm`) a forward's aten calls compute, or None.
    `calls` as for norm_from_aten. Read: native_layer_norm(x, shape, None, None, eps)
    (F.layer_norm, nn.LayerNorm(shape, elementwise_affine=False)): over x's last len(shape)
    dims; nn.InstanceNorm's view of x as [1, P, *rest] (P the product of x's first dims, rest its
    others), native_batch_norm over that with batch statistics and no weights, and the view back
    to x's shape: over the dims of rest; native_group_norm(x, None, None, N, C, HxW, groups, eps)
    with one group (over every dim but the first) or a group per channel (over the dims after the
    second). The empty buffer batch norm allocates is the one call that may take no part."""
    rank, shape = len(x.shape), list(x.shape)
    known: dict[int, tuple] = {id(x): ("x",)}

    def what(value: Any) -> tuple:
        return known.get(id(value), ("?",))

    def number(value: Any) -> bool:
        return type(value) in (int, float)

    for name, args, result in calls:
        first = what(args[0]) if args else ("?",)
        found: tuple | None = None
        if name == "empty.memory_format":
            continue
        if name == "native_layer_norm.default" and len(args) == 5 and first == ("x",) \
                and args[2] is None and args[3] is None and number(args[4]):
            k = len(args[1])
            if 1 <= k <= rank and list(args[1]) == shape[rank - k:]:
                known[id(result[0])] = ("done", rank - k, float(args[4]))
                continue
        elif name == "view.default" and first == ("x",) and len(args[1]) >= 3 and args[1][0] == 1:
            k = rank - (len(args[1]) - 2)  # x's dims before `rest`
            if 1 <= k < rank and list(args[1][2:]) == shape[k:] and \
                    args[1][1] == math.prod(shape[:k]):
                found = ("viewed", k)
        elif name == "native_batch_norm.default" and len(args) == 8 and first[0] == "viewed" \
                and all(a is None for a in args[1:5]) and args[5] is True and number(args[7]):
            known[id(result[0])] = ("normed", first[1], float(args[7]))
            continue
        elif name == "view.default" and first[0] == "normed" and list(args[1]) == shape:
            found = ("done", *first[1:])
        elif name == "native_group_norm.default" and len(args) == 8 and first == ("x",) \
                and args[1] is None and args[2] is None and number(args[7]) and rank >= 2:
            groups, channels = args[6], args[4]
            if groups == 1:
                known[id(result[0])] = ("done", 1, float(args[7]))
                continue
            if groups == channels and rank >= 3:
                known[id(result[0])] = ("done", 2, float(args[7]))
                continue
        if found is None:
            return None
        known[id(result)] = found
    last = what(out)
    if last[0] != "done":
        return None
    return Reduction("layernorm", last[1], last[2], rank - last[1])
