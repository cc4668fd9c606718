"""A simple cost model for ranking gemm configurations when no timings exist: occupancy
from (ptxas-calibrated) registers and shared memory, arithmetic intensity of the block tile,
tensor cores. It orders candidates; it does not predict milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgen.arch import Arch
from kgen.author.simt import SimtParams
from kgen.author.space import Params, estimated_registers
from kgen.author.tf32x3 import Tf32x3Params
from kgen.author.wgmma import WgmmaParams


@dataclass(frozen=True)
class Estimate:
    score: float
    registers: int
    blocks_per_sm: int
    warps_per_sm: int
    intensity: float  # flops per element loaded from global memory, per block tile

    def describe(self) -> str:
        return (f"~{self.registers} registers, {self.blocks_per_sm} block(s) = "
                f"{self.warps_per_sm} warps per SM, intensity {self.intensity:.0f} flop/element, "
                f"score {self.score:.1f}")


def register_scale(seen, p, registers=estimated_registers) -> float:
    """Measured/estimated registers over compiled attempts of p's template (ptxas calibration);
    `registers` is the template family's napkin estimate."""
    ratios = [s.registers / registers(s.params) for s in seen
              if s.registers and s.params.template == p.template]
    return sum(ratios) / len(ratios) if ratios else 1.0


def estimate(p: Params, arch: Arch, reg_scale: float = 1.0) -> Estimate:
    """Score = intensity x occupancy factor x pipeline factor x (16 for tensor cores)."""
    facts = arch.facts
    regs = min(255, max(16, round(estimated_registers(p) * reg_scale)))
    per_thread = -(-regs // 8) * 8  # registers are allocated in groups of 8 per thread
    by_regs = facts.registers_per_sm // (per_thread * p.threads)
    by_threads = facts.max_threads_per_sm // p.threads
    by_smem = facts.max_smem_per_sm // max(1, p.smem_bytes + 1024)  # 1 KiB reserved per block
    blocks = max(0, min(by_regs, by_threads, by_smem, 32))
    warps = blocks * p.threads // 32
    # 2*bm*bn flops per k against (bm+bn) elements loaded: bigger, squarer tiles reuse more.
    intensity = 2 * p.bm * p.bn / (p.bm + p.bn)
    occupancy = min(1.0, warps / 8)  # register-blocked kernels hide latency with ILP from ~8 warps
    pipeline = 1.0 if p.stages >= 2 else 0.8
    if p.template == "mma":
        pipeline = {2: 0.85, 3: 1.0}.get(p.stages, 0.97) * (1.03 if p.bk == 64 else 1.0)
        pipeline *= _mma_feed(p)
    if isinstance(p, WgmmaParams):
        pipeline = _wgmma_feed(p)
    if isinstance(p, Tf32x3Params):  # BK=16 ran 0.94x against BK=32's 1.02x (H100, s20)
        pipeline = (0.93 if p.bk < 32 else 1.0) * (1.03 if p.group > 1 else 1.0)
    # wgmma issues twice the tensor work per instruction that mma.sync can sustain on Hopper
    # (mma.sync tops out near 60-65% of the tensor peak: hopper-gemm.md).
    # 3xTF32 takes three TF32 products per term at mma.sync's TF32 rate; on an H100 its default
    # ran 1.02x of cuBLAS where the SIMT default runs 0.93-1.00x (H200), so a little above SIMT.
    tensor = {"mma": 16.0, "wgmma": 32.0, "tf32x3": 1.3}.get(p.template, 1.0)
    vector = 0.9 if isinstance(p, SimtParams) and p.vec == 1 else 1.0
    # The persistent stream-K SIMT kernel runs slower per tile than the one-tile grid (1.4% on the
    # H200, about 4% on an H100 since the one-tile grid's 32-bit indices) and makes up for it
    # where a partial last round would idle many SMs. The model sees no sizes, so it scores the
    # per-tile cost of sk=1 alone; sk=2 and sk=3 run most tiles in the one-tile grid.
    persistent = 0.986 if isinstance(p, SimtParams) and p.sk == 1 else 1.0
    score = intensity * occupancy * pipeline * tensor * vector * persistent
    return Estimate(round(score, 2), regs, blocks, warps, intensity)


def _wgmma_feed(p: WgmmaParams) -> float:
    """Deeper rings hide TMA latency; a grouped order shares panels in L2; a TMA-store epilogue
    overlaps the next tile's loads; clusters of 2 halve B's L2->SM bytes but tie the two CTAs'
    pipelines together."""
    ring = {3: 0.96, 4: 1.0}.get(p.stages, 1.0)
    # The factors follow what was measured (benchmarks/findings.md): the TMA-store epilogue is
    # the faster; clusters of 2 are a little behind at aligned sizes and well ahead where B's
    # rows are misaligned, so a near-equal score keeps them in reach; staging C half a tile at a
    # time (cpass=2) costs a little and pays only where it makes room for a fourth stage.
    return (ring * (0.98 if p.cluster == 2 else 1.0) * (1.03 if p.group > 1 else 1.0)
            * (1.08 if p.epi else 1.0) * (1.0 if p.consumers == 2 else 0.9)
            * (0.995 if p.cpass == 2 else 1.0))


def _mma_feed(p) -> float:
    """How well an mma config feeds its tensor cores, beyond the block tile's intensity."""
    wtm, wtn = p.bm // p.wm, p.bn // p.wn
    # ldmatrix bytes per mma fall with the warp tile's m*n/(m+n); 64x64 (32) is the usual best.
    warp_reuse = 0.85 + 0.15 * min(1.0, wtm * wtn / (wtm + wtn) / 32)
    # Double-buffered fragments overlap ldmatrix latency with mma; a grouped raster shares panels
    # of A and B in L2 between the blocks resident at once.
    return warp_reuse * (1.1 if p.pipe == 2 else 1.0) * (1.03 if p.group > 1 else 1.0)
