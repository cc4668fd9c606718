"""A simple cost model for the memory-bound templates, for ranking configurations before any GPU
has timed them: occupancy (threads, registers, shared memory per SM) and the bytes each SM keeps
in flight, times a factor per family (vector width, re-reads of a row, bank conflicts). It orders
candidates; it does not predict milliseconds.

napkin math: to keep DRAM busy, an SM needs about bandwidth x latency / SMs bytes in flight:
4.8 TB/s x ~1 us / 132 SMs ~ 36 KB on an H200; IN_FLIGHT rounds that up.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgen.arch import Arch

IN_FLIGHT = 40 * 1024  # bytes in flight per SM beyond which more does not help
STATIC_SMEM_LIMIT = 48 * 1024  # a static __shared__ array's limit on every arch
MAX_BLOCKS_PER_SM = 32  # sm_80, sm_90 and later
# Resident blocks per SM where it is fewer (CUDA's table of compute capabilities): ptxas ignores,
# with a warning, a __launch_bounds__ minimum above it.
FEWER_BLOCKS_PER_SM = {75: 16, 86: 16, 87: 16, 88: 16, 89: 24}

# The author does not see the GPU, only the arch; where a default or a choice of kernels counts
# blocks against multiprocessors, it counts those of an H100/H200 SXM (132), the GPUs kgen's
# figures come from.
ASSUMED_SMS = 132
# Wider accesses move the same bytes in fewer instructions; 16 bytes is the widest load.
WIDTH_FACTOR = {16: 1.0, 8: 0.96, 4: 0.9, 2: 0.8, 1: 0.7}


def max_blocks(arch: Arch) -> int:
    """Resident blocks an SM of this arch can hold at most."""
    return FEWER_BLOCKS_PER_SM.get(arch.major_minor, MAX_BLOCKS_PER_SM)


@dataclass(frozen=True)
class MemEstimate:
    score: float
    registers: int
    blocks_per_sm: int
    warps_per_sm: int
    in_flight: int  # bytes of loads in flight per SM at this occupancy
    note: str = ""  # the family's own factor, in words

    def describe(self) -> str:
        extra = f", {self.note}" if self.note else ""
        return (f"~{self.registers} registers, {self.blocks_per_sm} block(s) = "
                f"{self.warps_per_sm} warps per SM, {self.in_flight // 1024} KiB of loads in "
                f"flight per SM{extra}, score {self.score:.2f}")


def blocks_per_sm(arch: Arch, threads: int, registers: int, smem: int) -> int:
    """Resident blocks of this shape on one SM (registers are allocated 8 per thread at a time)."""
    facts = arch.facts
    per_thread = -(-max(16, registers) // 8) * 8
    by_regs = facts.registers_per_sm // (per_thread * threads)
    by_threads = facts.max_threads_per_sm // threads
    limit = max_blocks(arch)
    by_smem = facts.max_smem_per_sm // (smem + 1024) if smem else limit
    return max(0, min(by_regs, by_threads, by_smem, limit))


def register_problems(arch: Arch, threads: int, registers: int) -> list[str]:
    """Why a block of `threads` cannot have `registers` per thread: __launch_bounds__(threads)
    caps them at registers_per_sm / threads (beyond, ptxas spills)."""
    cap = min(255, arch.facts.registers_per_sm // threads // 8 * 8)
    if registers <= cap:
        return []
    return [f"~{registers} registers per thread, over the {cap} a block of {threads} can have"]


def min_blocks(arch: Arch, threads: int, registers: int) -> int:
    """The resident blocks to ask ptxas for (__launch_bounds__'s second argument). With the
    thread count alone, ptxas aims at full occupancy and spills small amounts to get there (32
    registers at 64-256 threads on sm_90); with one block it spends registers it does not need.
    So: the most blocks whose register cap still leaves the napkin registers plus 10%."""
    want = -(-int(registers * 1.1) // 8) * 8
    limit = max_blocks(arch)
    most = max(1, min(limit, arch.facts.max_threads_per_sm // threads))
    return next((b for b in range(most, 0, -1) if register_cap(arch, threads, b) >= want), 1)


def register_cap(arch: Arch, threads: int, blocks: int) -> int:
    """Registers per thread ptxas allows for `blocks` resident blocks: the register file is four
    quarters, each holding a quarter of the warps (rounded up), 8 registers at a time
    (measured with ptxas 13.0 on sm_90: 64 threads, 21 blocks -> 40, 20 blocks -> 48)."""
    warps = -(-blocks * (-(-threads // 32)) // 4)
    return min(255, arch.facts.registers_per_sm // 4 // (32 * warps) // 8 * 8)


def estimate(arch: Arch, threads: int, registers: int, smem: int, bytes_per_thread: int,
             width: int, factor: float = 1.0, note: str = "") -> MemEstimate:
    """Score = occupancy x min(1, bytes in flight / IN_FLIGHT) x width factor x family factor."""
    blocks = blocks_per_sm(arch, threads, registers, smem)
    warps = blocks * threads // 32
    in_flight = blocks * threads * bytes_per_thread
    occupancy = warps / (arch.facts.max_threads_per_sm // 32)
    # Occupancy matters little once the bytes in flight cover the latency: weigh it lightly.
    score = (0.8 + 0.2 * occupancy) * min(1.0, in_flight / IN_FLIGHT) \
        * WIDTH_FACTOR.get(width, 0.7) * factor
    return MemEstimate(round(score, 4), registers, blocks, warps, in_flight, note)
