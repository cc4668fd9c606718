"""The elementwise template's parameters and rendering (the CUDA is templates/elementwise.cu):
GELU (tanh form), SiLU and bias + ReLU over a flat M x N tensor, float32 math for every dtype;
also any op whose spec says `pointwise: EXPR` (op "pointwise", kgen.ops.pointwise).

Parameters: threads per block; vec elements per access (16 bytes at most); ept accesses in flight
per thread per step; waves (0: the grid covers the tensor once; k: at most SMS * k blocks that
stride over it); hint (1: evict-first loads and stores).
"""

from __future__ import annotations

from dataclasses import dataclass

from kgen.arch import Arch
from kgen.author import memcost, memspace
from kgen.author.common import contract_header, fill
from kgen.dtypes import DTYPES
from kgen.ops import pointwise

TEMPLATE = "elementwise"
OPS = {"gelu": 0, "silu": 1, "bias_relu": 2}
POINTWISE = "pointwise"  # not a shipped op: a spec's own expression, which render() is given
_KGEN_OP = {**OPS, POINTWISE: 3}
_XY = (("X", "input", memspace.MN, None), ("Y", "output", memspace.MN, None))
SIGNATURES = {
    "gelu": (memspace.MN, _XY, ()),
    "silu": (memspace.MN, _XY, ()),
    "bias_relu": (memspace.MN, (_XY[0], ("bias", "weight", ("N",), None), _XY[1]), ()),
}
_WHAT = {"gelu": "GELU (tanh form, as x * sigmoid(2u))", "silu": "SiLU (x * sigmoid(x))",
         "bias_relu": "relu(X + bias[column])"}


@dataclass(frozen=True)
class EwParams:
    op: str = "gelu"
    threads: int = 256
    vec: int = 4  # elements per access
    ept: int = 2  # accesses in flight per thread per step
    waves: int = 0  # 0: one step per block; k: grid capped at SMS * k, grid-stride
    hint: int = 0  # 1: evict-first (__ldcs/__stcs)

    template = TEMPLATE
    smem_bytes = 0

    @property
    def choices(self) -> str:
        return memspace.choices_of(TEMPLATE, self)

    @property
    def per_block(self) -> int:
        """Elements one block covers per step."""
        return self.vec * self.threads * self.ept


PARAMS = EwParams


def axes(dtype: str, op: str) -> dict[str, tuple[int, ...]]:
    size = DTYPES[dtype].size
    return {"threads": (128, 256, 512), "vec": tuple(v for v in (1, 2, 4, 8) if v * size <= 16
                                                     and v * size >= 4),
            "ept": (1, 2, 4, 8), "waves": (0, 2, 4, 8, 16), "hint": (0, 1)}


def registers(p: EwParams) -> int:
    """Napkin: the values in flight, an address per access (and the bias's), at or above what
    ptxas 13.0 uses without a cap on sm_90 (float16 gelu, 8 x 8 halves in flight: 104 vs 100)."""
    return min(255, 24 + p.ept * p.vec + (4 if p.op == "bias_relu" else 2) * p.ept)


def problems(p: EwParams, arch: Arch, dtype: str) -> list[str]:
    out = []
    if p.vec * DTYPES[dtype].size > 16:
        out.append(f"{p.vec} x {dtype} is more than one 16-byte access")
    if registers(p) * p.threads > arch.facts.registers_per_sm:
        out.append("not even one block fits the register file")
    return out


def first(arch: Arch, dtype: str, n: int, op: str) -> tuple[EwParams, str]:
    size = DTYPES[dtype].size
    # Measured on an H200 (gelu, 16384 x 16384 float32): 128 threads ran at the copy bandwidth
    # (0.506 ms, as torch eager), 256 threads 3% slower; evict-first hints and grid-stride
    # loops were slower still.
    p = EwParams(op, threads=128, vec=16 // size, ept=2, waves=0, hint=0)
    in_flight = arch.facts.max_threads_per_sm * p.ept * 16 // 1024
    return p, (f"128 threads per block, 16-byte accesses ({p.vec} x {dtype}), 2 accesses in "
               "flight per thread, one step per block (no grid-stride loop): at full occupancy "
               f"that is {in_flight} KiB of loads in flight per SM, more than DRAM needs to "
               "stay busy (bandwidth x latency / SMs ~ 36 KB on an H200)")


def estimate(p: EwParams, arch: Arch, dtype: str, n: int, reg_scale: float = 1.0
             ) -> memcost.MemEstimate:
    width = p.vec * DTYPES[dtype].size
    regs = round(registers(p) * reg_scale)
    # A grid-stride loop costs a few instructions per step; streaming hints are left to timing.
    factor = 1.0 if p.waves == 0 else 0.995
    return memcost.estimate(arch, p.threads, regs, 0, width * p.ept, width, factor)


@dataclass(frozen=True)
class Flat:
    """A spec's `pointwise` operand and output (kgen.ops.sameas.pointwise_binding): their names
    and X's dims (size symbols or numbers, any rank), which the kernel sees as one flat run."""

    x: str
    y: str
    dims: tuple[str, ...]

    @property
    def symbols(self) -> list[str]:
        """The kernel's size arguments: each symbol once, in X's order."""
        return list(dict.fromkeys(d for d in self.dims if not d.isdigit()))

    def params(self) -> str:
        """The params block's KGEN_DIMS and KGEN_TOTAL (elementwise.cu; the product in 64 bits
        whatever its first factor)."""
        named = [d if d.isdigit() else f"d_{d}" for d in self.dims]
        return (f"#define KGEN_DIMS {''.join(f', int d_{s}' for s in self.symbols)}\n"
                f"#define KGEN_TOTAL ((long long)1 * {' * '.join(named)})\n")


def render(p: EwParams, dtype: str, arch: Arch, expression: str = "",
           flat: Flat | None = None) -> str:
    """The full .cu source (contract header first) for these parameters, dtype and arch; for
    op "pointwise", of the spec's `expression` over `flat` (its own tensor and size names: the
    launch line needs no binding)."""
    if (p.op == POINTWISE) != bool(expression) or (p.op == POINTWISE) != (flat is not None):
        raise ValueError("an expression and its tensors are given for op pointwise, and only "
                         "for it")
    info = DTYPES[dtype]
    name = f"{p.op}_ew_{info.short}"
    total = "*".join(flat.dims) if flat else "M*N"
    steps = f"cdiv({total}, {p.per_block})"
    grid = f"min({steps}, SMS*{p.waves})" if p.waves else steps
    if flat:
        args = ", ".join([flat.x, flat.y, *flat.symbols])
    else:
        args = "X, bias, Y, M, N" if p.op == "bias_relu" else "X, Y, M, N"
    launch = f"{name} grid=({grid}) block=({p.threads}) smem=0 args=({args})"
    stride = (f"at most {p.waves} blocks per SM, striding over the tensor" if p.waves
              else "one step per block")
    what = f"y = {pointwise.check(expression)}" if expression else _WHAT[p.op]
    extent = f"{flat.x}[{','.join(flat.dims)}] seen flat" if flat else "any M, N"
    about = (f"Elementwise {what}: {p.threads} threads, {p.vec} x {dtype} per access, "
             f"{p.ept} accesses in flight per thread, {stride}"
             f"{', evict-first loads/stores' if p.hint else ''}; float32 math; {extent}.")
    params = ((f"#include <{info.header}>\n" if info.header else "")
              + f"typedef {info.ctype} T;\n#define KGEN_OP {_KGEN_OP[p.op]}\n"
              + (f"#define KGEN_EXPR ({pointwise.to_cuda(expression)})\n" if expression else "")
              + (flat.params() if flat else "")
              + f"constexpr int THREADS = {p.threads}, VEC = {p.vec}, EPT = {p.ept}, "
              f"HINT = {p.hint}, MIN_BLOCKS = "
              f"{memcost.min_blocks(arch, p.threads, registers(p))};\n")
    return contract_header(p.op, dtype, p.choices, launch, about) + fill(TEMPLATE, params, name)
