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
             "tm": (4, 8, 16), "tn": (4, 8, 16), "stages": (1, 2), "vec": (1, 4), "sk": (0, 1)}
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
# kernel again; where it cuts, it wins (see _DEFAULTS). A cluster of 2 has no stream-K; cluster=0
# (clusters of 2 only at sizes where B's rows are misaligned, wgmma.MISALIGNED_B) keeps it for
# the launches without a cluster. It sits between 1 and 2 on its axis: a step from either.
# 3xTF32 (float32 on the tensor cores): on an H100 (2026-12-05, benchmarks/s20-2026-12-05/) six
# configurations of 64-128 x 128 tiles, 3-4 stages, BK 16-32 and groups of 8-16 all ran within 1%
# of each other at 4096^3 (1.02x of cuBLAS) except BK=16 (0.94x): the instruction stream, not the
# tile, sets the pace. Warp tiles hold at most 64 accumulators (and 64 more for the k-slice's
# partial): MIN_BLOCKS 2 and 128x256 tiles spilled.
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


# First candidates, best first; the first that fits the arch wins. Measured on an H200 at 4096^3
# (2026-12-02), before group/pipe existed: mma 128x128x64 2x4 warps 3 stages 296 TFLOP/s fp16
# (now group=1 pipe=1, kept as OLD_MMA_DEFAULT), 128x128x32 4 stages 264; simt 128x128x8 8x8 40
# TFLOP/s fp32. The new mma head is not yet measured: 64x64 warp tiles cut the ldmatrix bytes per
# mma by a third against 64x32, 128x256 cuts the L2->SM bytes per flop by a quarter against
# 128x128, and double-buffered fragments keep the tensor cores fed with only 8 warps per SM (246
# registers, no spills on sm_90). 4 stages (204 KiB) fit sm_90/sm_100, 3 stages (153 KiB) sm_80,
# BK=32 the 99 KiB parts (sm_86/sm_89/sm_120). Since then, in six float16 searches on the H200
# (6 rounds, one cut after 4 candidates; benchmarks/h200-2026-12-03-s4/ and -s5/), 128x256x32
# with 4 stages (96 KiB) was the best every time, 2.5% ahead of 128x256x64 with 4 stages (0.359
# against 0.368 ms at 4096^3), so it leads (sm_80, sm_90, sm_100; the 99 KiB parts take it with
# 3 stages). Only the H200 has measured it.
OLD_MMA_DEFAULT = MmaParams(128, 128, 64, 2, 4, 3, 1, 1)
_DEFAULTS: dict[str, tuple[Params, ...]] = {
    "mma": (MmaParams(128, 256, 32, 2, 4, 4, 8, 2),
            MmaParams(128, 256, 64, 2, 4, 4, 8, 2), MmaParams(128, 256, 64, 2, 4, 3, 8, 2),
            MmaParams(128, 256, 32, 2, 4, 3, 8, 2), OLD_MMA_DEFAULT,
            MmaParams(128, 128, 32, 2, 4, 4), MmaParams(128, 128, 32, 2, 4, 3),
            MmaParams(64, 64, 32, 2, 2, 3)),
    # simt: 128x256x16 (49.7 KB of dynamic shared memory) was the fastest SIMT configuration at
    # all three bench sizes on the H200, ahead of the search's former best 256x128x8
    # (benchmarks/h200-2026-12-03-s4/simt-configs.log). Its persistent stream-K form (sk=1, with
    # the twelfth session's main loop) leads: on the H200 (2026-12-05, same call) it ran 2.885 /
    # 22.85 / 1.363 ms at 4096^3 / 8192^3 / 3000x5000x2000 against the one-tile grid's 2.902 /
    # 23.04 / 1.451 ms (0.93x / 0.94x / 1.01x of cuBLAS), and 1.4% slower per tile where nothing
    # is cut (4224x4096x4096: 2.957 against 2.917 ms; its first version was 7% slower there)
    # (benchmarks/pp-2026-12-05-s13/device-f32-sizes/).
    "simt": (SimtParams(128, 256, 16, 8, 16, 2, 4, sk=1), SimtParams(128, 256, 16, 8, 16, 2, 4),
             SimtParams(128, 128, 8, 8, 8, 2, 4),
             SimtParams(128, 128, 8, 8, 8, 2, 1), SimtParams(64, 64, 16, 4, 4, 2, 1)),
    # The fast.cu/CUTLASS shape (hopper-gemm.md): 128x256x64, two consumers of m64n256k16,
    # persistent in groups of 8 tile rows, with the TMA-store epilogue (3 stages: 209 KiB). On the
    # H200 (2026-12-02, kgen bench, cuBLAS interleaved) bf16 ran 765 / 736 / 528 TFLOP/s at 4096^3 /
    # 8192^3 / 3000x5000x2000 (0.97x / 1.00x / 0.82x), f16 0.97x / 0.97x / 0.61x; the register
    # epilogue with 4 stages 0.85x / 0.96x / 0.71x in bf16. Clusters of 2 (sixth session, after
    # their fix) 0.96x / 1.00x / 0.92x against this default's 0.99x / 1.01x / 0.86x in the same
    # call: 0.96x against 0.95x in the geometric mean the search judges by, within its noise, so
    # the default stays and the search reaches clusters of 2 as a neighbour. sk=1 (stream-K for
    # the tiles of a last, partial round) cuts nothing at the bench sizes (same times) and wins
    # where few tiles are left over: bf16 2432x1792x4096 0.0901 -> 0.0680 ms, 2688x2048x8192
    # 0.1725 -> 0.1345 ms, 4224x4352x2048 0.1169 -> 0.1114 ms; where nothing is cut it costs
    # 0.3-1% (H200, 2026-12-04, benchmarks/h200-2026-12-04-s9/sk-final-bfloat16.log).
    # cluster=0 (fourteenth session): the same kernel, launched with clusters of 2 where B's rows
    # are misaligned (wgmma.MISALIGNED_B). bfloat16 on the H200, one CTA against it, twice each:
    # 3000x5000x2000 0.1116 / 0.1114 -> 0.1031 / 0.1033 ms (0.84x -> 0.91x); at 4096^3, 8192^3
    # and 3072x5120x2048 the same times (it launches the same code as cluster=1 there)
    # (benchmarks/s14-2026-12-05/device-auto/).
    # cpass=2 with 4 stages (twenty-fourth session): the C tile staged half at a time frees the
    # 32 KB a fourth stage needs (225 KiB). bfloat16 on an H100, against the 3-stage default,
    # twice, alternating: 3000x5000x2000 0.1076 / 0.1077 -> 0.1014 / 0.1015 ms (0.89x -> 0.95x),
    # 4096^3 0.1862 / 0.1860 -> 0.1809 / 0.1809, 3072x5120x2048 -3%, 8192^3 the same; float16
    # alike. The main loop runs faster (the extra stage absorbs the ring's stalls) by more than
    # the second pass adds to the epilogue; cpass=2 with 3 stages was 0.5% slower
    # (benchmarks/s24-2026-12-06/).
    "wgmma": (WgmmaParams(stages=4, epi=1, sk=1, cluster=0, cpass=2),
              WgmmaParams(stages=3, epi=1, sk=1, cluster=0), WgmmaParams(stages=3, epi=1, sk=1),
              WgmmaParams(sk=1)),
    # 3xTF32: the prepared file's shape (128x128x32, 2x4 warps, 3 stages, groups of 8) ran 2.576 /
    # 20.433 / 1.332 ms at 4096^3 / 8192^3 / 3000x5000x2000 on an H100, 1.02x / 1.02x / 1.01x of
    # cuBLAS (TF32 off), and passed at every test size (benchmarks/s20-2026-12-05/h100-tf32x3/).
    # On the 99 KiB parts (sm_86/sm_89/sm_120) the first that fits is 128x128x16 with 4 stages
    # (74 KiB; 0.94x on the H100 at 4096^3; those parts are unmeasured).
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
        if p.sk and (p.tm * p.tn <= 64 or p.threads < 256):
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
        out.append("stream-K pieces are per CTA: clusters of 1 only")
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
    """The configuration with its derived fields set: wgmma's sk is on exactly where some launch
    has no cluster (cluster 1, or 0: clusters of 2 at some sizes only)."""
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
