"""The row-wise template's parameters and rendering (the CUDA is templates/rowwise.cu): sum, max,
argmax (int64, first index on ties), softmax, log_softmax, layernorm and rmsnorm over the last dim
of X[M,N].

Parameters: tpr threads per row (32: a warp per row; more: the block's warps share it through
shared memory); rpb rows per block; vec elements per access (16 bytes at most); cache accesses a
thread holds per chunk (a row of N <= tpr * vec * cache is read once and kept in registers);
online (softmax and layernorm rows too long to keep: one statistics pass instead of two); hint
(1: X read evict-first, for rows read once).

These are the parameters of the file's first kernel, the one the search tunes, for rows up to its
chunk. Softmax, layernorm and rmsnorm read a row more than once, so a bench row longer than the
chunk would be streamed and re-read; for those, `ladder` adds a kernel per longer class of bench
row that keeps it in registers, and the launch lines pick the kernel by N.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kgen.arch import Arch
from kgen.author import memcost, memspace
from kgen.author.common import contract_header, fill
from kgen.dtypes import DTYPES

TEMPLATE = "rowwise"
OPS = {"sum": 0, "max": 1, "argmax": 2, "softmax": 3, "layernorm": 4, "rmsnorm": 5,
       "log_softmax": 6}
REDUCTIONS = ("sum", "max", "argmax")  # one pass, one value per row
ONLINE_OPS = ("softmax", "log_softmax", "layernorm")  # one-pass statistics differ from two passes
REREAD_OPS = ("softmax", "log_softmax", "layernorm", "rmsnorm")  # a streamed row is read again
# Few long rows: these ops' files can also cut each row across blocks (memspace.split_condition).
SPLIT_OPS = ("layernorm", "rmsnorm")
_X = ("X", "input", memspace.MN, None)
_Y = ("Y", "output", memspace.MN, None)
_W = ("weight", "weight", ("N",), None)
SIGNATURES = {
    "sum": (memspace.MN, (_X, ("Y", "output", ("M",), None)), ()),
    "max": (memspace.MN, (_X, ("Y", "output", ("M",), None)), ()),
    "argmax": (memspace.MN, (_X, ("I", "output", ("M",), "int64")), ()),
    "softmax": (memspace.MN, (_X, _Y), ()),
    "log_softmax": (memspace.MN, (_X, _Y), ()),
    "layernorm": (memspace.MN, (_X, _W, ("bias", "weight", ("N",), None), _Y), ("eps",)),
    "rmsnorm": (memspace.MN, (_X, _W, _Y), ("eps",)),
}
ARGS = {"sum": "X, Y, M, N", "max": "X, Y, M, N", "argmax": "X, I, M, N",
        "softmax": "X, Y, M, N", "log_softmax": "X, Y, M, N",
        "layernorm": "X, weight, bias, Y, M, N, eps", "rmsnorm": "X, weight, Y, M, N, eps"}
# Napkin registers: a base per op plus the cached values (at least 3 per access: each keeps its
# own address and guard) plus a quarter of the values. ptxas 13.0 on sm_90 without a cap, 256
# threads: float32 softmax with 4 float4s per thread 38 (napkin 44), with 8 float4s 56 online
# and 64 two-pass (napkin 64: so a 1024-thread block, capped at 64, can hold a row of 32768),
# with 8 scalars 48 (napkin 50). Layernorm and rmsnorm use more without a cap than under one
# (float32 layernorm, 4 float4s: 69-72 uncapped, 63 capped at 64 with no spills), so for them the
# napkin is what fits under the cap, not what ptxas takes when it may take more.
_OVERHEAD = {"sum": 24, "max": 24, "argmax": 28, "softmax": 24, "layernorm": 36, "rmsnorm": 28,
             "log_softmax": 24}


@dataclass(frozen=True)
class RowParams:
    op: str = "softmax"
    tpr: int = 256  # threads per row
    rpb: int = 1  # rows per block
    vec: int = 4  # elements per access
    cache: int = 4  # accesses per thread per chunk
    online: int = 1  # streamed softmax/layernorm rows: one statistics pass (1) or two (0)
    hint: int = 0  # 1: X read evict-first (__ldcs)

    template = TEMPLATE

    @property
    def threads(self) -> int:
        return self.tpr * self.rpb

    @property
    def smem_bytes(self) -> int:
        """Static shared memory: one 16-byte reduction state per warp."""
        return self.threads // 32 * 16

    @property
    def chunk(self) -> int:
        """Elements a row group holds at once (a row up to this long is read once)."""
        return self.tpr * self.vec * self.cache

    @property
    def choices(self) -> str:
        return memspace.choices_of(TEMPLATE, self)


PARAMS = RowParams


def axes(dtype: str, op: str) -> dict[str, tuple[int, ...]]:
    size = DTYPES[dtype].size
    return {"tpr": (32, 64, 128, 256, 512, 1024), "rpb": (1, 2, 4, 8),
            "vec": tuple(v for v in (1, 2, 4, 8) if 4 <= v * size <= 16),
            "cache": (1, 2, 4, 8, 16), "online": (1, 0) if op in ONLINE_OPS else (0,),
            "hint": (0, 1)}


def registers(p: RowParams) -> int:
    values = p.cache * p.vec
    # 16-bit types (8 per access) convert every value to float and back: a few more (ptxas:
    # softmax with 32 values per thread 61-63 in bfloat16, 56 in float32; capped at 64 in a
    # 1024-thread block, the 16-bit kernel spilled)
    wide = values // 8 if p.vec == 8 else 0
    return min(255, _OVERHEAD[p.op] + max(values, 3 * p.cache) + values // 4 + wide)


def problems(p: RowParams, arch: Arch, dtype: str) -> list[str]:
    out = []
    if not 64 <= p.threads <= 1024:
        out.append(f"{p.threads} threads per block (64 to 1024)")
    if p.vec * DTYPES[dtype].size > 16:
        out.append(f"{p.vec} x {dtype} is more than one 16-byte access")
    if p.cache * p.vec > 64:
        out.append(f"{p.cache * p.vec} cached values per thread would not fit in registers")
    out += memcost.register_problems(arch, p.threads, registers(p))
    if p.online and p.op not in ONLINE_OPS:
        out.append(f"online statistics are for {' and '.join(ONLINE_OPS)}")
    return out


# A default thread holds 16 values (64 bytes of float32 math) per chunk: enough loads in flight,
# few enough registers (ptxas on sm_90: 32-48) for 5-8 blocks of 256 threads per SM.
VALUES = 16


def first(arch: Arch, dtype: str, n: int, op: str) -> tuple[RowParams, str]:
    vec = 16 // DTYPES[dtype].size
    cache = max(1, VALUES // vec)
    if op in REDUCTIONS:
        if n >= 16384:
            return RowParams(op, 256, 1, vec, cache, 0), (
                f"rows of {n} (the first bench size) are long: a 256-thread block per row, "
                f"each thread with {cache} 16-byte loads in flight, one shared-memory combine "
                "per row")
        # The fastest of sweeps of this template (the README's memory-bound table has the
        # figures): 128 threads per row with the row's loads all in flight, read evict-first;
        # 2 rows per block, 1 for argmax (its value-and-index pairs).
        if op == "argmax" and n >= 4096:
            # Judged at every bench size: the one configuration whose slowest size (8192 x 8192)
            # kept 90% of the copy bandwidth. Shorter rows keep the 128-thread form.
            loads = max(1, 32 // vec)
            return RowParams(op, 256, 2, vec, loads, 0, 1), (
                f"each row of {n} (the first bench size) is read once: 256 threads per row, 2 "
                f"rows per 512-thread block, up to {loads} 16-byte loads in flight per thread, "
                "read evict-first (of a sweep of this template on an H200 at every bench size, "
                "the one whose slowest size kept 90% of the copy bandwidth)")
        full = max(1, 64 // vec)
        rpb = 1 if op == "argmax" else 2
        return RowParams(op, 128, rpb, vec, full, 0, 1), (
            f"each row of {n} (the first bench size) is read once: 128 threads per row, {rpb} "
            f"row(s) per {128 * rpb}-thread block, up to {full} 16-byte loads in flight per "
            "thread, read evict-first (the best of a sweep of this template on an H200)")
    tpr = min(1024, max(32, memspace.pow2_at_least(-(-n // (vec * cache)))))
    cache = min(16, memspace.pow2_at_least(-(-n // (tpr * vec))))  # more only past 1024 threads
    online = int(op in ONLINE_OPS)
    p = RowParams(op, tpr, max(1, 256 // tpr), vec, cache, online)
    while problems(p, arch, dtype) and p.cache > 1:
        p = RowParams(op, tpr, p.rpb, vec, p.cache // 2, online)
    where = (f"so a row of {n} (the first bench size) is read from DRAM once and kept in "
             "registers for the output pass" if n <= p.chunk else
             f"streaming rows of {n} chunk by chunk with one-pass (online) statistics")
    return p, (f"{tpr} threads per row ({p.rpb} row(s) per block), 16-byte accesses, {p.cache} "
               f"per thread, {where}")


def estimate(p: RowParams, arch: Arch, dtype: str, n: int, reg_scale: float = 1.0
             ) -> memcost.MemEstimate:
    width = p.vec * DTYPES[dtype].size
    regs = round(registers(p) * reg_scale)
    span = p.tpr * p.vec  # elements one sweep of the row group covers
    used = n / (span * -(-n // span))  # lanes idle past the end of short rows
    passes = 1 if p.op in REDUCTIONS or n <= p.chunk else (
        2 if p.online or p.op == "rmsnorm" else 3)
    # Re-reads come from L2, not DRAM, but still cost; a barrier per combine when warps share a
    # row, and few rows in flight per SM leave it idle at each combine.
    factor = used * 0.92 ** (passes - 1) * (0.97 if p.tpr > 32 else 1.0)
    blocks = memcost.blocks_per_sm(arch, p.threads, regs, p.smem_bytes)
    if blocks * p.rpb < 4:
        factor *= 0.9
    note = f"{passes} read(s) of each row, {used:.0%} of lanes busy at N={n}"
    return memcost.estimate(arch, p.threads, regs, p.smem_bytes, width * p.cache, width, factor,
                            note)


def ladder(p: RowParams, arch: Arch, dtype: str, rows: Sequence[int] = ()
           ) -> tuple[RowParams, ...]:
    """The file's kernels, shortest rows first: `p` for rows up to its chunk, then (for the ops
    that re-read a streamed row) one for each longer class of the bench row lengths `rows`: the
    threads per row doubled up to 1024 (rows per block halved, so the block keeps its size), then
    the accesses per thread doubled, until the row fits or the next step would not be valid (too
    many registers). The last kernel also takes any longer row, streamed."""
    if p.op not in REREAD_OPS:
        return (p,)
    shapes = [p]
    for n in sorted(set(rows)):
        q = shapes[-1]
        while q.chunk < n:
            wider = replace(q, tpr=2 * q.tpr, rpb=max(1, q.rpb // 2)) if q.tpr < 1024 \
                else replace(q, cache=2 * q.cache)
            if problems(wider, arch, dtype):
                break
            q = wider
        if q.chunk > shapes[-1].chunk:
            shapes.append(q)
    return tuple(shapes)


@dataclass(frozen=True)
class RowDims:
    """A bound op's own names (a `same_as: layernorm` spec of any rank, kgen.ops.sameas): the
    shipped op's tensor and parameter names -> the spec's, and X's dims before the normalized ones
    (M is their product, 1 for none) and the normalized ones (N). The kernel then takes X's size
    symbols and forms M and N from them."""

    names: dict[str, str]
    leading: tuple[str, ...]
    trailing: tuple[str, ...]

    @property
    def symbols(self) -> list[str]:
        return list(dict.fromkeys(d for d in (*self.leading, *self.trailing) if not d.isdigit()))

    def args(self, op: str) -> str:
        """ARGS[op] in the spec's names, X's size symbols in place of M and N."""
        out: list[str] = []
        for arg in ARGS[op].split(", "):
            out += self.symbols if arg == "M" else [] if arg == "N" else [self.names[arg]]
        return ", ".join(out)

    def params(self) -> str:
        """The template's ROW_SIZES, ROW_M and ROW_N over the kernel's d_SYMBOL arguments."""
        return (f"#define ROW_SIZES {', '.join(f'int d_{s}' for s in self.symbols)}\n"
                f"#define ROW_M ({memspace.c_product(self.leading)})\n"
                f"#define ROW_N ({memspace.c_product(self.trailing)})\n")


def render(p: RowParams, dtype: str, arch: Arch, rows: Sequence[int] = (),
           dims: RowDims | None = None, few_rows: bool = False) -> str:
    """The full .cu source (contract header first) for these parameters, dtype and arch; `rows`:
    the op's bench row lengths (they decide the file's further kernels, see `ladder`); `dims`:
    a bound op's names and dims (the launch lines then use them); `few_rows`: a bench size has
    few rows (memspace.few_rows), so for SPLIT_OPS the file adds the split-row pair of kernels."""
    info = DTYPES[dtype]
    name = f"{p.op}_row_{info.short}"
    shapes = ladder(p, arch, dtype, rows)
    m, n = (memspace.product(dims.leading), memspace.product(dims.trailing)) if dims \
        else ("M", "N")
    args = dims.args(p.op) if dims else ARGS[p.op]
    split = memspace.split_condition(m, n, p.chunk) if few_rows and p.op in SPLIT_OPS else ""
    launches, kernels = [], []
    for i, q in enumerate(shapes):
        kernel = name if i == 0 else f"{name}_upto{q.chunk}" if i < len(shapes) - 1 \
            else f"{name}_long"
        bounds = [f"{n} > {shapes[i - 1].chunk}"] if i else []
        bounds += [f"{n} <= {q.chunk}"] if i < len(shapes) - 1 else []
        bounds += [f"not ({split})"] if split else []
        when = f" when=({' and '.join(bounds)})" if bounds else ""
        launches.append(f"{kernel} grid=(cdiv({m}, {q.rpb})) block=({q.threads}) smem=0 "
                        f"args=({args}){when}")
        rows_of = f"rows up to {q.chunk} in registers" + (
            "" if i < len(shapes) - 1 else ", longer ones streamed")
        kernels.append(f"// {q.tpr} threads per row, {q.rpb} row(s) per block, {q.cache} "
                       f"accesses per thread: {rows_of}\n"
                       f'extern "C" __global__ void __launch_bounds__({q.threads}, '
                       f"{memcost.min_blocks(arch, q.threads, registers(q))}) {kernel}"
                       f"(ROW_PARAMS) {{\n  rowwise<{q.tpr}, {q.rpb}, {q.cache}>(ROW_ARGS);\n}}")
    if split:
        bounds_of = memcost.min_blocks(arch, p.tpr, registers(replace(p, rpb=1)))
        for part, body in (("parts", "row_parts"), ("apply", "row_apply")):
            launches.append(f"{name}_{part} grid=(cdiv({n}, {p.chunk}), {m}) block=({p.tpr}) "
                            f"smem=0 args=({args}) when=({split})")
            kernels.append(f"// split rows, {p.chunk}-element slices of {p.tpr} threads: "
                           f"{'each slice to a state' if part == 'parts' else 'Y from them'}\n"
                           f'extern "C" __global__ void __launch_bounds__({p.tpr}, '
                           f"{bounds_of}) {name}_{part}(ROW_PARAMS) {{\n"
                           f"  {body}<{p.tpr}, {p.cache}>(ROW_ARGS);\n}}")
    who = "a warp" if p.tpr == 32 else f"{p.tpr} threads"
    stats = ""
    if p.op in ONLINE_OPS:
        stats = "; longer rows: " + ("one-pass (online) statistics" if p.online
                                     else "two statistics passes")
    more = "" if len(shapes) == 1 else (
        f"; {len(shapes) - 1} more kernel(s) for longer rows (up to "
        f"{shapes[-1].chunk} in registers), chosen by N in the launch lines")
    if split:
        more += (f"; where rows are few and long ({split}), each row is cut into slices of "
                 f"{p.chunk} across blocks: one launch reduces each slice to a state, a second "
                 "combines the row's states and writes Y")
    shape = "any M, N" if dims is None else (
        f"any sizes; rows of N = {n} (the last {len(dims.trailing)} dim(s) of "
        f"{dims.names['X']}), M = {m} of them")
    about = (f"Row-wise {p.op}: {who} per row, {p.rpb} row(s) per block, {p.vec} x {dtype} per "
             f"access, {p.cache} accesses per thread per chunk (rows up to {p.chunk} stay in "
             f"registers){stats}{more}; float32 math; {shape}.")
    params = ((f"#include <{info.header}>\n" if info.header else "")
              + f"typedef {info.ctype} T;\n#define KGEN_OP {OPS[p.op]}\n"
              f"constexpr int VEC = {p.vec}, ONLINE = {p.online}, HINT = {p.hint};\n"
              + (dims.params() if dims else ""))
    return (contract_header(p.op, dtype, p.choices, launches, about)
            + fill(TEMPLATE, params, name, "\n".join(kernels)))
