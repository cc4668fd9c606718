"""The builtin author: gemm templates compile and carry a valid contract; the search is
deterministic, stays inside the arch limits and reacts to spills, resource errors, failures and
timings as it says it does."""

from __future__ import annotations

import dataclasses
import re

import pytest
from helpers import gpu_workers

from kgen.arch import parse_arch
from kgen.author import costmodel as model
from kgen.author import space as gemm_space
from kgen.author.families import GemmFamily
from kgen.author.mma import MmaParams
from kgen.author.search import propose
from kgen.author.simt import SK_FULL, SimtParams
from kgen.author.space import (
    OLD_MMA_DEFAULT,
    default,
    estimated_registers,
    neighbours,
    parse_choices,
    problems,
    render,
    space,
    templates_for,
)
from kgen.author.tf32x3 import Tf32x3Params
from kgen.author.wgmma import WgmmaParams
from kgen.compile import CompileResult, Diagnostic, ResourceUsage, compile_source
from kgen.loop.attempt import Attempt
from kgen.loop.candidate import extract_source, parse_contract
from kgen.loop.task import Task
from kgen.models.base import Request
from kgen.models.builtin import BuiltinModel
from kgen.ops import load_op
from kgen.verdict import Evaluation, Timing

ARCHS = ("sm_80", "sm_89", "sm_90")
DTYPES = ("float32", "float16", "bfloat16")
SPEC = load_op("gemm")


def arch(name: str):
    return parse_arch(name, check_nvcc=False)


def attempt(number: int, params, *, registers: int = 96, spill: int = 0, verdict: str | None = None,
            ms: float | None = None, compile_error: str | None = None,
            category: str = "syntax") -> Attempt:
    """A synthetic history entry for one configuration."""
    if compile_error:
        diag = Diagnostic("error", 10, None, None, compile_error, category=category)
        comp = CompileResult("sm_90", None, (diag,))
    else:
        comp = CompileResult("sm_90", b"cubin", (),
                             {"gemm": ResourceUsage(registers, 0, spill, spill)})
    run = None
    if verdict:
        timings = (Timing({"M": 4096, "N": 4096, "K": 4096}, ms, ms, ms),) if ms else ()
        run = Evaluation(verdict, "details", timings)
    return Attempt(number, number, "// source", params.choices, compile=comp, evaluation=run)


def changed(a, b) -> list[str]:
    return [k for k in a.__dict__ if getattr(a, k) != getattr(b, k)]


# --- templates and space ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ARCHS + ("sm_75", "sm_86", "sm_120"))
@pytest.mark.parametrize("dtype", DTYPES)
def test_space_respects_arch_limits(name, dtype):
    target = arch(name)
    for template in templates_for(target, dtype):
        configs = space(target, dtype, template)
        assert configs, f"no valid {template} configuration for {name} {dtype}"
        for p in configs:
            assert p.smem_bytes <= target.facts.max_smem_per_block
            assert 32 <= p.threads <= 1024
            assert estimated_registers(p) <= target.facts.max_registers_per_thread
            assert parse_choices(p.choices) == p  # the history can name every configuration
    assert not problems(default(target, dtype), target, dtype)


def test_invalid_configurations_are_named():
    hopper, ada = arch("sm_90"), arch("sm_89")
    big = MmaParams(256, 256, 64, 2, 4, 4)  # 4 stages of 256x256x64 is far past any limit
    assert any("shared memory" in p for p in problems(big, hopper, "float16"))
    fits_hopper = MmaParams(128, 128, 64, 2, 4, 3)  # 105 KiB: fits sm_90 (227 KiB), not sm_89
    assert not problems(fits_hopper, hopper, "float16")
    assert any("shared memory" in p for p in problems(fits_hopper, ada, "float16"))
    assert problems(MmaParams(), arch("sm_75"), "float16")  # no mma.sync m16n8k16 path there
    assert problems(SimtParams(vec=4), hopper, "float16")  # float4 path is float32 only
    assert templates_for(arch("sm_75"), "float16") == ("simt",)


def test_tensor_core_default_for_half_types_on_ampere_and_later():
    for name in ARCHS:
        assert default(arch(name), "float16").template == "mma"
        assert default(arch(name), "bfloat16").template == "mma"
        assert default(arch(name), "float32").template == "simt"


def sample(name: str, dtype: str, count: int = 3) -> list:
    """The default plus the first proposals a no-GPU search makes (what a real run would try)."""
    target, history, out = arch(name), (), []
    for number in range(1, count + 1):
        p = propose(target, dtype, history).params
        out.append(p)
        history += (attempt(number, p),)
    return out


@pytest.mark.slow
@pytest.mark.nvcc
@pytest.mark.parametrize("name", ARCHS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_proposed_configurations_compile_with_a_valid_contract(name, dtype):
    target = parse_arch(name)
    for index, p in enumerate(sample(name, dtype)):
        source = render(p, dtype)
        result = compile_source(source, target)
        assert result.ok, f"{p.choices} for {name} {dtype}:\n{result.summary}"
        contract, found = parse_contract(source, SPEC)
        assert contract is not None, found
        assert contract.dtype == dtype and parse_choices(contract.choices) == p
        sizes = {"M": 257, "N": 511, "K": 383, "SMS": 132}
        (launch,) = contract.launches_at(sizes)  # a file may hold a kernel per class of sizes
        grid, block, smem = launch.dims(sizes)
        assert block == (p.threads,) and smem <= target.facts.max_smem_per_block
        tiles = (-(-511 // p.bn), -(-257 // p.bm))
        # Persistent (sk=1, and sk=2 here, where a few tiles leave most SMs idle): one CTA per
        # SM, never more than the tiles.
        if getattr(p, "sk", 0):
            assert grid == (min(132, tiles[0] * tiles[1]),)
        else:
            assert grid == tiles
        assert len(result.resources) == len({launch.kernel for launch in contract.launches})
        for usage in result.resources.values():
            assert usage.shared_bytes + smem <= target.facts.max_smem_per_block
            if index == 0:  # the default must not spill
                assert usage.spill_stores == 0, f"default {p.choices} spills on {name}"
        if index == 0:  # and builds clean (no warnings to report)
            assert not result.diagnostics, f"default {p.choices} on {name}:\n{result.summary}"


@pytest.mark.nvcc
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_wgmma_setmaxnreg_fits_the_registers_the_kernel_is_launched_with(dtype):
    """setmaxnreg moves registers within the CTA's allocation at launch (ptxas's count times the
    threads) and a request beyond it waits forever: a producer of 48 registers with two consumers
    of 232 hung on an H200. The consumers' 232 must come from what the producer gives back."""
    target = parse_arch("sm_90a")
    for p in (default(target, dtype), WgmmaParams(stages=3, epi=1, sk=1, cluster=2)):
        source = render(p, dtype)
        (usage,) = compile_source(source, target).resources.values()
        regs = {name: int(re.search(rf"{name} = (\d+)", source)[1])
                for name in ("REG_PRODUCER", "REG_CONSUMER")}
        budget = 128 * regs["REG_PRODUCER"] + 128 * p.consumers * regs["REG_CONSUMER"]
        assert budget <= usage.registers * p.threads, (p.choices, usage.registers, regs)


@pytest.mark.slow
@pytest.mark.nvcc
def test_a_spread_of_the_space_compiles():
    """A fixed, deterministic spread of each template's sm_90 space (both pipes and rasters)."""
    target = parse_arch("sm_90")
    for dtype, template, step in (("float32", "simt", 60), ("float16", "mma", 150),
                                  ("bfloat16", "simt", 60), ("float32", "tf32x3", 40)):
        for p in space(target, dtype, template)[::step]:
            result = compile_source(render(p, dtype), target)
            assert result.ok, f"{p.choices} {dtype}:\n{result.summary}"
            if template == "tf32x3":  # its registers are tight (accumulators twice over)
                assert all(r.spill_stores == 0 for r in result.resources.values()), p.choices


@pytest.mark.nvcc
def test_simt_tiles_above_48_kib_use_dynamic_shared_memory():
    """256x128x16 in two stages needs 49,664 bytes: past the static limit, within Hopper's."""
    p = SimtParams(256, 128, 16, 16, 8, 2, 4)
    target = parse_arch("sm_90")
    assert p.smem_bytes == 49664 and not problems(p, target, "float32")
    source = render(p, "float32")
    assert "smem=49664" in source
    result = compile_source(source, target)
    assert result.ok, result.summary
    big = SimtParams(256, 256, 32, 16, 8, 2, 4)  # 132 KB: more than an sm_86 block may have
    assert any("shared memory" in why for why in problems(big, arch("sm_86"), "float32"))
    assert not any("shared memory" in why for why in problems(big, target, "float32"))


def _one_tile_tiles(tiles: int, sms: int) -> int:
    """streamk.cuh's sk_one_tile_tiles, as its comment states the rule."""
    left = tiles % sms
    if tiles < sms:
        return 0
    if left == 0 or (sms - left) * SK_FULL <= sms:
        return tiles
    return tiles - (left if 2 * left > sms else left + sms)


def test_simt_default_splits_the_tiles_over_two_launches():
    """sk=3, the float32 default: the one-tile grid runs the tiles before the last ones (all of
    them where its last round is whole or nearly), then the persistent stream-K kernel cuts the
    rest along K over every SM: at 4096^3, 8192^3 and 3000x5000x2000 on 132 SMs more than half
    a round is left over (116, 68, 84 tiles), and those are cut. Each launch line runs exactly
    where the rule the kernels follow says it has tiles, for any SM count. sk=2 is a neighbour,
    sk=1 alone (the model scores its per-tile cost) one of sk=2's, and the one-tile grid alone one
    of sk=1's.
    Stream-K is valid only where one block fills an SM's registers (a persistent grid of one CTA
    per SM would otherwise run at half occupancy), and the choices line reads back."""
    target = arch("sm_90")
    both = default(target, "float32")
    assert both.sk == 3
    stream_k, one_tile = dataclasses.replace(both, sk=1), dataclasses.replace(both, sk=0)
    by_size = dataclasses.replace(both, sk=2)
    assert by_size in neighbours(both, target, "float32")
    assert stream_k in neighbours(by_size, target, "float32")
    assert one_tile in neighbours(stream_k, target, "float32")
    assert model.estimate(stream_k, target).score < model.estimate(both, target).score
    for sk in (1, 2, 3):
        assert problems(SimtParams(128, 128, 8, 8, 8, 2, 4, sk=sk), target, "float32")
        assert problems(SimtParams(128, 128, 16, 8, 16, 2, 4, sk=sk), target, "float32")  # 128
    assert problems(dataclasses.replace(both, sk=4), target, "float32")
    assert parse_choices(both.choices) == both
    source = render(both, "float32")
    assert "#define SK 1" in source and "#define KGEN_STREAM_K 0" in source
    assert f"#define SK_FULL {SK_FULL}" in source  # streamk.cuh agrees with the contract
    contract, errors = parse_contract(source, SPEC)
    assert contract is not None, errors
    for m, n, k in ((4096, 4096, 4096), (8192, 8192, 8192), (3000, 5000, 2000)):
        sizes = {"M": m, "N": n, "K": k, "SMS": 132}
        one, persistent = contract.launches_at(sizes)
        assert (one.kernel, persistent.kernel) == ("gemm_simt_f32", "gemm_simt_f32_sk")
        assert one.dims(sizes)[0] == (-(-n // 256), -(-m // 128))
        assert persistent.dims(sizes)[0] == (132,)
    for sms in (3, 20, 114, 132):
        for tiles in range(1, 5 * sms):
            kernels = [launch.kernel for launch in contract.launches_at(
                {"M": 128 * tiles, "N": 256, "K": 8, "SMS": sms})]
            ones = _one_tile_tiles(tiles, sms)
            assert kernels == ["gemm_simt_f32"] * (ones > 0) + ["gemm_simt_f32_sk"] * (ones < tiles)
    assert "grid=(min(SMS, cdiv(M,128) * cdiv(N,256)))" in render(stream_k, "float32")
    assert "grid=(cdiv(N,256), cdiv(M,128))" in render(one_tile, "float32")


def test_sk_2_runs_the_one_tile_grid_where_its_last_round_is_nearly_full():
    """sk=2 (the default before sk=3): one file with both kernels and one launch, the one-tile
    grid where at most 1/25 of its CTA slots would idle in the last round (4096^3 and 8192^3 on
    132 SMs: 3%), the persistent stream-K kernel elsewhere (3000x5000x2000: 9%)."""
    target = arch("sm_90")
    both = dataclasses.replace(default(target, "float32"), sk=2)
    assert not problems(both, target, "float32")
    contract, errors = parse_contract(render(both, "float32"), SPEC)
    assert contract is not None, errors
    kernels = {}
    for m, n, k in ((4096, 4096, 4096), (8192, 8192, 8192), (3000, 5000, 2000)):
        (launch,) = contract.launches_at({"M": m, "N": n, "K": k, "SMS": 132})
        kernels[m] = launch.kernel, launch.dims({"M": m, "N": n, "K": k, "SMS": 132})[0]
    assert kernels == {4096: ("gemm_simt_f32", (16, 32)), 8192: ("gemm_simt_f32", (32, 64)),
                       3000: ("gemm_simt_f32_sk", (132,))}


def test_a_tall_tile_has_its_wide_twin_as_a_neighbour():
    """256x128 (16x8 threads) reaches 128x256 (8x16) in one step; not the other way round (the
    wide tile measured faster for both templates), and a square tile has no twin."""
    target = arch("sm_90")
    tall = SimtParams(256, 128, 16, 16, 8, 2, 4)
    wide = SimtParams(128, 256, 16, 8, 16, 2, 4)
    assert wide in neighbours(tall, target, "float32")
    assert tall not in neighbours(wide, target, "float32")
    square = SimtParams(128, 128, 8, 8, 8, 2, 4)
    assert neighbours(square, target, "float32").count(square) == 0
    mma_tall = MmaParams(256, 128, 64, 4, 2, 4, 8, 2)
    mma_wide = MmaParams(128, 256, 64, 2, 4, 4, 8, 2)
    assert mma_wide in neighbours(mma_tall, target, "float16")
    assert mma_tall not in neighbours(mma_wide, target, "float16")


@pytest.mark.nvcc
def test_simt_fallback_for_half_on_turing_compiles():
    target = parse_arch("sm_75")
    p = default(target, "float16")
    result = compile_source(render(p, "float16"), target)
    assert result.ok, result.summary


def test_choices_written_before_group_and_pipe_still_read():
    old = "template=mma tile=128x128x64 warps=2x4 stages=3"
    assert parse_choices(old) == OLD_MMA_DEFAULT == MmaParams(128, 128, 64, 2, 4, 3, 1, 1)
    new = MmaParams(128, 256, 64, 2, 4, 4, 8, 2)
    assert "group=8 pipe=2" in new.choices and parse_choices(new.choices) == new


def test_half_defaults_use_64x64_warp_tiles_and_the_old_default_stays_reachable():
    # BK=32 with 4 stages won six float16 searches on the H200; the 99 KiB parts take 3 stages
    for name, bk, stages in (("sm_90", 32, 4), ("sm_80", 32, 4), ("sm_89", 32, 3)):
        p = default(arch(name), "float16")
        assert (p.bm // p.wm, p.bn // p.wn) == (64, 64), name
        assert (p.bk, p.stages, p.group, p.pipe) == (bk, stages, 8, 2), name
    hopper = arch("sm_90")
    assert OLD_MMA_DEFAULT in space(hopper, "float16", "mma")
    # The search reaches each new option from the old configuration in one step.
    near = neighbours(OLD_MMA_DEFAULT, hopper, "float16")
    assert dataclasses.replace(OLD_MMA_DEFAULT, group=8) in near
    assert dataclasses.replace(OLD_MMA_DEFAULT, pipe=2) in near


def test_double_buffered_fragments_are_refused_where_they_would_spill():
    hopper = arch("sm_90")
    for p in (MmaParams(256, 128, 64, 2, 4, 3, 1, 2),   # 128x32 warp tile: 80 fragment registers
              MmaParams(128, 64, 64, 2, 1, 3, 1, 2)):   # 64x64 with 24 loads per thread
        assert any("spill" in why for why in problems(p, hopper, "float16")), p.choices
        assert not problems(dataclasses.replace(p, pipe=1), hopper, "float16")
    assert not problems(default(hopper, "float16"), hopper, "float16")


def test_model_prefers_pipelined_grouped_64x64_warp_tiles():
    hopper = arch("sm_90")

    def score(p):
        return model.estimate(p, hopper).score

    new = default(hopper, "float16")
    assert score(new) > score(dataclasses.replace(new, pipe=1))
    assert score(new) > score(dataclasses.replace(new, group=1))
    assert score(new) > score(OLD_MMA_DEFAULT)


@pytest.mark.nvcc
@pytest.mark.parametrize("dtype", ("float16", "bfloat16"))
def test_new_and_old_default_compile_without_spills_on_hopper(dtype):
    """The new default may use up to 255 registers (one 8-warp block per SM) but must not spill;
    the old one keeps <= 128 so two of its blocks still fit an SM."""
    target = parse_arch("sm_90")
    usage = {}
    for p in (default(target, dtype), OLD_MMA_DEFAULT):
        result = compile_source(render(p, dtype), target)
        assert result.ok, result.summary
        (usage[p],) = result.resources.values()
        assert usage[p].spill_stores == 0 and usage[p].stack_bytes == 0, p.choices
    assert usage[OLD_MMA_DEFAULT].registers <= 128
    assert usage[default(target, dtype)].registers <= 255


# --- the search ------------------------------------------------------------------------------

def test_first_candidate_is_the_default_and_the_search_is_deterministic():
    target = arch("sm_90")
    first = propose(target, "float16", ())
    assert first.params == default(target, "float16") and "default" in first.reason
    history = (attempt(1, first.params),)
    assert propose(target, "float16", history) == propose(target, "float16", history)


def test_never_proposes_a_configuration_already_tried():
    target, history = arch("sm_89"), ()
    for number in range(1, 13):
        p = propose(target, "float32", history).params
        assert p is not None and p not in {parse_choices(a.choices) for a in history}
        assert not problems(p, target, "float32")
        history += (attempt(number, p, verdict="pass", ms=5.0 - number * 0.1),)


def test_spill_leads_to_fewer_registers():
    target = arch("sm_90")
    spilled = MmaParams(128, 256, 32, 2, 4, 3)
    found = propose(target, "float16", (attempt(1, spilled, registers=255, spill=2048),))
    assert "spilled" in found.reason and "2048" in found.reason
    assert estimated_registers(found.params) < estimated_registers(spilled)


def test_resource_error_shrinks_shared_memory():
    target = arch("sm_90")
    big = MmaParams(128, 256, 64, 2, 4, 4)
    history = (attempt(1, big, compile_error="uses too much shared data (0x3c000 bytes, "
                       "0x38c00 max)", category="resource"),)
    found = propose(target, "float16", history)
    assert "resource limit" in found.reason
    assert found.params.smem_bytes < big.smem_bytes


def test_launch_error_for_resources_is_treated_as_a_resource_limit():
    target = arch("sm_90")
    big = MmaParams(128, 256, 32, 2, 4, 4)
    run = Evaluation("launch_error", "CUDA_ERROR_OUT_OF_RESOURCES: too many resources requested "
                    "for launch")
    history = (dataclasses.replace(attempt(1, big), evaluation=run),)
    found = propose(target, "float16", history)
    assert "resource limit" in found.reason and found.params.smem_bytes < big.smem_bytes


def test_wrong_result_moves_away_from_the_failed_configuration():
    target = arch("sm_90")
    first = default(target, "float16")
    found = propose(target, "float16", (attempt(1, first, verdict="wrong"),))
    assert "moving away" in found.reason
    assert found.params not in neighbours(first, target, "float16") and found.params != first
    # Two failures of one template: the other template is taken.
    second = found.params
    third = propose(target, "float16", (attempt(1, first, verdict="wrong"),
                                        attempt(2, second, verdict="crash")))
    assert third.params.template == "simt" and "another template" in third.reason


def test_timings_move_toward_the_fastest():
    target = arch("sm_90")
    slow, fast = SimtParams(64, 64, 16, 4, 4, 2, 4), SimtParams(128, 128, 8, 8, 8, 2, 4)
    history = (attempt(1, slow, verdict="pass", ms=9.0), attempt(2, fast, verdict="pass", ms=3.4))
    found = propose(target, "float32", history, GemmFamily(("simt",)))  # 3xTF32: tests below
    assert "attempt 2 is the fastest" in found.reason
    assert len(changed(fast, found.params)) == 1  # one step from the fastest, along one axis


# --- 3xTF32: float32 on the tensor cores, tried once ----------------------------------------

def test_3xtf32_is_offered_for_float32_on_sm80_and_later_only():
    for name in ("sm_80", "sm_86", "sm_89", "sm_90", "sm_120"):
        assert templates_for(arch(name), "float32") == ("simt", "tf32x3")
        assert "tf32x3" not in templates_for(arch(name), "float16")
    assert templates_for(arch("sm_75"), "float32") == ("simt",)
    assert problems(Tf32x3Params(), arch("sm_90"), "float16")
    assert problems(Tf32x3Params(), arch("sm_75"), "float32")
    too_many = Tf32x3Params(128, 128, 32, 1, 4)  # a 128x32 warp tile: 128 accumulators
    assert any("255 registers" in p for p in problems(too_many, arch("sm_90"), "float32"))
    assert "precision=3xTF32" in Tf32x3Params().choices  # every report and table says so


def test_3xtf32_default_is_tried_once_after_the_first_timing_and_then_like_any_other():
    target = arch("sm_90")
    simt = default(target, "float32")
    first = propose(target, "float32", ())
    assert first.params == simt
    untimed = propose(target, "float32", (attempt(1, simt),))
    assert untimed.params.template == "simt" or "no timings" in untimed.reason
    history = (attempt(1, simt, verdict="pass", ms=3.0),)
    found = propose(target, "float32", history)
    assert found.params == default(target, "float32", "tf32x3") == Tf32x3Params()
    assert "tolerance" in found.reason and "3xTF32" in found.reason
    # faster: the search goes on from it, one step along one axis
    history += (attempt(2, found.params, verdict="pass", ms=2.8),)
    after = propose(target, "float32", history)
    assert "attempt 2 is the fastest" in after.reason and after.params.template == "tf32x3"
    assert len(changed(found.params, after.params)) == 1
    # slower: back to SIMT's neighbours, and 3xTF32 is not offered again
    slower = history[:1] + (attempt(2, found.params, verdict="pass", ms=3.3),)
    back = propose(target, "float32", slower)
    assert "attempt 1 is the fastest" in back.reason and back.params.template == "simt"


def test_a_wrong_3xtf32_answer_leaves_the_template_at_once():
    """Its error is the split's and the same in every configuration: no second 3xTF32 try."""
    target = arch("sm_90")
    history = (attempt(1, default(target, "float32"), verdict="pass", ms=3.0),
               attempt(2, Tf32x3Params(), verdict="wrong"))
    found = propose(target, "float32", history)
    assert found.params.template == "simt" and "another template" in found.reason


def test_simt_only_never_offers_3xtf32():
    target, only = arch("sm_90"), GemmFamily(("simt",))
    history = (attempt(1, default(target, "float32"), verdict="pass", ms=3.0),)
    for _ in range(4):
        p = propose(target, "float32", history, only).params
        assert p.template == "simt"
        history += (attempt(len(history) + 1, p, verdict="pass", ms=3.1),)


def test_builtin_model_limited_to_simt_writes_simt(tmp_path):
    task = Task("generate", arch("sm_90"), SPEC, "float32")
    history = (attempt(1, default(arch("sm_90"), "float32"), verdict="pass", ms=3.0),)
    reply = BuiltinModel(only=("simt",)).complete(Request((), task, history))
    assert "simt template" in reply.text and "tf32x3" not in extract_source(reply.text)
    reply = BuiltinModel().complete(Request((), task, history))
    assert "tf32x3 template" in reply.text and "3xTF32" in extract_source(reply.text)


def test_a_wide_best_is_not_turned_tall():
    """The first three float16 sm_90 candidates as timed on the H200 (s5, spread run 3): the
    fourth is BK=32 (0.352 ms in the runs before), not the tall twin of the fastest (which the
    cost model scores alike, and which measured slower there)."""
    target = arch("sm_90")
    base = MmaParams(128, 256, 64, 2, 4, 4, 8, 2)
    timed = ((base, 0.3662), (dataclasses.replace(base, stages=3), 0.3648),
             (dataclasses.replace(base, group=16), 0.3660))
    history = tuple(attempt(i + 1, p, verdict="pass", ms=ms) for i, (p, ms) in enumerate(timed))
    found = propose(target, "float16", history)
    assert found.params == dataclasses.replace(base, bk=32), found.reason


def test_without_timings_the_model_ranks_and_says_so():
    target = arch("sm_89")
    found = propose(target, "float32", (attempt(1, default(target, "float32")),))
    assert "no timings" in found.reason and "occupancy" in found.reason
    assert "registers" in found.reason


def test_exhausted_space_is_reported(monkeypatch):
    target = arch("sm_90")
    tiny = [SimtParams(128, 128, 8, 8, 8, 2, 4), SimtParams(64, 64, 16, 4, 4, 2, 4)]
    monkeypatch.setattr(gemm_space, "space", lambda a, d, t: tiny if t == "simt" else [])
    history = tuple(attempt(i + 1, p, verdict="pass", ms=1.0) for i, p in enumerate(tiny))
    found = propose(target, "float32", history)
    assert found.params is None and "exhausted" in found.reason


# --- the builtin model -----------------------------------------------------------------------

def test_builtin_model_announces_itself_and_writes_a_kernel_with_its_reason():
    model = BuiltinModel()
    assert model.name == "builtin" and model.is_language_model is False
    assert "not a language model" in model.describe()
    task = Task("generate", arch("sm_90"), SPEC, "float16")
    reply = model.complete(Request((), task, ()))
    assert reply.give_up is None
    assert reply.text.index("Reason:") < reply.text.index("```cuda")
    source = extract_source(reply.text)
    contract, found = parse_contract(source, SPEC)
    assert contract is not None and contract.dtype == "float16", found


def test_builtin_model_gives_up_on_other_ops():
    other = dataclasses.replace(SPEC, name="softmax")
    reply = BuiltinModel().complete(Request((), Task("generate", arch("sm_90"), other, "float32"),
                                            ()))
    assert reply.give_up and "--base-url" in reply.give_up and "gemm" in reply.give_up


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, template", [*((d, None) for d in DTYPES), ("float32", "tf32x3")])
def test_default_is_correct_on_the_local_gpu(dtype, template):
    """Every test size (1x1x1, ragged edges, 1000^3) through the same worker as any candidate,
    against the reference in higher precision at the spec's tolerance, then timed at 4096^3: the
    preferred template's default for each dtype, and 3xTF32's for float32."""
    from kgen.arch import local_gpu
    from kgen.gpu.evaluate import EvalOptions, evaluate

    _, target = local_gpu()
    if template is not None and template not in templates_for(target, dtype):
        pytest.skip(f"no {template} template for {dtype} on {target.name}")
    source = render(default(target, dtype, template), dtype)
    contract, problems = parse_contract(source, SPEC)
    compiled = compile_source(source, target)
    assert contract is not None and compiled.ok, (problems, compiled.summary)
    options = EvalOptions(bench_sizes=({"M": 4096, "N": 4096, "K": 4096},), bench_budget_s=0.5)
    result = evaluate(compiled, contract, SPEC, target, options=options, workers=gpu_workers())
    assert result is not None and result.passed, result and result.message
    assert result.timings[0].ms > 0 and result.timings[0].baseline_ms


@pytest.mark.nvcc
@pytest.mark.parametrize("name, arch_name", [("gemm_simt", "sm_80"), ("gemm_mma", "sm_80"),
                                             ("gemm_wgmma", "sm_90a"), ("gemm_tf32x3", "sm_80")])
def test_each_template_file_compiles_on_its_own(name, arch_name):
    """The .cu templates are real CUDA: with their default parameters they compile unchanged
    (with the shared headers they include pasted in, as kgen's isolated compile sees one file)."""
    from kgen.author.common import template_path, with_headers

    result = compile_source(with_headers(template_path(name).read_text()), arch(arch_name))
    assert result.ok, result.summary
    assert all(r.spill_stores == 0 for r in result.resources.values())


@pytest.mark.nvcc
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sm90a_picks_the_wgmma_template_and_it_compiles(dtype):
    task = Task("generate", arch("sm_90a"), SPEC, dtype)
    reply = BuiltinModel().complete(Request((), task, ()))
    source = extract_source(reply.text)
    assert "template=wgmma" in source and "wgmma.mma_async" in source
    contract, problems = parse_contract(source, SPEC)
    assert contract is not None, problems
    result = compile_source(source, arch("sm_90a"))
    assert result.ok and not result.diagnostics, result.summary


def test_plain_sm90_keeps_mma_sync_and_says_wgmma_needs_sm90a():
    reply = BuiltinModel().complete(Request((), Task("generate", arch("sm_90"), SPEC, "float16"),
                                            ()))
    assert "template=mma " in reply.text and "--arch sm_90a" in reply.text


@pytest.mark.nvcc
def test_wgmma_clusters_release_stages_without_a_cluster_scope_fence():
    """Clusters of 2 ran at half speed while every k-block's stage release carried
    .release.cluster (and the producer's wait .acquire.cluster); without them they run as fast as
    single CTAs. The remote arrival must stay, or the peer's multicast could overwrite a stage
    still in use."""
    p = dataclasses.replace(default(arch("sm_90a"), "bfloat16"), cluster=2)
    source = render(p, "bfloat16")
    assert "mbarrier.arrive.shared::cluster.b64" in source and "mapa.shared::cluster" in source
    assert ".release.cluster.shared::cluster" not in source
    assert "try_wait.parity.acquire.cluster" not in source
    result = compile_source(source, arch("sm_90a"))
    assert result.ok and not result.diagnostics, result.summary


@pytest.mark.nvcc
def test_wgmma_cluster_by_size_launches_clusters_of_2_only_where_b_rows_are_misaligned():
    """cluster=0: one file, one kernel built for both cluster sizes (no __cluster_dims__), and
    two launch lines: clusters of 2 where N % 16 != 0 (B's rows not 32-byte aligned), no cluster
    elsewhere; stream-K in both."""
    target = arch("sm_90a")
    p = gemm_space.settled(dataclasses.replace(default(target, "bfloat16"), cluster=0))
    assert p.sk == 1 and not problems(p, target, "bfloat16")
    source = render(p, "bfloat16")
    assert "#define CLUSTER_AT_LAUNCH 1" in source and "gemm_body<1>" in source
    contract, errors = parse_contract(source, SPEC)
    assert contract is not None, errors
    at = {n: contract.launches_at({"M": 3000, "N": n, "K": 2000, "SMS": 132}) for n in (5000, 5008)}
    (misaligned,), (aligned,) = at[5000], at[5008]
    sizes = {"M": 3000, "N": 5000, "K": 2000, "SMS": 132}
    assert misaligned.cluster_dims(sizes) == (2, 1, 1) and not aligned.cluster
    assert misaligned.dims(sizes)[0] == (132,) and aligned.dims(sizes | {"N": 5008})[0] == (132,)
    result = compile_source(source, target)
    assert result.ok and not result.diagnostics, result.summary


def test_wgmma_stream_k_follows_the_cluster_so_the_default_leads_the_search():
    """sk is derived, not searched: on for cluster 1 and 0 (clusters of 2 chosen at launch, cut
    a cluster at a time), so the default (sk=1) is in the space the search ranks and is its first
    candidate, and the step to clusters of 2 compiled in drops it."""
    target = arch("sm_90a")
    first = default(target, "bfloat16")
    wgmma_space = space(target, "bfloat16", "wgmma")
    assert first.sk == 1 and first in wgmma_space
    assert all(p.sk == int(p.cluster < 2) for p in wgmma_space)
    assert propose(target, "bfloat16", ()).params == first
    by_size = dataclasses.replace(first, cluster=0)  # between 1 and 2 on the cluster axis
    steps = {(q.cluster, q.sk) for q in neighbours(by_size, target, "bfloat16")}
    assert (1, 1) in steps and (2, 0) in steps and (2, 1) not in steps


@pytest.mark.nvcc
@pytest.mark.parametrize("template", ["wgmma", "simt"])
def test_stream_k_schedule_covers_every_k_block_once_and_pairs_its_pieces(tmp_path, template):
    """The kernel's own Schedule, compiled from the rendered source and run on the host over
    12,800 (tiles, k-blocks, CTAs) cases: every (tile, k-block) exactly once; every cut tile in
    pieces, the owner's (from k-block 0, its CTA's last unit) and its contributors' (one per CTA
    at most), and the owner absorbs exactly those slots; no CTA waits before it has published.
    wgmma (cut only where few are left over): those alone, in at most SK_PIECES + 2 pieces. simt
    (spread): the next-to-last round too, in at most two pieces, every CTA ending within one
    k-block of the others."""
    import subprocess
    from pathlib import Path

    harness = Path(__file__).parent / "data" / "stream_k_schedule_check.cu"
    if template == "wgmma":
        source, target = render(WgmmaParams(sk=1), "bfloat16"), "90a"
    else:
        source, target = render(SimtParams(128, 256, 16, 8, 16, 2, 4, sk=1), "float32"), "90"
    (tmp_path / "check.cu").write_text(source + harness.read_text())
    build = subprocess.run(["nvcc", "-gencode", f"arch=compute_{target},code=sm_{target}",
                            "-std=c++17", "-o", str(tmp_path / "check"),
                            str(tmp_path / "check.cu")],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-2000:]
    run = subprocess.run([str(tmp_path / "check")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.endswith(" 0 problems\n"), run.stdout
    assert int(run.stdout.split()[2]) > 50_000  # tiles were really cut


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_wgmma_stream_k_is_correct_where_it_cuts_tiles(dtype):
    """Stream-K cuts tiles only where there are more tiles than SMs and they do not divide evenly,
    which no gemm test size reaches; at these sizes every output is checked before and after the
    timed launches, so a flag left up by one launch would fail the next. 2000x2608x304: 176 tiles
    of 128x256 on 132 SMs, no cluster; 2000x2600x304 (TMA) and 1999x2601x301 (the guarded path):
    B's rows misaligned, so 88 cluster tiles on 66 clusters of 2, cut a cluster at a time;
    3000x5000x2000: clusters, nothing cut."""
    from kgen.arch import local_gpu
    from kgen.gpu.evaluate import EvalOptions, evaluate

    found = local_gpu()
    if found is None or found[1].major_minor != 90:
        pytest.skip("needs an sm_90 GPU")
    target = arch("sm_90a")
    source = render(dataclasses.replace(default(target, dtype), sk=1), dtype)
    assert "#define SK 1" in source
    contract, _ = parse_contract(source, SPEC)
    compiled = compile_source(source, target)
    sizes = ({"M": 2000, "N": 2608, "K": 304}, {"M": 2000, "N": 2600, "K": 304},
             {"M": 1999, "N": 2601, "K": 301}, {"M": 3000, "N": 5000, "K": 2000})
    options = EvalOptions(bench_sizes=sizes, bench_budget_s=0.3)
    result = evaluate(compiled, contract, SPEC, target, options=options, workers=gpu_workers())
    assert result is not None and result.passed, result and result.message
    assert len(result.timings) == 4


@pytest.mark.gpu
def test_simt_stream_k_is_correct_where_it_cuts_tiles():
    """The float32 SIMT kernel with stream-K, at sizes where it cuts tiles on 132 SMs: 133 tiles
    of 128x256 (one left over: every CTA's range a tile and a sliver), 176 with odd K and N
    (through the guarded loads), 480 and 256 (odd). Every output is checked before and after the
    timed launches, so a flag left up by one launch would fail the next."""
    from kgen.arch import local_gpu
    from kgen.gpu.evaluate import EvalOptions, evaluate

    found = local_gpu()
    if found is None or found[1].major_minor != 90:
        pytest.skip("needs an sm_90 GPU (132 SMs: the sizes are chosen for it)")
    target = arch("sm_90")
    source = render(SimtParams(128, 256, 16, 8, 16, 2, 4, sk=1), "float32")
    assert "#define SK 1" in source
    contract, _ = parse_contract(source, SPEC)
    compiled = compile_source(source, target)
    sizes = ({"M": 2432, "N": 1792, "K": 512}, {"M": 1999, "N": 2601, "K": 301},
             {"M": 3000, "N": 5000, "K": 2000}, {"M": 1999, "N": 3999, "K": 303})
    options = EvalOptions(bench_sizes=sizes, bench_budget_s=0.3)
    result = evaluate(compiled, contract, SPEC, target, options=options, workers=gpu_workers())
    assert result is not None and result.passed, result and result.message
    assert len(result.timings) == 4


@pytest.mark.gpu
def test_simt_default_is_correct_through_either_kernel():
    """The float32 default (sk=3) on 132 SMs, each split of its tiles: 4224x4096x512 fills four
    whole rounds of 128x256 tiles, so the one-tile grid alone runs; 2432x1792x512 leaves one
    tile over (133), so the persistent kernel alone spreads them all; 4096x4096x512 (512 tiles)
    runs 396 in the one-tile grid and cuts 116 over every SM; 4999x1799x301 (320 tiles, odd K
    and N: the guarded loads) runs 132, then spreads the last 188. Every output is checked
    before and after the timed launches."""
    from kgen.arch import local_gpu
    from kgen.gpu.evaluate import EvalOptions, evaluate

    found = local_gpu()
    if found is None or found[1].major_minor != 90:
        pytest.skip("needs an sm_90 GPU (132 SMs: the sizes are chosen for it)")
    target = arch("sm_90")
    source = render(default(target, "float32"), "float32")
    contract, _ = parse_contract(source, SPEC)
    assert contract is not None
    sizes = ({"M": 4224, "N": 4096, "K": 512}, {"M": 2432, "N": 1792, "K": 512},
             {"M": 4096, "N": 4096, "K": 512}, {"M": 4999, "N": 1799, "K": 301})
    kernels = [[launch.kernel for launch in contract.launches_at(s | {"SMS": 132})]
               for s in sizes]
    one, cut = "gemm_simt_f32", "gemm_simt_f32_sk"
    assert kernels == [[one], [cut], [one, cut], [one, cut]]
    compiled = compile_source(source, target)
    options = EvalOptions(bench_sizes=sizes, bench_budget_s=0.3)
    result = evaluate(compiled, contract, SPEC, target, options=options, workers=gpu_workers())
    assert result is not None and result.passed, result and result.message
    assert len(result.timings) == 4


@pytest.mark.gpu
@pytest.mark.parametrize("changes", [{}, {"cluster": 2}, {"cluster": 1},
                                     {"bn": 128, "stages": 5, "pp": 1}],
                         ids=["default", "cluster-2", "no-cluster", "ping-pong"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_wgmma_default_is_correct_at_every_test_size_on_hopper(dtype, changes):
    """Every gemm test size (M, N or K of 1, ragged edges, odd K through the guarded loads), for
    the default (clusters of 2 set at launch where N % 16 != 0: N = 136, 1000 and the odd ones;
    none at N = 256), the same with clusters of 2 everywhere (multicast B, cross-CTA stage
    release) and with none, and ping-pong consumers with 128x128 tiles (taking turns with whole
    tiles)."""
    from kgen.arch import local_gpu
    from kgen.gpu.evaluate import EvalOptions, evaluate

    found = local_gpu()
    if found is None or found[1].major_minor != 90:
        pytest.skip("needs an sm_90 GPU")
    target = arch("sm_90a")
    params = gemm_space.settled(dataclasses.replace(default(target, dtype), **changes))
    assert not problems(params, target, dtype)
    source = render(params, dtype)
    contract, _ = parse_contract(source, SPEC)
    compiled = compile_source(source, target)
    options = EvalOptions(bench_sizes=({"M": 4096, "N": 4096, "K": 4096},), bench_budget_s=0.5)
    result = evaluate(compiled, contract, SPEC, target, options=options, workers=gpu_workers())
    assert result is not None and result.passed, result and result.message


def _square_matmul():
    """gemm as another op would state it: `X @ W -> out`, one size N, same_as: gemm."""
    from kgen.spec import Reference, Tensor

    gemm = load_op("gemm")
    return dataclasses.replace(
        gemm, name="square_mm", sizes=("N",), same_as="gemm",
        tensors=(Tensor("X", ("N", "N"), "input"), Tensor("W", ("N", "N"), "input"),
                 Tensor("out", ("N", "N"), "output")),
        reference=Reference("expression", "X @ W"), test_sizes=({"N": 7},),
        bench_sizes=({"N": 4096},), flops="2 * N * N * N", bytes="3 * N * N * ELEM")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("arch", ["sm_90a", "sm_89"])
def test_an_op_same_as_gemm_gets_gemms_kernels_under_its_own_names(arch, dtype):
    from kgen.author.families import BoundGemm, family_for

    spec, target = _square_matmul(), parse_arch(arch, check_nvcc=False)
    family = family_for(spec)
    assert isinstance(family, BoundGemm) and family.templates(target, dtype)
    p, _ = family.first(target, dtype)
    source = family.render(p, dtype, target)
    contract, problems = parse_contract(source, spec)
    assert problems == () and contract.op == "square_mm" and contract.dtype == dtype
    for launch in contract.launches:
        plain = [a for a in launch.arguments() if isinstance(a, str) and a != "SMS"]
        maps = [a.tensor for a in launch.arguments() if not isinstance(a, str)]
        assert plain == ["X", "W", "out", "N", "N", "N"], launch.args
        assert maps in ([], ["X", "W", "out"]), launch.args
        assert not re.search(r"\b[ABCMK]\b", " ".join(launch.grid + (launch.when,)))
    # Only the contract changes: the kernel is gemm's, byte for byte.
    kernel = [ln for ln in source.splitlines() if not ln.startswith("// kgen:")
              and "computes gemm" not in ln]
    assert kernel == [ln for ln in gemm_space.render(p, dtype).splitlines()
                      if not ln.startswith("// kgen:")]


def test_the_builtin_author_writes_an_op_same_as_gemm_that_compiles():
    spec = _square_matmul()
    target = parse_arch("sm_90a")
    reply = BuiltinModel().complete(Request((), Task("generate", target, spec, "float16"), ()))
    assert reply.give_up is None and "wgmma" in reply.text
    source = extract_source(reply.text)
    compiled = compile_source(source, target)
    assert compiled.ok, compiled.summary
    contract, problems = parse_contract(source, spec)
    assert problems == () and contract.op == "square_mm"
