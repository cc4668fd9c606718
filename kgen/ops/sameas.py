"""`same_as: OP` in a spec: the op computes what the shipped op OP computes (gemm, softmax,
log_softmax, gelu, silu, cumsum or layernorm), under its own names, so the builtin author can
write it with OP's templates (a KernelBench `torch.matmul(A, B)`, `torch.softmax(x, dim=-1)`,
`torch.log_softmax(x, dim=1)`, `F.gelu(x, approximate='tanh')`, `x * torch.sigmoid(x)`,
`torch.cumsum(x, dim=1)` or `nn.LayerNorm(shape)` problem, whose derived spec names its output
`out` and may share one symbol between sizes).

The binding is by order. gemm: the spec's first operand is A[M,K], its second B[K,N], its one
output C[M,N]. softmax, log_softmax, gelu, silu, cumsum: its one operand is X[M,N], its one
output Y[M,N] (the softmax taken, the prefix sums run, along the last dim). M, N and K are
whatever size symbols the shapes use (one symbol may stand for several, as in a square matmul).
layernorm: its operands are X, then the weights weight and bias, whose shape is that of X's last
dims (one or more: the dims each row is normalized over, N their product, M the product of the
others), its one output Y has X's shape, and its one float32 parameter is eps. Validation still
runs the op's own reference, so a wrong claim costs failed candidates, never a wrong result. A
spec that says `pointwise: EXPR` (kgen.ops.pointwise) binds its one operand X and one output Y
of the same shape, of any rank (each dim a size symbol or a number): an elementwise kernel sees
them flat.
"""

from __future__ import annotations

from collections.abc import Sequence

from kgen.spec import OpSpec, Param, Tensor

FORMS = {
    "gemm": "gemm takes two operands A[M,K] and B[K,N] and one output C[M,N], in that order",
    "softmax": "softmax takes one operand X[M,N] and one output Y[M,N] (over the last dim)",
    "log_softmax": "log_softmax takes one operand X[M,N] and one output Y[M,N] (over the last "
                   "dim)",
    "gelu": "gelu takes one operand X[M,N] and one output Y[M,N] (the tanh form)",
    "silu": "silu takes one operand X[M,N] and one output Y[M,N]",
    "cumsum": "cumsum takes one operand X[M,N] and one output Y[M,N] (along the last dim)",
    "layernorm": "layernorm takes an operand X (1-D or more), then weights weight and bias of the "
                 "shape of X's last dims (normalized over), one float32 parameter eps and one "
                 "output Y of X's shape",
}
KNOWN = tuple(FORMS)
# `pointwise: EXPR` (kgen.ops.pointwise) binds its one operand and output, of any one shape
POINTWISE = "pointwise"
_FORMS = {**FORMS, POINTWISE: "pointwise takes one operand X and one output Y of the same shape "
                              "(any rank, each dim a size symbol or a number)"}
_COMMON = {POINTWISE: "in the run's dtype, with no parameters",
           "layernorm": "in the run's dtype, each dim a size symbol or a number"}
_SYMBOLS = "in the run's dtype, with every dim a size symbol and no parameters"


def binding(op: str, tensors: Sequence[Tensor], sizes: Sequence[str],
            params: Sequence[Param] = ()) -> dict[str, str]:
    """The shipped op's tensor and size names -> this op's; ValueError naming the field when the
    tensors do not have the shipped op's form."""
    if op not in KNOWN:
        raise ValueError(f"field 'same_as': {op!r} is not an op kgen can bind to (known: "
                         f"{', '.join(KNOWN)})")
    return _bind(op, tensors, sizes, params)


def pointwise_binding(tensors: Sequence[Tensor], sizes: Sequence[str],
                      params: Sequence[Param] = ()) -> dict[str, str]:
    """The binding of a spec that says `pointwise: EXPR`; ValueError naming that field."""
    return _bind(POINTWISE, tensors, sizes, params)


def _bind(op: str, tensors: Sequence[Tensor], sizes: Sequence[str],
          params: Sequence[Param]) -> dict[str, str]:
    operands = [t for t in tensors if t.role != "output"]
    outputs = [t for t in tensors if t.role == "output"]
    why = _mismatch(op, operands, outputs, set(sizes), params)
    if why:
        field = "pointwise" if op == POINTWISE else "same_as"
        raise ValueError(f"field '{field}': {_FORMS[op]}, {_COMMON.get(op, _SYMBOLS)}; {why}")
    if op == "gemm":
        (a, b), c = operands, outputs[0]
        return {"A": a.name, "B": b.name, "C": c.name,
                "M": a.shape[0], "N": b.shape[1], "K": a.shape[1]}
    if op == "layernorm":  # any rank: the kernel takes X's dims (kgen.author.rowwise.RowDims)
        (x, weight, bias), y = operands, outputs[0]
        return {"X": x.name, "weight": weight.name, "bias": bias.name, "Y": y.name,
                "eps": params[0].name}
    (x,), y = operands, outputs[0]
    if op == POINTWISE:  # any rank: the kernel takes X's dims (kgen.author.elementwise.render)
        return {"X": x.name, "Y": y.name}
    return {"X": x.name, "Y": y.name, "M": x.shape[0], "N": x.shape[1]}


def spec_binding(spec: OpSpec) -> dict[str, str]:
    """The binding of a loaded spec (which was checked when it loaded); {} without same_as or
    pointwise."""
    if spec.same_as:
        return binding(spec.same_as, spec.tensors, spec.sizes, spec.params)
    if spec.pointwise:
        return pointwise_binding(spec.tensors, spec.sizes, spec.params)
    return {}


def _layernorm_mismatch(operands: list[Tensor], y: Tensor, sizes: set[str],
                        params: Sequence[Param]) -> str:
    x, weight, bias = operands
    if [t.role for t in operands] != ["input", "weight", "weight"]:
        return (f"the operands are {', '.join(f'{t.name} ({t.role})' for t in operands)}, not an "
                "input then two weights")
    if len(params) != 1 or params[0].dtype != "float32":
        return f"this spec has {len(params)} parameters, not one float32 eps"
    typed = [t.name for t in (*operands, y) if t.dtype]
    if typed:
        return f"{', '.join(typed)} set their own dtype"
    odd = [d for d in x.shape if d not in sizes and not d.isdigit()]
    if odd:
        return f"{odd[0]} is not a size symbol or a number"
    if all(d.isdigit() for d in x.shape):
        return f"{x.name}'s shape names no size symbol"
    k = len(weight.shape)
    if y.shape != x.shape or bias.shape != weight.shape or not 1 <= k <= len(x.shape) \
            or x.shape[len(x.shape) - k:] != weight.shape:
        return (f"the shapes {x.name}[{','.join(x.shape)}], {weight.name}[{','.join(weight.shape)}]"
                f", {bias.name}[{','.join(bias.shape)}] -> {y.name}[{','.join(y.shape)}] are not "
                "X, weights of X's last dims, Y of X's shape")
    return ""


def _mismatch(op: str, operands: list[Tensor], outputs: list[Tensor], sizes: set[str],
              params: Sequence[Param]) -> str:
    wanted = {"gemm": 2, "layernorm": 3}.get(op, 1)
    if len(operands) != wanted or len(outputs) != 1:
        return f"this spec has {len(operands)} operands and {len(outputs)} outputs"
    if op == "layernorm":
        return _layernorm_mismatch(operands, outputs[0], sizes, params)
    if params:
        return f"this spec has parameters ({', '.join(p.name for p in params)})"
    every = [*operands, *outputs]
    typed = [t.name for t in every if t.dtype]
    if typed:
        return f"{', '.join(typed)} set their own dtype"
    if op == POINTWISE:
        x, y = operands[0], outputs[0]
        if not x.shape or x.shape != y.shape:
            return (f"{x.name}[{','.join(x.shape)}] -> {y.name}[{','.join(y.shape)}] are not one "
                    "shape of one dim or more")
        odd = [d for d in x.shape if d not in sizes and not d.isdigit()]
        return f"{odd[0]} is not a size symbol or a number" if odd else ""
    if any(len(t.shape) != 2 for t in every):
        return "not every tensor is 2-D"
    odd = [d for t in every for d in t.shape if d not in sizes]
    if odd:
        return f"{odd[0]} is not a size symbol"
    shown = ", ".join(f"{t.name}[{','.join(t.shape)}]" for t in operands) + \
        f" -> {outputs[0].name}[{','.join(outputs[0].shape)}]"
    if op == "gemm":
        (a, b), c = operands, outputs[0]
        if b.shape[0] != a.shape[1] or c.shape != (a.shape[0], b.shape[1]):
            return f"the shapes {shown} are not [M,K], [K,N] -> [M,N]"
    elif outputs[0].shape != operands[0].shape:
        return f"the shapes {shown} are not [M,N] -> [M,N]"
    return ""
