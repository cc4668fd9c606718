"""`same_as: gemm` in a spec: the op computes what the shipped gemm computes, so the builtin
author can write it with gemm's templates (a KernelBench `torch.matmul(A, B)` problem, whose
derived spec names its output `out` and may share one symbol between sizes).

The binding is by order: the spec's first operand is gemm's A[M,K], its second B[K,N], its one
output C[M,N]; M, N and K are whatever size symbols the shapes use (one symbol may stand for
several, as in a square matmul). Validation still runs the op's own reference, so a wrong claim
costs failed candidates, never a wrong result.
"""

from __future__ import annotations

from collections.abc import Sequence

from kgen.spec import OpSpec, Param, Tensor

KNOWN = ("gemm",)
GEMM_FORM = ("gemm takes two operands A[M,K] and B[K,N] and one output C[M,N], in that order, "
             "in the run's dtype, with every dim a size symbol and no parameters")


def binding(op: str, tensors: Sequence[Tensor], sizes: Sequence[str],
            params: Sequence[Param] = ()) -> dict[str, str]:
    """The shipped op's tensor and size names -> this op's; ValueError naming the field when the
    tensors do not have the shipped op's form."""
    if op not in KNOWN:
        raise ValueError(f"field 'same_as': {op!r} is not an op kgen can bind to (known: "
                         f"{', '.join(KNOWN)})")
    operands = [t for t in tensors if t.role != "output"]
    outputs = [t for t in tensors if t.role == "output"]
    why = _gemm_mismatch(operands, outputs, set(sizes), params)
    if why:
        raise ValueError(f"field 'same_as': {GEMM_FORM}; {why}")
    (a, b), c = operands, outputs[0]
    return {"A": a.name, "B": b.name, "C": c.name,
            "M": a.shape[0], "N": b.shape[1], "K": a.shape[1]}


def spec_binding(spec: OpSpec) -> dict[str, str]:
    """The binding of a loaded spec (which was checked when it loaded); {} without same_as."""
    if not spec.same_as:
        return {}
    return binding(spec.same_as, spec.tensors, spec.sizes, spec.params)


def _gemm_mismatch(operands: list[Tensor], outputs: list[Tensor], sizes: set[str],
                   params: Sequence[Param]) -> str:
    if len(operands) != 2 or len(outputs) != 1:
        return f"this spec has {len(operands)} operands and {len(outputs)} outputs"
    if params:
        return f"this spec has parameters ({', '.join(p.name for p in params)})"
    (a, b), c = operands, outputs[0]
    typed = [t.name for t in (a, b, c) if t.dtype]
    if typed:
        return f"{', '.join(typed)} set their own dtype"
    if any(len(t.shape) != 2 for t in (a, b, c)):
        return "not every tensor is 2-D"
    odd = [d for t in (a, b, c) for d in t.shape if d not in sizes]
    if odd:
        return f"{odd[0]} is not a size symbol"
    if b.shape[0] != a.shape[1] or c.shape != (a.shape[0], b.shape[1]):
        return (f"the shapes {a.name}[{','.join(a.shape)}], {b.name}[{','.join(b.shape)}] -> "
                f"{c.name}[{','.join(c.shape)}] are not [M,K], [K,N] -> [M,N]")
    return ""
