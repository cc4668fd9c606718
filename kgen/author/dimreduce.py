"""The dim-reduction template's parameters and rendering (the CUDA is templates/dimreduce.cu): an
op whose spec says `reduce: {op, dim}` (kgen.ops.reduction: sum, mean, max, min, prod, argmax,
argmin over one dim of X, any rank; or X divided by its l1, l2 or rms norm over the dim, or
standardized over it (layernorm without weights), which takes a second pass over X), float32 math
for every dtype.

X is [OUTER, R, INNER] in memory. Parameters: op; rows (1 when the reduced dim is X's last, so
each output is a contiguous row; fixed by the spec, not searched); tx threads along the contiguous
axis (INNER's columns, or a row's elements); ty threads along the other (splitting R between them,
or rows per block); vec elements per access (16 bytes at most); unroll accesses in flight per
thread; hint (1: X read evict-first).
"""

from __future__ import annotations

from dataclasses import dataclass

from kgen import expr
from kgen.arch import Arch
from kgen.author import memcost, memspace
from kgen.author.common import contract_header, fill
from kgen.dtypes import DTYPES
from kgen.ops.reduction import EPS_OPS, INDEX_OPS, NORMS, OPS, Bound

TEMPLATE = "dimreduce"
KGEN_OP = {op: i for i, op in enumerate(OPS)}
SMS = memcost.ASSUMED_SMS  # what the first guess and the cost model count blocks against


@dataclass(frozen=True)
class ReduceParams:
    op: str = "sum"
    rows: int = 0  # 1: the reduced dim is X's last (a row per output)
    tx: int = 32  # threads along the contiguous axis
    ty: int = 8  # threads splitting R (rows 0), or rows per block (rows 1)
    vec: int = 4  # elements per access
    unroll: int = 4  # accesses in flight per thread
    hint: int = 0  # 1: X read evict-first (__ldcs)

    template = TEMPLATE

    @property
    def threads(self) -> int:
        return self.tx * self.ty

    @property
    def smem_bytes(self) -> int:
        """Static shared memory: the states handed between threads (dimreduce.cu's `red`) and,
        for a norm over an inner dim, each column's factor (`scale`; layernorm's `centers`
        too)."""
        slots = self.ty * (self.tx // 32) if self.rows else (self.ty - 1) * self.vec * self.tx
        # one `scale` array (and `centers`) in each of the vector and one-element paths'
        # instantiations
        arrays = 2 if self.op == "layernorm" else 1
        factors = arrays * 2 * 4 * self.vec * self.tx if self.op in NORMS and not self.rows else 0
        # a state is a float and an int; layernorm's Welford state adds a count and the squares
        state_bytes = 16 if self.op == "layernorm" else 8
        return max(1, slots) * state_bytes + factors

    @property
    def span(self) -> int:
        """rows 0: the columns one block covers."""
        return self.tx * self.vec

    @property
    def choices(self) -> str:
        return memspace.choices_of(TEMPLATE, self)


PARAMS = ReduceParams


def axes(dtype: str, rows: int) -> dict[str, tuple[int, ...]]:
    size = DTYPES[dtype].size
    return {"tx": (32, 64, 128, 256, 512, 1024) if rows else (16, 32, 64, 128, 256),
            "ty": (1, 2, 4, 8, 16, 32),
            "vec": tuple(v for v in (1, 2, 4, 8) if v * size <= 16),
            "unroll": (1, 2, 4, 8, 16), "hint": (0, 1)}


def registers(p: ReduceParams) -> int:
    """Napkin: the values in flight, a state (two registers) per column held, addressing; ptxas
    13.0 on sm_90 gave 56-60 for rows 0 at tx 32, ty 8, vec 4, unroll 4 (napkin 56) and 37-44
    for rows 1 at tx 32-128 (napkin 44)."""
    held = 1 if p.rows else p.vec
    per_state = 4 if p.op == "layernorm" else 2  # Welford: mean, count, squares (and a spare)
    return min(255, 24 + p.unroll * p.vec + per_state * held + (4 if p.rows else 8))


def problems(p: ReduceParams, arch: Arch, dtype: str) -> list[str]:
    out = []
    if not 32 <= p.threads <= 1024:
        out.append(f"{p.threads} threads per block (32 to 1024)")
    if p.rows and p.tx % 32:
        out.append(f"{p.tx} threads per row is not whole warps")
    if p.vec * DTYPES[dtype].size > 16:
        out.append(f"{p.vec} x {dtype} is more than one 16-byte access")
    if p.smem_bytes > memcost.STATIC_SMEM_LIMIT:
        out.append(f"{p.smem_bytes} bytes of shared memory, over the {memcost.STATIC_SMEM_LIMIT} "
                   "a static array may have")
    out += memcost.register_problems(arch, p.threads, registers(p))
    return out


@dataclass(frozen=True)
class Extent:
    """OUTER, R and INNER at one size (what the defaults and the cost model are judged at)."""

    outer: int
    r: int
    inner: int

    @classmethod
    def at(cls, bound: Bound, sizes: dict[str, int]) -> Extent:
        return cls(*(expr.evaluate(memspace.product(dims), sizes)
                     for dims in (bound.outer, bound.r, bound.inner)))


def first(arch: Arch, dtype: str, op: str, e: Extent, rows: bool) -> tuple[ReduceParams, str]:
    """The default for this extent; `rows`: the reduced dim is X's last (the spec says, not the
    sizes: INNER may be 1 at one size)."""
    size = DTYPES[dtype].size
    widest = 16 // size
    contiguous = e.r if rows else e.inner
    vec = widest if contiguous % widest == 0 else 1
    if rows:
        tx = 32 if e.r <= 1024 else 128 if e.r <= 8192 else 256
        p = ReduceParams(op, 1, tx, max(1, 256 // tx), vec, 4, 0)
        split = (f"; with rows this few, the file's split kernels cut each row longer than "
                 f"{4 * slice_of(p)} into slices of {slice_of(p)}, a block of {tx} each"
                 if few(e) else "")
        return p, (f"each output is a contiguous row of {e.r}: {tx} threads per row with "
                   f"{vec}-element accesses, 4 in flight each, {p.ty} rows per 256-thread block "
                   f"({-(-e.outer // p.ty)} blocks){split}")
    # A warp along INNER, 8 threads splitting R (the shape that reached the copy bandwidth on an
    # H100: README); narrower accesses where 16-byte ones leave fewer than two blocks per SM, since
    # a block covers one OUTER index and each SM needs columns of its own to read. (Wider blocks,
    # 128 threads along INNER and 2 splitting R, ran at 77% of DRAM peak with 0.78 waves.)
    tx = 32
    while vec > 1 and e.outer * -(-e.inner // (tx * vec)) < 2 * SMS:
        vec //= 2
    blocks = e.outer * -(-e.inner // (tx * vec))
    ty = max(1, 256 // tx)
    while blocks < SMS and tx * ty < 1024 and ty * 2 * 4 <= e.r:
        ty *= 2  # few blocks: more threads per block share each column's R
    # 8 accesses in flight per thread where each is narrower than 8 bytes, or where there are
    # fewer blocks than SMs (each SM then has one block to keep DRAM busy with); else 4
    unroll = 8 if (blocks < SMS or vec * size < 8) and e.r >= 8 * ty else 4
    p = ReduceParams(op, 0, tx, ty, vec, unroll, 0)
    return p, (f"the reduced dim (R = {e.r}) is strided by INNER = {e.inner}: {tx} threads "
               f"side by side along INNER, {vec} column(s) each, so a warp reads consecutive "
               f"bytes; {blocks} blocks of {tx * vec} columns for {SMS} SMs; {ty} threads "
               f"split each column's R, {unroll} accesses in flight each")


def estimate(p: ReduceParams, arch: Arch, dtype: str, e: Extent, reg_scale: float = 1.0
             ) -> memcost.MemEstimate:
    size = DTYPES[dtype].size
    contiguous = e.r if p.rows else e.inner
    fast = contiguous % p.vec == 0
    width = p.vec * size if fast else size
    regs = round(registers(p) * reg_scale)
    if p.rows:
        step = p.tx * p.vec * p.unroll  # elements one sweep of a row covers
        used = e.r / (step * -(-e.r // step))
        blocks = -(-e.outer // p.ty)
        note = f"{used:.0%} of lanes busy along rows of {e.r}"
    else:
        used = e.inner / (p.span * -(-e.inner // p.span))
        step = p.ty * p.unroll  # rows of R one trip of a block covers
        used *= e.r / (step * -(-e.r // step))
        blocks = e.outer * -(-e.inner // p.span)
        note = f"{used:.0%} of lanes busy, {blocks} blocks"
    per_sm = memcost.blocks_per_sm(arch, p.threads, regs, p.smem_bytes)
    fill_factor = min(1.0, blocks / max(1, per_sm * SMS))
    # a barrier and a combine per block when threads share an output
    shared = 0.97 if (p.ty > 1 and not p.rows) or (p.rows and p.tx > 32) else 1.0
    return memcost.estimate(arch, p.threads, regs, p.smem_bytes, width * p.unroll, width,
                            used * fill_factor * shared, note)


def slice_of(p: ReduceParams) -> int:
    """Elements of a row per block where rows are cut across blocks (dimreduce.cu's SLICE)."""
    return p.tx * p.vec * p.unroll * 4


def few(e: Extent) -> bool:
    """Outputs too few for a block (group) each to fill the GPU (memspace.few_rows)."""
    return memspace.few_rows(e.outer)


def render(p: ReduceParams, dtype: str, arch: Arch, op_name: str, bound: Bound,
           claim: str, eps: float = 0.0, few_rows: bool = False) -> str:
    """The full .cu source (contract header first) for op `op_name`, whose spec's `claim` binds
    it as `bound`: the kernel takes X's size symbols as int arguments and forms OUTER, R and
    INNER from them (a number in X's shape is written in). `eps`: rmsnorm's and layernorm's.
    `few_rows` (over the last dims only): a bench size has few rows, so the file adds the
    split-row kernels, which its launch lines pick where rows are few and long."""
    if bool(p.rows) != bound.rows:
        raise ValueError(f"rows={p.rows} does not match a reduction over "
                         f"{'the last' if bound.rows else 'an inner'} dim")
    info = DTYPES[dtype]
    name = f"{p.op}_dim_{info.short}"
    symbols = list(dict.fromkeys(d for d in (*bound.outer, *bound.r, *bound.inner)
                                 if not d.isdigit()))

    if p.rows:
        grid = f"cdiv({memspace.product(bound.outer)}, {p.ty})"
        how = f"{p.tx} threads per row, {p.ty} row(s) per block"
    else:
        grid = f"{memspace.product(bound.outer)} * cdiv({memspace.product(bound.inner)}, {p.span})"
        how = (f"{p.tx} threads along INNER with {p.vec} column(s) each, {p.ty} splitting R, "
               "combined in shared memory")
    args = ", ".join([bound.x, bound.y, *symbols])
    outer, r, piece = memspace.product(bound.outer), memspace.product(bound.r), slice_of(p)
    split = memspace.split_condition(outer, r, piece) if p.rows and few_rows else ""
    launch = [f"{name} grid=({grid}) block=({p.threads}) smem=0 args=({args})"
              + (f" when=(not ({split}))" if split else "")]
    if split:
        finish = f"cdiv({r}, {piece})" if p.op in NORMS else "1"
        launch += [f"{name}_parts grid=(cdiv({r}, {piece}), {outer}) block=({p.tx}) smem=0 "
                   f"args=({args}) when=({split})",
                   f"{name}_finish grid=({finish}, {outer}) block=({p.tx}) smem=0 "
                   f"args=({args}) when=({split})"]
        how += (f"; where rows are few and long ({split}), each row is cut into slices of "
                f"{piece} across blocks of {p.tx}: one launch reduces each slice to a state, a "
                "second combines a row's states")
    result = "int64 indices" if p.op in INDEX_OPS else dtype
    what = (f"{bound.x} standardized over R = {r} (less its mean, divided by sqrt(var + eps), "
            f"no weights) -> {bound.y} ({dtype}, {bound.x}'s shape; a second pass re-reads "
            f"{bound.x})" if p.op == "layernorm" else
            f"{bound.x} divided by its {p.op.removesuffix('norm')} norm over R = {r} -> "
            f"{bound.y} ({dtype}, {bound.x}'s shape; a second pass re-reads {bound.x})"
            if p.op in NORMS else
            f"{p.op} of {bound.x} over R = {r} -> {bound.y} ({result})")
    about = (f"{op_name} is a reduction (its spec says {claim}): {what}; OUTER = "
             f"{memspace.product(bound.outer)}, INNER = "
             f"{memspace.product(bound.inner)}. {how}; {p.vec} x {dtype} per access, {p.unroll} in "
             f"flight per thread{', evict-first loads' if p.hint else ''}; float32 math; any "
             "sizes.")
    params = ((f"#include <{info.header}>\n" if info.header else "")
              + f"typedef {info.ctype} T;\n#define KGEN_OP {KGEN_OP[p.op]}\n"
              + (f"#define KGEN_EPS {eps!r}f\n" if p.op in EPS_OPS else "")
              + f"constexpr int TX = {p.tx}, TY = {p.ty}, VEC = {p.vec}, UNROLL = {p.unroll}, "
              f"ROWS = {p.rows}, HINT = {p.hint}, MIN_BLOCKS = "
              f"{memcost.min_blocks(arch, p.threads, registers(p))};\n"
              f"#define SPLIT {int(bool(split))}\n"
              f"#define DIMS {', '.join(f'int d_{s}' for s in symbols)}\n"
              f"#define OUTER ((long long)({memspace.c_product(bound.outer)}))\n"
              f"#define RLEN ({memspace.c_product(bound.r)})\n"
              f"#define INNER ({memspace.c_product(bound.inner)})\n")
    return contract_header(op_name, dtype, p.choices, launch, about) + fill(TEMPLATE, params,
                                                                             name)
