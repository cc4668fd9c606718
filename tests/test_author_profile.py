"""The builtin search reads the profile: bank conflicts -> the swizzled shared layout (whose
index math is checked here to be a bank-conflict-free bijection), occupancy limited by registers
-> a smaller thread tile, DRAM- or tensor-bound at the roofline -> stop and say so."""

from __future__ import annotations

import dataclasses

import pytest

from kgen.arch import parse_arch
from kgen.author.families import GemmFamily
from kgen.author.mma import MmaParams
from kgen.author.search import propose
from kgen.author.simt import SimtParams
from kgen.author.space import estimated_registers, parse_choices, render
from kgen.compile import CompileResult, ResourceUsage, compile_source
from kgen.findings import Profile
from kgen.loop.attempt import Attempt
from kgen.verdict import Evaluation, Timing

SM90 = parse_arch("sm_90", check_nvcc=False)
SIZES = {"M": 4096, "N": 4096, "K": 4096}

# The float32 profile rules are SIMT's: 3xTF32, which the search tries once after the first
# timing, is left out here (tests/test_author.py covers that step).
SIMT_ONLY = GemmFamily(("simt",))


def timed(number: int, params, ms: float, profile: Profile | None) -> Attempt:
    comp = CompileResult("sm_90", b"cubin", (), {"gemm": ResourceUsage(96, 0, 0, 0)})
    run = Evaluation("pass", "ok", (Timing(SIZES, ms, ms, ms),), profile=profile)
    return Attempt(number, number, "// source", params.choices, compile=comp, evaluation=run)


def acol(k: int, col: int, bk: int) -> int:
    """The template's swizzle (templates/gemm_simt.cu, acol), in Python."""
    return (((col >> 2) ^ ((k >> 2) * (32 // bk))) << 2) | (col & 3)


@pytest.mark.parametrize("bm, bk, threads", [(128, 8, 256), (128, 16, 256), (64, 32, 64),
                                              (256, 16, 256), (32, 8, 64)])
def test_swizzle_is_a_bijection_and_a_warps_stores_hit_32_banks(bm, bk, threads):
    for k in range(bk):
        assert sorted(acol(k, c, bk) for c in range(bm)) == list(range(bm))
        assert all(acol(k, c, bk) % 4 == 0 for c in range(0, bm, 4))  # float4 reads aligned
    for warp in range(threads // 32):  # stash(): f = tid, r = f / (BK/4), kc = (f % (BK/4)) * 4
        for j in range(4):
            banks = set()
            for tid in range(32 * warp, 32 * warp + 32):
                r, kc = tid // (bk // 4), (tid % (bk // 4)) * 4
                banks.add(((kc + j) * bm + acol(kc + j, r, bk)) % 32)  # LDA = BM when swizzled
            assert len(banks) == 32


def test_swizzled_choices_read_back_and_the_kernel_compiles():
    p = SimtParams(128, 128, 16, 8, 8, 2, 4, swz=1)
    assert parse_choices(p.choices) == p and p.choices.endswith(" swz=1")
    assert parse_choices(SimtParams().choices).swz == 0
    assert p.smem_bytes == SimtParams(128, 128, 16, 8, 8, 2, 4).smem_bytes - 2 * 16 * 4 * 4


@pytest.mark.nvcc
def test_swizzled_kernel_compiles_without_spills():
    p = SimtParams(128, 128, 16, 8, 8, 2, 4, swz=1)
    result = compile_source(render(p, "float32"), SM90, use_cache=False)
    assert result.ok, result.summary
    assert "SWZ = 1" in render(p, "float32")


CONFLICTS = Profile(kernel="gemm_simt_f32", bottleneck="latency_stalls", conflict_ratio=0.33,
                    conflicts_ld=0.0, conflicts_st=1.2e6, evidence=("top stall mio 40%",))


def test_bank_conflicts_in_the_fastest_lead_to_the_swizzled_layout():
    base = SimtParams(128, 128, 16, 8, 8, 2, 4)
    history = (timed(1, SimtParams(), 2.0, None), timed(2, base, 1.5, CONFLICTS))
    proposal = propose(SM90, "float32", history, SIMT_ONLY)
    assert proposal.params == dataclasses.replace(base, swz=1)
    assert "bank conflicts (33% of the worse side's wavefronts)" in proposal.reason
    # once tried, the rule does not repeat itself: the search goes on from the fastest
    again = propose(SM90, "float32", history + (timed(3, proposal.params, 1.6, None),), SIMT_ONLY)
    assert again.params is not None and again.params.swz in (0, 1)
    assert again.params not in {base, proposal.params}


def test_conflicts_in_an_attempt_that_is_not_the_fastest_change_nothing_special():
    base = SimtParams(128, 128, 16, 8, 8, 2, 4)
    history = (timed(1, SimtParams(), 1.0, None), timed(2, base, 1.5, CONFLICTS))
    assert propose(SM90, "float32", history, SIMT_ONLY).params.swz == 0


def test_occupancy_limited_by_registers_leads_to_a_smaller_thread_tile():
    heavy = SimtParams(128, 128, 8, 8, 8, 2, 4)
    prof = Profile(kernel="k", bottleneck="latency_occupancy", limiter="registers",
                   occupancy=20.0, occupancy_limit=25.0, registers=128,
                   evidence=("occupancy 20% of 25% possible",))
    proposal = propose(SM90, "float32", (timed(1, heavy, 1.0, prof),), SIMT_ONLY)
    p = proposal.params
    assert p.tm * p.tn < heavy.tm * heavy.tn
    assert estimated_registers(p) < estimated_registers(heavy)
    assert "limited by registers (128 per thread)" in proposal.reason
    assert "smaller thread tile" in proposal.reason


@pytest.mark.parametrize("cls, evidence, words", [
    ("memory_dram", ("DRAM 88% of peak", "compute 20%"), "DRAM-bound at the roofline"),
    ("compute_tensor", ("tensor pipe 93%", "DRAM 20%"), "tensor-pipe-bound at the roofline")])
def test_at_the_roofline_the_search_stops_and_says_why(cls, evidence, words):
    prof = Profile(kernel="k", bottleneck=cls, at_roofline=True, evidence=evidence)
    mma = MmaParams(128, 256, 64, 2, 4, 4, 8, 2)
    proposal = propose(SM90, "float16", (timed(1, mma, 0.2, prof),))
    assert proposal.params is None
    assert words in proposal.reason and evidence[0] in proposal.reason
    assert proposal.reason.startswith("stopping: attempt 1")


def test_the_roofline_stop_needs_the_other_bench_sizes_at_their_roofline_too():
    """The profile saw the first size only; a ragged size at 72% of the matmul rate is still
    worth a search (clusters, tile order), so the search goes on there."""
    prof = Profile(kernel="k", sizes=SIZES, bottleneck="compute_tensor", at_roofline=True,
                   evidence=("tensor pipe 94%",))
    mma = MmaParams(128, 256, 64, 2, 4, 4, 8, 2)

    def at(fractions: tuple[float, ...]) -> Attempt:
        sizes = (SIZES, {"M": 8192, "N": 8192, "K": 8192}, {"M": 3000, "N": 5000, "K": 2000})
        timings = tuple(Timing(s, 1.0, 0.99, 1.01, roofline_fraction=f, bound="compute")
                        for s, f in zip(sizes, fractions, strict=True))
        return dataclasses.replace(timed(1, mma, 1.0, prof), evaluation=Evaluation(
            "pass", timings=timings, profile=prof))

    assert propose(SM90, "float16", (at((0.99, 0.97, 0.72)),)).params is not None
    assert propose(SM90, "float16", (at((0.99, 0.97, 0.93)),)).params is None


def test_a_profile_that_failed_is_ignored():
    prof = Profile(error="ncu not found", unavailable=True)
    proposal = propose(SM90, "float32", (timed(1, SimtParams(), 1.0, prof),), SIMT_ONLY)
    assert proposal.params is not None and "neighbour" in proposal.reason
