"""On a GPU with ncu and compute-sanitizer: the bottleneck class of kernels whose bottleneck is
known, and the cheat kernels' faults explained by the sanitizer at the right source lines. Each
test prints the record it checks, so a failure shows the numbers."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import local_hopper

from kgen.arch import local_gpu, parse_arch
from kgen.author.space import default, render
from kgen.cli import KgenGroup
from kgen.cli.gpu_cmds import bench, profile_cmd
from kgen.compile import compile_source
from kgen.findings import Profile
from kgen.gpu import sanitizer
from kgen.gpu.evaluate import EvalOptions, evaluate, profile_only
from kgen.loop.candidate import parse_contract
from kgen.ops import load_op

pytestmark = pytest.mark.gpu

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parent.parent
GEMM = load_op("gemm")
SCALE = load_op(path=DATA / "specs" / "scale.yaml")
# Validation only, no timing: the sanitizer runs on the failures, nothing is profiled.
SANITIZE = EvalOptions(bench_sizes=(), kernel_timeout_s=5.0, timeout_s=180.0, profile=False)


def _compiled(source: str, spec, target=None):
    target = target or local_gpu()[1]
    contract, problems = parse_contract(source, spec)
    assert contract is not None, problems
    compiled = compile_source(source, target)
    assert compiled.ok, compiled.summary
    return contract, compiled, target


def profiled(source: str, spec, target=None) -> Profile:
    contract, compiled, target = _compiled(source, spec, target)
    found = profile_only(compiled, contract, spec, target)
    assert found is not None
    print(found.describe())
    assert not found.error, found.error
    return found


def test_a_copy_is_dram_bound():
    """Four float4 loads in flight per thread (written after the H200 run of 2026-12-02, where
    the one-float copy below was latency-bound; passed on the H200 on 2026-12-03)."""
    p = profiled((DATA / "kernels" / "scale_copy_vec.cu").read_text(), SCALE)
    assert p.bottleneck == "memory_dram", p.describe()
    assert p.dram is not None and p.dram >= 60 and p.evidence[0].startswith("DRAM")


def test_a_copy_with_too_little_in_flight_is_not_called_at_the_dram_roof():
    """One float per thread keeps ~8 KiB of loads in flight per SM. On the H200 (2026-12-02) it
    moved 2.6 TB/s, 55% of DRAM peak, with long_scoreboard 86% of stalls: latency_stalls. On an
    H100 (2026-12-05), whose DRAM is slower, the same 2.4 TB/s is 70% of peak: memory_dram by
    the rule, but below the roof. Either way the feedback must send the model after more loads
    in flight, not after fewer bytes."""
    p = profiled((DATA / "kernels" / "scale_copy.cu").read_text(), SCALE)
    assert p.dram is not None and p.dram < 85 and not p.at_roofline, p.describe()
    assert "long_scoreboard" in p.describe()
    if p.dram < 60:
        assert p.bottleneck == "latency_stalls", p.describe()
    else:
        assert p.bottleneck == "memory_dram" and "in flight" in p.hint(), p.describe()


def test_the_naive_gemm_is_latency_or_l1_bound_with_evidence():
    p = profiled((ROOT / "reference_kernels" / "gemm" / "01_naive.cu").read_text(), GEMM)
    assert p.bottleneck in ("memory_onchip", "latency_stalls", "latency_occupancy"), p.describe()
    if p.bottleneck == "memory_onchip":
        assert "L1" in p.evidence[0], p.evidence
    assert p.evidence and (p.dram or 0) < 60 and (p.tensor or 0) < 5


def test_deliberate_bank_conflicts_are_named():
    p = profiled((DATA / "kernels" / "scale_bank_conflicts.cu").read_text(), SCALE)
    assert p.bank_conflicts and p.conflict_ratio is not None and p.conflict_ratio > 0.8
    assert "significant: pad or swizzle" in p.describe()


def test_a_tensor_core_gemm_at_4096_cubed_is_compute_bound():
    target = local_gpu()[1]
    source = render(default(target, "float16"), "float16")
    p = profiled(source, GEMM)
    assert p.sizes == {"M": 4096, "N": 4096, "K": 4096}
    assert p.bottleneck.startswith("compute"), p.describe()
    assert p.tensor is not None and p.tensor > 20


def test_the_wgmma_default_is_profiled_at_the_one_line_that_runs():
    """The sm_90a default has two launch lines for one kernel, chosen by `when` on N's alignment.
    Counting both made ncu skip past the one launch that ran ("No kernels were profiled", on an
    H100, 2026-12-05)."""
    local_hopper()
    target = parse_arch("sm_90a")
    source = render(default(target, "bfloat16"), "bfloat16")
    assert source.count("// kgen: launch gemm_wgmma_bf16 ") == 2
    p = profiled(source, GEMM, target)
    assert p.bottleneck == "compute_tensor" and p.kernel == "gemm_wgmma_bf16"


def test_a_launch_line_chosen_by_the_sm_count_is_profiled():
    """sk=2's two launch lines are chosen by a `when` over SMS, which kgen cannot decide without
    the GPU: counting both lines' launches, ncu skipped past the one that ran. The worker's
    profiler range needs no count (s29). The float32 default (sk=3) runs both of its kernels
    at 4096^3 (512 tiles; 116 left over on 132 SMs), and the profile lists both."""
    target = local_gpu()[1]
    by_count = render(replace(default(target, "float32"), sk=2), "float32")
    assert "SMS" in by_count.split("// kgen: launch gemm_simt_f32 ")[1].split("\n")[0]
    p = profiled(by_count, GEMM)
    assert p.kernel in ("gemm_simt_f32", "gemm_simt_f32_sk") and not p.others, p.describe()
    p = profiled(render(default(target, "float32"), "float32"), GEMM)
    ran = {p.kernel, *(other.split(":")[0] for other in p.others)}
    assert ran == {"gemm_simt_f32", "gemm_simt_f32_sk"}, p.describe()


def sanitized(name: str):
    source = (DATA / "cheats" / name).read_text()
    contract, compiled, target = _compiled(source, GEMM)
    result = evaluate(compiled, contract, GEMM, target, options=SANITIZE)
    assert result is not None and result.sanitizer is not None, result
    print(result.describe(source))
    return result, result.sanitizer


def test_out_of_bounds_write_is_explained_at_its_line():
    result, report = sanitized("oob_write.cu")
    first = report.findings[0]
    assert (first.tool, first.line) == ("memcheck", 11), report
    assert "write" in first.what and "past the end of C" in first.where
    assert first.thread and first.block
    assert "sanitizer  memcheck" in result.describe()


def test_unguarded_tile_loads_read_past_the_inputs():
    result, report = sanitized("oob_read_tiled.cu")
    assert "reads past the end of A" in result.message and "never written" not in result.message
    first = report.findings[0]
    assert first.tool == "memcheck" and first.line in (15, 16) and "read" in first.what
    assert "past the end of" in first.where


def test_race_without_syncthreads_names_both_lines():
    _, report = sanitized("race_no_sync.cu")
    assert report.tools[-1] == "racecheck", report
    lines = {(f.line, f.other_line) for f in report.findings}
    assert lines & {(13, 16), (14, 16), (16, 13), (16, 14)}, report


@pytest.mark.xfail((sanitizer.tool_version() or (0, 0)) < sanitizer.SHARED_INITCHECK,
                   strict=True, reason="this compute-sanitizer's initcheck has no "
                   "--initcheck-address-space (2025.4 and later): it checks global memory only. "
                   "Seen on the H200 with 2025.3.1 (CUDA 13.0), 2026-12-02 and -03")
def test_uninitialized_shared_memory_is_named_at_the_read():
    _, report = sanitized("uninit_smem.cu")
    assert report.tools[-1] == "initcheck", report
    first = report.findings[0]
    assert first.line == 16 and "__shared__" in first.what, report


def test_illegal_address_crash_is_explained():
    result, report = sanitized("illegal_address.cu")
    assert result.verdict == "crash" and report.findings and report.findings[0].line == 9, report


def test_kgen_profile_and_bench_json_carry_the_records():
    cli = KgenGroup(commands={"profile": profile_cmd, "bench": bench})
    kernel = str(DATA / "cheats" / "correct_tiled.cu")
    out = CliRunner().invoke(cli, ["profile", kernel, "--json"])
    assert out.exit_code == 0, out.output
    record = json.loads(out.stdout[out.stdout.index("{"):])
    assert record["bottleneck"] and record["kernel"] == "gemm_tiled" and not record["error"]
    done = CliRunner().invoke(cli, ["bench", kernel, "--quick", "--json"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout[done.stdout.index("{"):])
    assert data["verdict"] == "pass" and data["profile"]["bottleneck"]


def test_the_swizzled_simt_layout_is_correct():
    from kgen.author.simt import SimtParams

    source = render(SimtParams(128, 128, 16, 8, 8, 2, 4, swz=1), "float32")
    contract, compiled, target = _compiled(source, GEMM)
    result = evaluate(compiled, contract, GEMM, target,
                      options=replace(SANITIZE, sanitize=False))
    assert result is not None and result.passed, result and result.message
