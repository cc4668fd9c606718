"""Which template family writes which op: gemm (simt, mma, wgmma; also any op whose spec says
`same_as: gemm`), elementwise (gelu, silu, bias_relu; also any op whose spec says `pointwise:
EXPR`), rowwise (sum, max, argmax, softmax, log_softmax, layernorm, rmsnorm), transpose, scan
(cumsum), and dimreduce (any op whose spec says `reduce: {op, dim}`). An op whose spec says
`same_as: OP` is written with OP's templates under its own names (layernorm's of any rank).

A family is what the search needs to know about one op's templates: the templates for an
arch/dtype, each one's valid configurations, the first candidate and why, one-step neighbours,
napkin registers, a cost model for ranking without timings, rendering, and reading a `choices`
line back. The memory-bound families are bound to the op's spec (its name picks the kernel, its
first bench size the default); each checks that the spec has the tensors its template is written
for, so a user's op that merely shares a name is not written with the wrong signature.
"""

from __future__ import annotations

import dataclasses
import re
from types import ModuleType
from typing import Any, Protocol

from kgen import expr
from kgen.arch import Arch
from kgen.author import costmodel, dimreduce, elementwise, memspace, rowwise, scan, transpose
from kgen.author import space as gemm_space
from kgen.ops import reduction, sameas
from kgen.spec import OpSpec

KINDS: tuple[ModuleType, ...] = (elementwise, rowwise, transpose, scan)
MEMORY_DTYPES = ("float32", "float16", "bfloat16")


class Family(Protocol):
    name: str

    def templates(self, arch: Arch, dtype: str) -> tuple[str, ...]: ...
    def alternative(self, arch: Arch, dtype: str, tried: set[str]) -> tuple[Any, str] | None: ...
    def space(self, arch: Arch, dtype: str, template: str) -> list[Any]: ...
    def first(self, arch: Arch, dtype: str) -> tuple[Any, str]: ...
    def problems(self, p: Any, arch: Arch, dtype: str) -> list[str]: ...
    def neighbours(self, p: Any, arch: Arch, dtype: str) -> list[Any]: ...
    def registers(self, p: Any) -> int: ...
    def estimate(self, p: Any, arch: Arch, dtype: str, reg_scale: float = 1.0) -> Any: ...
    def render(self, p: Any, dtype: str, arch: Arch) -> str: ...
    def parse(self, text: str) -> Any | None: ...


class GemmFamily:
    """The gemm templates, exactly as kgen.author.space and costmodel define them; `only` limits
    them to some (`make bench`'s SIMT row of float32 leaves 3xTF32 out)."""

    name = "gemm"

    def __init__(self, only: tuple[str, ...] = ()):
        self.only = only

    def templates(self, arch: Arch, dtype: str) -> tuple[str, ...]:
        found = gemm_space.templates_for(arch, dtype)
        return tuple(t for t in found if t in self.only) if self.only else found

    def alternative(self, arch: Arch, dtype: str, tried: set[str]) -> tuple[Any, str] | None:
        """The default of a template of another arithmetic not yet tried (3xTF32 for float32),
        with why; None when there is none."""
        for template in self.templates(arch, dtype):
            if template in gemm_space.ALTERNATIVE_TEMPLATES and template not in tried:
                p = gemm_space.default(arch, dtype, template)
                return p, (f"{p.template} has not been tried: its default ({p.choices}), "
                           f"{_ALTERNATIVES[p.template]}")
        return None

    def space(self, arch: Arch, dtype: str, template: str) -> list[Any]:
        return gemm_space.space(arch, dtype, template)

    def first(self, arch: Arch, dtype: str) -> tuple[Any, str]:
        p = gemm_space.default(arch, dtype, self.templates(arch, dtype)[0])
        return p, (f"first candidate: the default for {dtype} on {arch.name}, the best measured "
                   f"starting point that fits its limits ({p.choices}: {p.threads} threads, "
                   f"{p.smem_bytes} bytes shared memory){_wgmma_note(arch, dtype)}")

    def problems(self, p: Any, arch: Arch, dtype: str) -> list[str]:
        return gemm_space.problems(p, arch, dtype)

    def neighbours(self, p: Any, arch: Arch, dtype: str) -> list[Any]:
        return gemm_space.neighbours(p, arch, dtype)

    def registers(self, p: Any) -> int:
        return gemm_space.estimated_registers(p)

    def estimate(self, p: Any, arch: Arch, dtype: str, reg_scale: float = 1.0) -> Any:
        return costmodel.estimate(p, arch, reg_scale)

    def render(self, p: Any, dtype: str, arch: Arch) -> str:
        return gemm_space.render(p, dtype)

    def parse(self, text: str) -> Any | None:
        return gemm_space.parse_choices(text)


class BoundGemm(GemmFamily):
    """gemm's templates for an op whose spec says `same_as: gemm` (a KernelBench matmul): the
    same kernels, with the contract's op name and the launch lines' tensor and size names
    renamed to the spec's."""

    def __init__(self, spec: OpSpec):
        super().__init__()
        self.spec = spec
        self.names = sameas.spec_binding(spec)

    def templates(self, arch: Arch, dtype: str) -> tuple[str, ...]:
        return super().templates(arch, dtype) if dtype in self.spec.dtypes else ()

    def render(self, p: Any, dtype: str, arch: Arch) -> str:
        return bind_contract(super().render(p, dtype, arch), "gemm", self.spec.name, self.names)


def bind_contract(source: str, shipped: str, op: str, names: dict[str, str],
                  claim: str = "") -> str:
    """A shipped op's file with its contract for the bound op: `op=SHIPPED` becomes `op=OP` and,
    in the launch lines only, the shipped op's tensor and size names become the op's (the
    kernel's own parameter names do not matter). `claim`: what the spec says, if not
    `same_as: SHIPPED`. No `names`: the launch lines already use the op's names."""
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
    lines = source.split("\n")
    last = 0
    for i, line in enumerate(lines):
        if line.startswith(f"// kgen: op={shipped} "):
            lines[i] = line.replace(f"op={shipped} ", f"op={op} ", 1)
        elif line.startswith("// kgen: launch ") and names:
            lines[i] = pattern.sub(lambda m: names[m.group(0)], line)
        if line.startswith("// kgen:"):
            last = i
    told = "".join(f"{', ' if i else ': '}{k}={v}" for i, (k, v) in enumerate(names.items()))
    claim = claim or f"same_as: {shipped}"
    lines.insert(last + 1, f"// {op} computes {shipped} (its spec says {claim}){told}.")
    return "\n".join(lines)


_ALTERNATIVES = {
    "tf32x3": ("float32 on the tensor cores by 3xTF32 (each input split into two TF32 values, "
               "three products per term): not float32 arithmetic, so it is kept only if it passes "
               "the spec's float32 tolerance at every test size, and it is labelled "
               "precision=3xTF32"),
}


def _wgmma_note(arch: Arch, dtype: str) -> str:
    """On plain sm_90, say why the Hopper template is not used."""
    if arch.major_minor == 90 and not gemm_space.wgmma_ready(arch) \
            and "mma" in gemm_space.templates_for(arch, dtype):
        return ("; wgmma (Hopper's fastest tensor-core path) needs the arch-specific target: "
                "pass --arch sm_90a to use it, sm_90 keeps mma.sync")
    return ""


class MemFamily:
    """One memory-bound template (a module such as kgen.author.rowwise) bound to one op."""

    def __init__(self, kind: ModuleType, spec: OpSpec, op: str = "", n: str = "N",
                 m: str = "M"):
        """`op`: the shipped op the template writes (default the spec's name); `n` and `m`: the
        spec's size symbols for its row length and its number of rows."""
        self.kind, self.spec, self.op = kind, spec, op or spec.name
        self.name = kind.TEMPLATE
        self.row = memspace.row_length(spec, symbol=n)
        self.rows = memspace.row_lengths(spec, symbol=n)
        # a bench size with rows too few to fill the GPU a block each (rowwise.render)
        self.few_rows = any(memspace.few_rows(int(e[m])) for e in spec.bench_sizes if m in e)
        self._has_op = any(f.name == "op" for f in dataclasses.fields(kind.PARAMS))

    def templates(self, arch: Arch, dtype: str) -> tuple[str, ...]:
        ok = dtype in MEMORY_DTYPES and dtype in self.spec.dtypes
        return (self.kind.TEMPLATE,) if ok else ()

    def alternative(self, arch: Arch, dtype: str, tried: set[str]) -> tuple[Any, str] | None:
        return None  # one template per op

    def _make(self, **values: int) -> Any:
        return self.kind.PARAMS(op=self.op, **values) if self._has_op else \
            self.kind.PARAMS(**values)

    def _axes(self, dtype: str) -> dict[str, tuple[int, ...]]:
        return self.kind.axes(dtype, self.op)

    def space(self, arch: Arch, dtype: str, template: str) -> list[Any]:
        if template not in self.templates(arch, dtype):
            return []
        return memspace.space(self._make, self._axes(dtype),
                              lambda p: not self.problems(p, arch, dtype))

    def first(self, arch: Arch, dtype: str) -> tuple[Any, str]:
        p, why = self.kind.first(arch, dtype, self.row, self.op)
        return p, (f"first candidate: the default of the {self.name} template for {self.op} in "
                   f"{dtype} on {arch.name} ({p.choices}): {why}")

    def problems(self, p: Any, arch: Arch, dtype: str) -> list[str]:
        return self.kind.problems(p, arch, dtype)

    def neighbours(self, p: Any, arch: Arch, dtype: str) -> list[Any]:
        return memspace.neighbours(p, self._axes(dtype),
                                   lambda q: not self.problems(q, arch, dtype))

    def registers(self, p: Any) -> int:
        return self.kind.registers(p)

    def estimate(self, p: Any, arch: Arch, dtype: str, reg_scale: float = 1.0) -> Any:
        return self.kind.estimate(p, arch, dtype, self.row, reg_scale)

    def render(self, p: Any, dtype: str, arch: Arch) -> str:
        """MIN_BLOCKS (the register cap ptxas is given) depends on the arch's SM; the rowwise
        file adds a kernel for each longer class of bench rows (rowwise.ladder)."""
        if self.kind is rowwise:
            return rowwise.render(p, dtype, arch, self.rows, few_rows=self.few_rows)
        return self.kind.render(p, dtype, arch)

    def parse(self, text: str) -> Any | None:
        p = memspace.parse_params(self.kind.PARAMS, self.kind.TEMPLATE, text)
        if p is None or (self._has_op and p.op != self.op):
            return None
        return p


class BoundMem(MemFamily):
    """A memory-bound op's template for an op whose spec says `same_as: OP` (a KernelBench
    softmax, GELU or SiLU): OP's kernels, with the contract bound to the spec's names as
    BoundGemm does."""

    def __init__(self, kind: ModuleType, spec: OpSpec, op: str = ""):
        self.names = sameas.spec_binding(spec)
        super().__init__(kind, spec, op=op or spec.same_as, n=self.names["N"],
                         m=self.names["M"])

    def render(self, p: Any, dtype: str, arch: Arch) -> str:
        return bind_contract(super().render(p, dtype, arch), self.op, self.spec.name, self.names)


class BoundRows(MemFamily):
    """The row-wise template for an op whose spec says `same_as: layernorm` (a KernelBench
    nn.LayerNorm): X normalized over its last dims (the weights' shape), of any rank, the kernel
    taking X's sizes and the launch lines written with the spec's own names; the defaults are
    chosen for the row length (the normalized dims' product) at the first bench size."""

    def __init__(self, spec: OpSpec):
        names = sameas.spec_binding(spec)
        shapes = {t.name: t.shape for t in spec.tensors}
        x, k = shapes[names["X"]], len(shapes[names["weight"]])
        self.dims = rowwise.RowDims(names, x[:len(x) - k], x[len(x) - k:])
        super().__init__(rowwise, spec, op=spec.same_as)
        n, m = " * ".join(self.dims.trailing), " * ".join(self.dims.leading) or "1"
        self.rows = tuple(expr.evaluate(n, spec.sizes_of(e)) for e in spec.bench_sizes)
        self.row = self.rows[0] if self.rows else expr.evaluate(
            n, spec.sizes_of(spec.test_sizes[0]))
        self.few_rows = any(memspace.few_rows(expr.evaluate(m, spec.sizes_of(e)))
                            for e in spec.bench_sizes)

    def render(self, p: Any, dtype: str, arch: Arch) -> str:
        source = rowwise.render(p, dtype, arch, self.rows, self.dims, self.few_rows)
        return bind_contract(source, self.op, self.spec.name, {})


class BoundPointwise(MemFamily):
    """The elementwise template for an op whose spec says `pointwise: EXPR` (a KernelBench
    ReLU, ELU, softplus, ...): the spec's expression over its operand and output of any rank,
    which the kernel sees flat, its launch line written with the spec's own names."""

    def __init__(self, spec: OpSpec):
        names = sameas.spec_binding(spec)
        x = next(t for t in spec.tensors if t.name == names["X"])
        self.flat = elementwise.Flat(names["X"], names["Y"], x.shape)
        super().__init__(elementwise, spec, op=elementwise.POINTWISE, n=x.shape[-1])

    def render(self, p: Any, dtype: str, arch: Arch) -> str:
        source = elementwise.render(p, dtype, arch, self.spec.pointwise, self.flat)
        return bind_contract(source, self.op, self.spec.name, {},
                             claim=f"pointwise: {self.spec.pointwise}")


class BoundReduce(MemFamily):
    """The dim-reduction template for an op whose spec says `reduce: {op, dim}` (a KernelBench sum,
    mean, max, min, prod, argmax or argmin over one dim or several adjacent ones, or L1, L2 or
    RMS norm over them). Whether each output is a contiguous row (the reduced dims are X's last)
    is fixed by the spec, not searched; the defaults and the cost model are judged at the first
    bench size; a bench size with few such rows adds the split-row kernels."""

    def __init__(self, spec: OpSpec):
        self.reduction, self.bound = reduction.bind(spec.reduce, spec.tensors, spec.sizes,
                                                    spec.params)
        super().__init__(dimreduce, spec, op=self.reduction.op)
        self.by_row = int(self.bound.rows)  # the layout, the same for every configuration
        at = (spec.bench_sizes or spec.test_sizes)[0]
        self.extent = dimreduce.Extent.at(self.bound, spec.sizes_of(at))
        # over the last dims, a bench size with few rows: the file adds the split-row kernels
        self.few_rows = self.bound.rows and any(
            dimreduce.few(dimreduce.Extent.at(self.bound, spec.sizes_of(e)))
            for e in spec.bench_sizes)

    def _axes(self, dtype: str) -> dict[str, tuple[int, ...]]:
        return dimreduce.axes(dtype, self.by_row)

    def _make(self, **values: int) -> Any:
        return dimreduce.ReduceParams(self.op, self.by_row, **values)

    def first(self, arch: Arch, dtype: str) -> tuple[Any, str]:
        p, why = dimreduce.first(arch, dtype, self.op, self.extent, self.bound.rows)
        while self.problems(p, arch, dtype) and p.unroll > 1:
            p = dataclasses.replace(p, unroll=p.unroll // 2)
        e = self.extent
        return p, (f"first candidate: the default of the {self.name} template for {self.op} in "
                   f"{dtype} on {arch.name} at OUTER={e.outer} R={e.r} INNER={e.inner} (the "
                   f"first bench size; {p.choices}): {why}")

    def estimate(self, p: Any, arch: Arch, dtype: str, reg_scale: float = 1.0) -> Any:
        return dimreduce.estimate(p, arch, dtype, self.extent, reg_scale)

    def render(self, p: Any, dtype: str, arch: Arch) -> str:
        eps = f", eps: {self.reduction.eps!r}" if self.op in reduction.EPS_OPS else ""
        dims = self.reduction.dim if self.reduction.count == 1 else list(self.reduction.dims)
        claim = f"reduce: {{op: {self.op}, dim: {dims}{eps}}}"
        return dimreduce.render(p, dtype, arch, self.spec.name, self.bound, claim,
                                self.reduction.eps, self.few_rows)

    def parse(self, text: str) -> Any | None:
        p = super().parse(text)
        return p if p is not None and p.rows == self.by_row else None


GEMM = GemmFamily()
WRITTEN_OPS: tuple[str, ...] = ("gemm",) + tuple(op for kind in KINDS for op in kind.OPS)


def family_for(spec: OpSpec | None) -> Family | None:
    """The family that writes this op, or None (see `why_not`)."""
    if spec is None:
        return None
    if spec.name == "gemm":
        return GEMM
    if spec.same_as == "gemm":
        return BoundGemm(spec)
    if spec.same_as == "layernorm":
        return BoundRows(spec)
    if spec.same_as:
        shipped = _kind_of(spec.same_as)
        return BoundMem(shipped, spec) if shipped is not None else None
    if spec.pointwise:
        return BoundPointwise(spec)
    if spec.reduce.op:
        return BoundReduce(spec)
    kind = _kind_of(spec.name)
    if kind is None or memspace.signature(spec) != kind.SIGNATURES[spec.name]:
        return None
    return MemFamily(kind, spec)


def why_not(spec: OpSpec | None) -> str:
    """Why no family writes this op, in one sentence."""
    written = ", ".join(WRITTEN_OPS)
    if spec is None:
        return f"there is no op to write (the builtin author writes {written})"
    kind = _kind_of(spec.name)
    if kind is None:
        return (f"the builtin author has no template for {spec.name} (it writes {written}, "
                "any elementwise op whose spec says `pointwise: EXPR`, and any reduction, or "
                "L1, L2, RMS or unweighted layer norm, over one dim or adjacent ones whose spec "
                "says `reduce: {op, dim}`)")
    sizes, tensors, params = kind.SIGNATURES[spec.name]
    want = ", ".join(f"{name}[{','.join(shape)}]" for name, _, shape, _ in tensors)
    return (f"the builtin author's {spec.name} template is for the shipped op ({want}"
            f"{'; params ' + ', '.join(params) if params else ''}), and this spec's tensors, "
            f"sizes or parameters differ (it writes {written})")


def _kind_of(op: str) -> ModuleType | None:
    return next((kind for kind in KINDS if op in kind.OPS), None)
