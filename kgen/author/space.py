"""The parameter space of each gemm template, its validity rules against the arch, and a cost model.

A configuration is a template's frozen params object (SimtParams, MmaParams, WgmmaParams or
Tf32x3Params); its
`choices` string is how it appears in the contract and the history, and `parse_choices` reads it
back.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from typing import Any

from kgen.arch import Arch
from kgen.author import mma, simt, tf32x3, wgmma
from kgen.author.mma import MmaParams
from kgen.author.simt import SimtParams
from kgen.author.tf32x3 import Tf32x3Params
from kgen.author.wgmma import WgmmaParams
from kgen.dtypes import DTYPES

Params = SimtParams | MmaParams | WgmmaParams | Tf32x3Params

# The values each parameter may take; neighbours are one step along one of these lists.
SIMT_AXES = {"bm": (32, 64, 128, 256), "bn": (32, 64, 128, 256), "bk": (8, 16, 32),
             "tm": (4, 8, 16), "tn": (4, 8, 16), "stages": (1, 2), "vec": (1, 4),
             "sk": (0, 1, 2, 3)}
MMA_AXES = {"bm": (64, 128, 256), "bn": (64, 128, 256), "bk": (32, 64),
            "wm": (1, 2, 4), "wn": (1, 2, 4), "stages": (2, 3, 4, 5), "group": (1, 8, 16),
            "pipe": (1, 2)}
# pipe=2 ceiling on (napkin registers + 16-byte loads per thread), from ptxas on sm_90: 64x64 warp
# tiles (estimate 232) stay unspilled at up to 16 loads per thread (128x256x64 2x4: 12 loads, 246
# registers) and spill beyond (128x64x64 2x1: 24 loads); 128x32 warp tiles need 248 + loads.
MMA_PIPE_LIMIT = 248
WGMMA_AXES = {"bm": (128,), "bn": (128, 192, 256), "stages": (3, 4, 5), "consumers": (1, 2),
              "cluster": (1, 0, 2), "group": (1, 8, 16), "epi": (0, 1), "pp": (0, 1),
              "cpass": (1, 2)}
# wgmma's sk (stream-K for the tiles of a last, partial round) is not searched but follows the
# cluster (`settled`): the cost model does not see sizes, and at gemm's bench sizes on 132 SMs it
# cuts nothing (the leftover tiles are more than half the SMs), so sk=0 would time the same
# kernel again; where it cuts, it wins (benchmarks/findings.md). cluster=0 (clusters of 2 only at
# sizes where B's rows are misaligned, wgmma.MISALIGNED_B) cuts in both of its launches, a cluster
# at a time where it launches clusters; cluster=2 (clusters everywhere, compiled in) is built
# without stream-K, as it was timed. cluster=0 sits between 1 and 2 on its axis: a step from either.
# 3xTF32 (float32 on the tensor cores): every tile shape with BK=32 runs within 1% of the others
# (the instruction stream, not the tile, sets the pace), BK=16 6% behind. Warp tiles hold at most
# 64 accumulators (and 64 more for the k-slice's partial): MIN_BLOCKS 2 and 128x256 tiles spilled.
TF32X3_AXES = {"bm": (64, 128), "bn": (64, 128), "bk": (16, 32), "wm": (1, 2, 4), "wn": (1, 2, 4),
               "stages": (3, 4), "group": (1, 8, 16)}
_AXES = {SimtParams: SIMT_AXES, MmaParams: MMA_AXES, WgmmaParams: WGMMA_AXES,
         Tf32x3Params: TF32X3_AXES}
# A template of another arithmetic that the search tries once, by its default, after the first
# timed candidate (see `alternative`): 3xTF32 for float32 where mma.sync takes TF32 (sm_80+).
ALTERNATIVE_TEMPLATES = ("tf32x3",)


def wgmma_ready(arch: Arch) -> bool:
    """wgmma exists only in the arch-specific Hopper target (sm_90a), not in sm_90's."""
    return arch.major_minor == 90 and arch.suffix == "a"


def templates_for(arch: Arch, dtype: str) -> tuple[str, ...]:
    """Templates that can serve this dtype on this arch, preferred first. float32 on sm_80+ has
    the 3xTF32 tensor-core template after SIMT: a different arithmetic, tried once as an
    alternative (`alternative`) and kept only where it passes the spec's float32 tolerance."""
    info = DTYPES.get(dtype)
    if info is None or not info.is_float or info.size > 4:
        return ()
    if info.tensor_cores and arch.major_minor >= 80 and dtype in arch.facts.mma_dtypes:
        return ("wgmma", "mma", "simt") if wgmma_ready(arch) else ("mma", "simt")
    if dtype == "float32" and arch.major_minor >= 80:
        return ("simt", "tf32x3")
    return ("simt",)


# First candidates, best first; the first that fits the arch wins. Why each head leads, with the
# measurements, is in benchmarks/findings.md ("gemm: why each default leads"). mma: 64x64 warp
# tiles cut the ldmatrix bytes per mma by a third against 64x32, 128x256 cuts the L2->SM bytes
# per flop by a quarter against 128x128, and double-buffered fragments keep the tensor cores fed
# with 8 warps per SM; 4 stages (204 KiB) fit sm_90/sm_100, 3 stages sm_80, BK=32 the 99 KiB
# parts (sm_86/sm_89/sm_120).
OLD_MMA_DEFAULT = MmaParams(128, 128, 64, 2, 4, 3, 1, 1)
_DEFAULTS: dict[str, tuple[Params, ...]] = {
    "mma": (MmaParams(128, 256, 32, 2, 4, 4, 8, 2),
            MmaParams(128, 256, 64, 2, 4, 4, 8, 2), MmaParams(128, 256, 64, 2, 4, 3, 8, 2),
            MmaParams(128, 256, 32, 2, 4, 3, 8, 2), OLD_MMA_DEFAULT,
            MmaParams(128, 128, 32, 2, 4, 4), MmaParams(128, 128, 32, 2, 4, 3),
            MmaParams(64, 64, 32, 2, 2, 3)),
    # simt: 128x256x16 in two launches (sk=3): the one-tile grid for the tiles before the last
    # ones, then the persistent stream-K kernel cutting those over every SM, each kernel where
    # it is the faster (twenty-eighth session); sk=1 alone next, then the one-tile grid alone.
    "simt": (SimtParams(128, 256, 16, 8, 16, 2, 4, sk=3),
             SimtParams(128, 256, 16, 8, 16, 2, 4, sk=1), SimtParams(128, 256, 16, 8, 16, 2, 4),
             SimtParams(128, 128, 8, 8, 8, 2, 4),
             SimtParams(128, 128, 8, 8, 8, 2, 1), SimtParams(64, 64, 16, 4, 4, 2, 1)),
    # wgmma: the fast.cu/CUTLASS shape (hopper-gemm.md), 128x256x64 with two consumers of
    # m64n256k16, persistent in groups of 8 tile rows, a TMA-store epilogue; stream-K (sk=1) for a
    # last round with few tiles; clusters of 2 only where B's rows are misaligned (cluster=0);
    # the C tile staged half at a time (cpass=2) to make room for a fourth stage.
    "wgmma": (WgmmaParams(stages=4, epi=1, sk=1, cluster=0, cpass=2),
              WgmmaParams(stages=3, epi=1, sk=1, cluster=0), WgmmaParams(stages=3, epi=1, sk=1),
              WgmmaParams(sk=1)),
    # 3xTF32: 128x128x32, 2x4 warps, 3 stages; the 99 KiB parts (sm_86/sm_89/sm_120) take
    # 128x128x16 with 4 stages (74 KiB), unmeasured there.
    "tf32x3": (Tf32x3Params(), Tf32x3Params(128, 128, 16, 2, 4, 4, 8),
               Tf32x3Params(64, 128, 16, 2, 2, 3, 8)),
}


def default(arch: Arch, dtype: str, template: str | None = None) -> Params:
    """A sensible first candidate of `template` (the preferred one when None): the best measured
    configuration that fits this arch."""
    for p in _DEFAULTS[template or templates_for(arch, dtype)[0]]:
        if not problems(p, arch, dtype):
            return p
    raise AssertionError(f"no default configuration fits {arch.name} {dtype}")


def problems(p: Params, arch: Arch, dtype: str) -> list[str]:
    """Why a configuration cannot be proposed for this arch/dtype; empty when it is valid."""
    facts = arch.facts
    out = []
    if p.threads > 1024 or p.threads < 32:
        out.append(f"{p.threads} threads per block")
    if isinstance(p, SimtParams):
        if p.bm % (p.tm * 4) or p.bn % (p.tn * 4) or p.tm % 4 or p.tn % 4:
            out.append("thread tile must split the block tile in 4-wide strips")
        elif (p.bm * p.bk) % (4 * p.threads) or (p.bk * p.bn) % (4 * p.threads) or p.bk % 4:
            out.append("tile loads do not divide evenly over the threads")
        if p.vec == 4 and dtype != "float32":
            out.append("float4 loads are for float32 only")
        if p.tm * p.tn > 128:
            out.append(f"thread tile {p.tm}x{p.tn} needs more than 255 registers")
        if p.sk not in (0, 1, 2, 3):
            out.append(f"sk={p.sk}: 0 (one tile per CTA), 1 (persistent, stream-K), 2 (by size) "
                       "or 3 (two launches)")
        elif p.sk and (p.tm * p.tn <= 64 or p.threads < 256):
            # The persistent grid is one CTA per SM; a block that leaves room for a second would
            # run at half its occupancy.
            out.append("stream-K (persistent, one CTA per SM) needs a block that fills an SM's "
                       "registers: a thread tile over 64 and 256+ threads")
    elif isinstance(p, WgmmaParams):
        out += _wgmma_problems(p, arch, dtype)
    elif isinstance(p, Tf32x3Params):
        out += _tf32x3_problems(p, arch, dtype)
    else:
        if "mma" not in templates_for(arch, dtype):
            out.append(f"no mma.sync for {dtype} on {arch.name}")
        wtm, wtn = p.bm // p.wm, p.bn // p.wn
        if p.bm % p.wm or p.bn % p.wn or wtm % 16 or wtn % 16:
            out.append("warp tile must be a multiple of 16x16")
        elif (p.bm * p.bk // 8) % p.threads or (p.bk * p.bn // 8) % p.threads:
            out.append("tile loads do not divide evenly over the threads")
        elif p.acc_per_thread > 128:
            out.append(f"{p.acc_per_thread} accumulators per thread would exceed 255 registers")
        elif p.pipe == 2 and estimated_registers(p) + p.chunks_per_thread > MMA_PIPE_LIMIT:
            out.append("double-buffered fragments of this warp tile would spill")
        if p.pipe == 2 and p.bk < 32:
            out.append("double-buffered fragments need at least two 16-wide k-steps per tile")
    if p.smem_bytes > facts.max_smem_per_block:  # every template sizes its tiles dynamically
        out.append(f"{p.smem_bytes} bytes of shared memory (limit "
                   f"{facts.max_smem_per_block} on {arch.name})")
    if estimated_registers(p) * p.threads > facts.registers_per_sm:
        out.append("not even one block fits the register file")
    return out


def _tf32x3_problems(p: Tf32x3Params, arch: Arch, dtype: str) -> list[str]:
    out = []
    if "tf32x3" not in templates_for(arch, dtype):
        out.append(f"3xTF32 is for float32 on sm_80+ (not {dtype} on {arch.name})")
    wtm, wtn = p.bm // p.wm, p.bn // p.wn
    if p.bm % p.wm or p.bn % p.wn or wtm % 16 or wtn % 8:
        out.append("warp tile must be a multiple of 16x8")
    elif (p.bm * p.bk // 4) % p.threads or (p.bk * p.bn // 4) % p.threads \
            or p.threads % (p.bn // 4):
        out.append("tile loads do not divide evenly over the threads")
    elif p.acc_per_thread > 64:
        out.append(f"{p.acc_per_thread} accumulators per thread and as many for the k-slice's "
                   "partial would exceed 255 registers")
    return out


def _wgmma_problems(p: WgmmaParams, arch: Arch, dtype: str) -> list[str]:
    out = []
    if "wgmma" not in templates_for(arch, dtype):
        out.append(f"wgmma needs sm_90a and float16/bfloat16 (not {dtype} on {arch.name})")
    if p.pp and p.consumers != 2:
        out.append("ping-pong is two consumer warpgroups taking turns")
    if p.bm % (64 * (1 if p.pp else p.consumers)) or p.bn % 64:
        out.append("each consumer warpgroup needs whole m64 row blocks and 64-column B chunks")
    elif p.acc_per_thread > 128:
        out.append(f"{p.acc_per_thread} accumulators per thread would exceed the register cap")
    if p.cluster != 1 and (p.bn // 64) % 2:
        out.append(f"clusters of 2 split B's 64-column chunks evenly (cluster={p.cluster}: "
                   f"{'always' if p.cluster else 'where N % 16 != 0'}), not {p.bn // 64}")
    if p.sk and p.cluster > 1:
        out.append("stream-K is built where the launch picks the cluster (cluster 1 or 0), not "
                   "for clusters of 2 compiled in")
    if p.cpass not in (1, 2):
        out.append(f"cpass={p.cpass}: the C tile is staged whole (1) or in two halves (2)")
    elif p.cpass == 2 and (not p.epi or p.bn < 128):
        out.append("cpass=2 stages half of a TMA-store epilogue's tile (epi=1) at a time: "
                   "it needs epi=1 and at least two 64-column chunks (bn >= 128)")
    return out


def estimated_registers(p: Params) -> int:
    """Napkin register count before ptxas has spoken: accumulators + fragments + addressing."""
    if isinstance(p, WgmmaParams):  # consumers hold the accumulators; setmaxnreg gives them 232
        return min(255, p.acc_per_thread + 40)
    if isinstance(p, SimtParams):
        loads = 4 * (p.bm * p.bk + p.bk * p.bn) // (4 * p.threads) if p.stages == 2 else 0
        return min(255, p.tm * p.tn + p.tm + p.tn + loads + 24)
    if isinstance(p, Tf32x3Params):  # accumulators, the slice's partial, big and small fragments
        frags = (p.bm // p.wm // 16) * 4 + (p.bn // p.wn // 8) * 2
        return min(255, 2 * p.acc_per_thread + 2 * frags + 40)
    frags = (p.bm // p.wm // 16) * 4 + (p.bn // p.wn // 8) * 2
    return min(255, p.acc_per_thread + frags * p.pipe + 40)


def settled(p: Params) -> Params:
    """The configuration with its derived fields set: wgmma's sk is on for cluster 1 and 0
    (clusters of 2 chosen at launch), off for clusters of 2 compiled in."""
    if isinstance(p, WgmmaParams) and p.sk != int(p.cluster < 2):
        return replace(p, sk=int(p.cluster < 2))
    return p


def space(arch: Arch, dtype: str, template: str) -> list[Params]:
    """Every valid configuration of one template, in a fixed order (the search is deterministic)."""
    cls: Any = {"simt": SimtParams, "mma": MmaParams, "wgmma": WgmmaParams,
                "tf32x3": Tf32x3Params}[template]
    axes = _AXES[cls]
    found: list[Params] = []
    for values in itertools.product(*axes.values()):
        p: Params = settled(cls(**dict(zip(axes, values, strict=True))))
        if not problems(p, arch, dtype):
            found.append(p)
    return found


def neighbours(p: Params, arch: Arch, dtype: str) -> list[Params]:
    """Valid configurations one step away along one axis, and the wide twin of a tall tile."""
    axes = _AXES[type(p)]
    out = []
    for name, values in axes.items():
        i = values.index(getattr(p, name))
        for j in (i - 1, i + 1):
            if 0 <= j < len(values):
                q = settled(type(p)(**{**p.__dict__, name: values[j]}))
                if not problems(q, arch, dtype):
                    out.append(q)
    turned = transposed(p)
    if turned is not None and not problems(turned, arch, dtype):
        out.append(turned)
    return out


def transposed(p: Params) -> Params | None:
    """A tall tile turned on its side (BMxBN -> BNxBM where BM > BN, with the thread or warp grid
    turned too); None for square and wide tiles.

    One step on one axis cannot reach it (four fields change at once), yet the two differ: on the
    H200 the wide tile was the faster for both templates (SIMT float32 128x256x16 3.04 ms against
    256x128x16 3.14 ms at 4096^3; mma float16 128x256x64 0.366 ms against 256x128x64 0.369 ms),
    A being the operand that costs more to stage. Only that direction is offered: the cost model
    scores the two alike, and a wide best's tall twin took one of the three tries the search's
    patience allows (benchmarks/h200-2026-12-03-s5/spread-f16-sm90-run3.log: it crowded out
    BK=32, which was 3.5% faster, and the run stopped)."""
    if p.bm <= p.bn:
        return None
    if isinstance(p, SimtParams):
        return replace(p, bm=p.bn, bn=p.bm, tm=p.tn, tn=p.tm)
    if isinstance(p, MmaParams | Tf32x3Params):
        return replace(p, bm=p.bn, bn=p.bm, wm=p.wn, wn=p.wm)
    return None  # wgmma's tile is fixed at 128 rows


def render(p: Params, dtype: str) -> str:
    if isinstance(p, WgmmaParams):
        return wgmma.render(p, dtype)
    if isinstance(p, Tf32x3Params):
        return tf32x3.render(p, dtype)
    return simt.render(p, dtype) if isinstance(p, SimtParams) else mma.render(p, dtype)


# group/pipe (and wgmma's sk) are optional so histories written before they existed still read
# (as 1, 1 and 0).
_CHOICES = re.compile(r"template=(?P<t>simt|mma) tile=(?P<bm>\d+)x(?P<bn>\d+)x(?P<bk>\d+) "
                      r"(?:thread=(?P<tm>\d+)x(?P<tn>\d+)|warps=(?P<wm>\d+)x(?P<wn>\d+)) "
                      r"stages=(?P<st>\d+)(?: vec=(?P<vec>\d+))?(?: swz=(?P<swz>\d+))?"
                      r"(?: group=(?P<group>\d+))?(?: pipe=(?P<pipe>\d+))?(?: sk=(?P<sk>\d+))?")


_WGMMA_CHOICES = re.compile(r"template=wgmma tile=(?P<bm>\d+)x(?P<bn>\d+)x64 "
                            r"consumers=(?P<consumers>\d+) stages=(?P<stages>\d+) "
                            r"cluster=(?P<cluster>\d+) group=(?P<group>\d+) epi=(?P<epi>\d+)"
                            r"(?: sk=(?P<sk>\d+))?(?: pp=(?P<pp>\d+))?(?: cpass=(?P<cpass>\d+))?")


_TF32X3_CHOICES = re.compile(r"template=tf32x3 tile=(?P<bm>\d+)x(?P<bn>\d+)x(?P<bk>\d+) "
                             r"warps=(?P<wm>\d+)x(?P<wn>\d+) stages=(?P<stages>\d+) "
                             r"group=(?P<group>\d+)")


def parse_choices(text: str) -> Params | None:
    """The configuration a `choices` line names, or None when it is not one of ours."""
    if w := _WGMMA_CHOICES.search(text or ""):
        return WgmmaParams(**{k: int(v) for k, v in w.groupdict().items() if v is not None})
    if t := _TF32X3_CHOICES.search(text or ""):
        return Tf32x3Params(**{k: int(v) for k, v in t.groupdict().items()})
    m = _CHOICES.search(text or "")
    if not m:
        return None
    g = {k: int(v) for k, v in m.groupdict().items() if v and k != "t"}
    if m.group("t") == "simt":
        return SimtParams(g["bm"], g["bn"], g["bk"], g["tm"], g["tn"], g["st"], g.get("vec", 1),
                          g.get("swz", 0), g.get("sk", 0))  # sk: persistent stream-K
    return MmaParams(g["bm"], g["bn"], g["bk"], g["wm"], g["wn"], g["st"], g.get("group", 1),
                     g.get("pipe", 1))
