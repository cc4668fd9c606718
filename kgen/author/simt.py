"""The SIMT gemm template's parameters and rendering (the CUDA is templates/gemm_simt.cu): block
tile BMxBNxBK, thread tile TMxTN, float4 when it can. float32, and the float16/bfloat16 fallback
where tensor cores are not used.

sk=1 makes it persistent (one CTA per SM) with stream-K (templates/streamk.cuh): the last tiles
are dealt evenly over all CTAs along K, so a partial last round leaves no SM idle, at a cost per
tile (about 4% on an H100 where nothing is cut). sk=2 puts both kernels in one file and picks one
per size at launch: the one-tile grid where its last round is nearly full (at most 1/ONE_TILE_IDLE
of its CTA slots idle), the persistent kernel elsewhere (benchmarks/findings.md, twenty-seventh
session). sk=3, the float32 default, launches both, one after the other: the one-tile grid for
the tiles before the last ones, then the persistent kernel, which cuts those over every SM (more
than half a round left over: those tiles; fewer: those and the round before them, so that no
CTA gets a small piece of one tile; a round nearly full: nothing, the one-tile grid runs every
tile). Only the cut tiles pay the persistent kernel's cost (twenty-eighth session)."""

from __future__ import annotations

from dataclasses import dataclass

from kgen.author.common import contract_header, fill
from kgen.dtypes import DTYPES


@dataclass(frozen=True)
class SimtParams:
    bm: int = 128
    bn: int = 128
    bk: int = 8
    tm: int = 8
    tn: int = 8
    stages: int = 2  # 2: the next tile is fetched into registers while this one is computed
    vec: int = 4  # width of the global loads/stores on the fast path (4 = float4, 1 = scalar)
    swz: int = 0  # 1: the A tile unpadded and XOR-swizzled (chosen when a profile shows bank
    #               conflicts; not part of the searched space otherwise)
    sk: int = 0  # 1: persistent, stream-K spread over every CTA; 2: by size; 3: two launches
    #              (see above)

    template = "simt"

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory: A is stored transposed, with 4 floats of padding per row unless
        swizzled."""
        return self.stages * self.bk * ((self.bm + (0 if self.swz else 4)) + self.bn) * 4

    @property
    def choices(self) -> str:
        return (f"template=simt tile={self.bm}x{self.bn}x{self.bk} thread={self.tm}x{self.tn} "
                f"stages={self.stages} vec={self.vec}" + (" swz=1" if self.swz else "")
                + (f" sk={self.sk}" if self.sk else ""))


# Conversion helpers the template switches on for the 16-bit dtypes.
_SWITCH = {"float16": "#define KGEN_HALF 1\n", "bfloat16": "#define KGEN_BF16 1\n"}


# sk=2 runs the one-tile grid where at most 1/ONE_TILE_IDLE of its CTA slots idle in the last
# round. On an H100 the persistent kernel cost 4.0-4.4% a tile against the one-tile grid (4096^3,
# 3% of the slots idle: 1.0% slower; 8192^3, 3%: 1.2% slower; 3000x5000x2000, 9%: 4% faster), so
# the one-tile grid wins where less than about 4% would idle.
ONE_TILE_IDLE = 25
# sk=3 runs every tile in the one-tile grid where at most 1/SK_FULL of its last round's CTAs idle
# (templates/streamk.cuh: sk_one_tile_tiles, which must agree).
SK_FULL = 20


def render(p: SimtParams, dtype: str) -> str:
    """The full .cu source (contract header first) for these parameters and dtype."""
    info = DTYPES[dtype]
    name = f"gemm_simt_{info.short}"
    tiles = f"cdiv(M,{p.bm}) * cdiv(N,{p.bn})"
    slots = f"cdiv({tiles}, SMS) * SMS"  # the one-tile grid's CTA slots: whole rounds
    # sk=3's kernels take the SM count too, to split the tiles as streamk.cuh says.
    args = "A, B, C, M, N, K, SMS" if p.sk == 3 else "A, B, C, M, N, K"
    tail = f"block=({p.threads}) smem={p.smem_bytes} args=({args})"
    # Stream-K is persistent: one CTA per SM at most, never more than there are tiles.
    persistent = f"grid=(min(SMS, {tiles})) {tail}"
    one_tile = f"grid=(cdiv(N,{p.bn}), cdiv(M,{p.bm})) {tail}"
    launch: str | tuple[str, ...] = f"{name} {persistent if p.sk == 1 else one_tile}"
    if p.sk == 3:
        left = f"(({tiles}) % SMS)"
        # sk_one_tile_tiles: the one-tile grid runs all, some or none of the tiles
        everything = f"({left} == 0 or (SMS - {left}) * {SK_FULL} <= SMS)"
        some = f"{tiles} >= SMS and ({everything} or 2 * {left} > SMS or {tiles} >= 2 * SMS)"
        launch = (f"{name} grid=(cdiv(N,{p.bn}), cdiv(M,{p.bm})) {tail} when=({some})",
                  f"{name}_sk grid=(min(SMS, {tiles})) {tail} "
                  f"when=({tiles} < SMS or not {everything})")
    if p.sk == 2:
        idle = f"({slots} - {tiles}) * {ONE_TILE_IDLE}"
        launch = (f"{name}_sk {persistent} when=({idle} > {slots})",
                  f"{name} {one_tile} when=({idle} <= {slots})")
    form = ("", ", persistent with stream-K for a last partial round",
            ", one tile per CTA where its last round is nearly full, else persistent with "
            "stream-K", ", one tile per CTA but for the last tiles, which a persistent launch "
            "then cuts along K over every SM")[p.sk]
    about = (f"SIMT gemm, block tile {p.bm}x{p.bn}x{p.bk}, thread tile {p.tm}x{p.tn}, "
             f"{p.stages}-stage shared memory{', swizzled A tile' * p.swz}{form}, float32 "
             "accumulation; any M, N, K.\n"
             "// C[M,N] = A[M,K] @ B[K,N], all row-major.")
    params = ((f"#include <{info.header}>\n" if info.header else "") + _SWITCH.get(dtype, "")
              + f"typedef {info.ctype} T;\n"
              f"constexpr int BM = {p.bm}, BN = {p.bn}, BK = {p.bk}, TM = {p.tm}, TN = {p.tn};\n"
              f"constexpr int STAGES = {p.stages}, VEC = {p.vec}, SWZ = {p.swz};\n"
              f"#define SK {min(p.sk, 1)}\n#define ROUNDS {int(p.sk == 3)}\n")
    source = fill("gemm_simt", params, name)
    if p.sk >= 2:
        source = _both_kernels(source, name)
    return contract_header("gemm", dtype, p.choices, launch, about) + source


def _both_kernels(source: str, name: str) -> str:
    """The stream-K build's kernel renamed {name}_sk, then the same kernel text again compiled as
    the one-tile grid (KGEN_STREAM_K 0): each reads exactly as the file built for it alone."""
    at = source.index('extern "C" __global__')
    head, kernel = source[:at], source[at:]
    signature = f"\n{name}(const T*"
    assert kernel.count(signature) == 1
    return (head + kernel.replace(signature, f"\n{name}_sk(const T*") + "\n"
            "// The one-tile grid: the same kernel text without stream-K.\n"
            "#undef KGEN_STREAM_K\n#define KGEN_STREAM_K 0\n" + kernel)
