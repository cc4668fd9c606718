"""The builtin author's memory-bound families (elementwise, rowwise, transpose): which ops it
writes and the give-up for the rest, the spaces and their choices, the defaults and the search's
reasons, the copy-bandwidth stop, and every rendered kernel compiling (sm_89, sm_90) with a
contract that parses against the op's spec and no spills."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgen import cli
from kgen.arch import parse_arch
from kgen.author import memcost, rowwise
from kgen.author.common import TEMPLATES, template_path
from kgen.author.families import WRITTEN_OPS, family_for
from kgen.author.rowwise import RowParams
from kgen.author.sample import propose_random
from kgen.author.search import propose
from kgen.author.transpose import TransposeParams, bank_passes
from kgen.compile import CompileResult, ResourceUsage, compile_source
from kgen.findings import Profile
from kgen.loop.attempt import Attempt
from kgen.loop.candidate import extract_source, parse_contract
from kgen.loop.task import Task
from kgen.models.base import Request
from kgen.models.builtin import BuiltinModel, can_write
from kgen.ops import available_ops, load_op
from kgen.verdict import Evaluation, Timing

SM90 = parse_arch("sm_90", check_nvcc=False)
MEMORY_OPS = [op for op in WRITTEN_OPS if op != "gemm"]
SPECS = {op: load_op(op) for op in available_ops()}


def family(op: str):
    found = family_for(SPECS[op])
    assert found is not None
    return found


def timed(number: int, p, ms: float, fraction: float = 0.5, bound: str = "memory",
          profile: Profile | None = None, sizes: int = 1) -> Attempt:
    comp = CompileResult("sm_90", b"cubin", (), {"k": ResourceUsage(32, 0, 0, 0)})
    timings = tuple(Timing({"M": 16384, "N": 4096 * (i + 1)}, ms, ms * 0.99, ms * 1.01,
                           roofline_fraction=fraction, bound=bound) for i in range(sizes))
    run = Evaluation("pass", "ok", timings, profile=profile)
    return Attempt(number, number, "// source", p.choices, compile=comp, evaluation=run)


# --- which ops, and the give-up -----------------------------------------------------------------

def test_can_write_exactly_the_ops_with_templates():
    assert set(MEMORY_OPS) == {"gelu", "silu", "bias_relu", "softmax", "log_softmax",
                               "layernorm", "rmsnorm", "sum", "max", "argmax", "transpose",
                               "cumsum"}
    for op, spec in SPECS.items():
        for dtype in spec.dtypes:
            assert can_write(spec, dtype, SM90) == (op in WRITTEN_OPS), (op, dtype)
    assert not can_write(SPECS["softmax"], "float64", SM90)


@pytest.mark.parametrize("op", ["gemv", "bmm", "conv2d", "attention"])
def test_ops_without_a_template_get_a_plain_give_up(op):
    task = Task("generate", SM90, SPECS[op], "float32")
    reply = BuiltinModel().complete(Request((), task, ()))
    assert reply.text == "" and reply.give_up is not None
    assert f"no template for {op}" in reply.give_up
    assert "use an LLM endpoint: --model NAME --base-url URL" in reply.give_up


def test_a_spec_that_only_shares_a_name_is_not_written():
    spec = SPECS["softmax"]
    renamed = dataclasses.replace(spec, tensors=tuple(
        dataclasses.replace(t, name="A") if t.name == "X" else t for t in spec.tensors))
    assert family_for(renamed) is None and not can_write(renamed, "float32", SM90)
    reply = BuiltinModel().complete(Request((), Task("generate", SM90, renamed, "float32"), ()))
    assert "template is for the shipped op (X[M,N], Y[M,N])" in reply.give_up


# --- spaces, choices, defaults ------------------------------------------------------------------

@pytest.mark.parametrize("op", MEMORY_OPS)
def test_every_configuration_reads_back_and_respects_the_limits(op):
    fam = family(op)
    for dtype in SPECS[op].dtypes:
        (template,) = fam.templates(SM90, dtype)
        configs = fam.space(SM90, dtype, template)
        assert len(configs) >= 50
        for p in configs:
            assert fam.parse(p.choices) == p
            assert 32 <= p.threads <= 1024 and not fam.problems(p, SM90, dtype)
            cap = memcost.register_cap(SM90, p.threads, 1)
            assert fam.registers(p) <= cap
            for q in fam.neighbours(p, SM90, dtype):
                changed = [k for k in p.__dict__ if getattr(p, k) != getattr(q, k)]
                assert len(changed) == 1 and q in configs
    assert family("softmax").parse(family("gelu").first(SM90, "float32")[0].choices) is None


def test_rowwise_defaults_keep_the_bench_row_in_registers_or_all_in_flight():
    for op in ("softmax", "layernorm", "rmsnorm"):
        p, _ = family(op).first(SM90, "float32")
        assert p.chunk >= 4096 and p.threads == 256  # N = 4096 at the first bench size
        assert (p.tpr, p.vec, p.cache) == (256, 4, 4)
    half, _ = family("softmax").first(SM90, "float16")
    assert (half.vec, half.cache, half.chunk) == (8, 2, 4096)
    # the best of sweeps on an H200 (benchmarks/h200-2026-12-03-s2, -s5): 128 threads per row,
    # all loads in flight, read evict-first
    p, _ = family("sum").first(SM90, "bfloat16")
    assert (p.tpr, p.rpb, p.vec, p.cache, p.hint) == (128, 2, 8, 8, 1)
    p, _ = family("sum").first(SM90, "float32")
    assert (p.tpr, p.rpb, p.vec, p.cache, p.hint) == (128, 2, 4, 16, 1) and p.chunk >= 4096
    p, why = family("max").first(SM90, "float32")
    assert (p.tpr, p.rpb, p.vec, p.cache, p.hint) == (128, 2, 4, 16, 1) and "evict-first" in why
    # argmax: the one configuration of the s14 sweep whose slowest bench size kept 90%
    for dtype, vec, loads in (("float32", 4, 8), ("bfloat16", 8, 4)):
        p, why = family("argmax").first(SM90, dtype)
        assert (p.tpr, p.rpb, p.vec, p.cache, p.hint) == (256, 2, vec, loads, 1)
        assert p.chunk == 8192 and "slowest size" in why
    shorter = dataclasses.replace(SPECS["argmax"], bench_sizes=({"M": 1024, "N": 1000},))
    p, _ = family_for(shorter).first(SM90, "float32")  # rows the sweep did not cover
    assert (p.tpr, p.rpb, p.cache) == (128, 1, 16)
    long_rows = dataclasses.replace(SPECS["softmax"], bench_sizes=({"M": 4096, "N": 32768},))
    p, why = family_for(long_rows).first(SM90, "float32")
    # 8 float4s per thread fit the 64 registers of a 1024-thread block (ptxas: 56)
    assert (p.tpr, p.cache, p.chunk) == (1024, 8, 32768) and "kept in registers" in why
    longer = dataclasses.replace(long_rows, bench_sizes=({"M": 4096, "N": 65536},))
    p, why = family_for(longer).first(SM90, "float32")
    assert p.chunk < 65536 and p.online == 1 and "online" in why  # 16 float4s would not fit


def launched(source: str, spec, sizes: dict) -> tuple[str, ...]:
    contract, problems = parse_contract(source, spec)
    assert contract is not None, problems
    return tuple(launch.kernel for launch in contract.launches_at(sizes))


def test_rowwise_files_carry_a_kernel_for_each_longer_class_of_bench_rows():
    """Softmax's bench rows are 4096, 8192 and 32768 long: the searched kernel holds 4096, and
    the file adds one holding 8192 and one holding 32768 (so no bench row is re-read), picked by
    N in the launch lines; exactly one launch runs at every size."""
    spec = SPECS["softmax"]
    p, _ = family("softmax").first(SM90, "float32")
    shapes = rowwise.ladder(p, SM90, "float32", (4096, 8192, 32768))
    assert [q.chunk for q in shapes] == [4096, 8192, 32768] and shapes[0] == p
    assert [(q.tpr, q.rpb, q.cache) for q in shapes[1:]] == [(512, 1, 4), (1024, 1, 8)]
    source = family("softmax").render(p, "float32", SM90)
    names = [launched(source, spec, {"M": 3, "N": n}) for n in (1, 4096, 4097, 8192, 8193,
                                                                 32768, 100000)]
    assert names == [("softmax_row_f32",)] * 2 + [("softmax_row_f32_upto8192",)] * 2 + [
        ("softmax_row_f32_long",)] * 3
    for sizes in (*spec.test_sizes, *spec.bench_sizes):
        assert len(launched(source, spec, sizes)) == 1
    # the choices line is still the searched kernel's, so the search reads its own files back
    assert family("softmax").parse(source) == p
    # reductions read each row once: streaming costs them nothing, so one kernel
    q, _ = family("sum").first(SM90, "float32")
    assert rowwise.ladder(q, SM90, "float32", (4096, 65536)) == (q,)
    # a kernel already holding the longest bench row needs no other
    assert rowwise.ladder(shapes[2], SM90, "float32", (4096, 8192, 32768)) == (shapes[2],)
    # layernorm's rows (4096, 8192): 512 threads per row for 8192
    lp, _ = family("layernorm").first(SM90, "bfloat16")
    assert [q.chunk for q in rowwise.ladder(lp, SM90, "bfloat16", (4096, 8192))] == [4096, 8192]


@pytest.mark.nvcc
@pytest.mark.parametrize("op", ["softmax", "layernorm", "rmsnorm"])
def test_every_kernel_of_a_rowwise_file_compiles_without_spills(op):
    fam = family(op)
    for dtype in ("float32", "bfloat16"):
        p, _ = fam.first(SM90, dtype)
        result = compile_source(fam.render(p, dtype, SM90), SM90)
        assert result.ok, result.summary
        assert len(result.resources) >= 2  # the bench rows of 8192 (and 32768) have their own
        assert all(r.spill_stores == 0 and r.registers <= 64 for r in result.resources.values())


def test_bank_model_counts_the_column_reads_of_an_unpadded_tile():
    unpadded, padded = TransposeParams(32, 8, 1, 0), TransposeParams(32, 8, 1, 1)
    assert bank_passes(unpadded, "float32") == (33, 2)  # 32 lanes read one bank
    assert bank_passes(padded, "float32") == (2, 2)
    assert bank_passes(TransposeParams(32, 16, 4, 1), "float32") == (8, 8)  # the default


def test_register_cap_matches_ptxas():
    # ptxas 13.0 on sm_90, 64 threads: 21 blocks -> 40 registers, 20 blocks -> 48.
    assert memcost.register_cap(SM90, 64, 21) == 40 and memcost.register_cap(SM90, 64, 20) == 48
    assert memcost.min_blocks(SM90, 64, 40) == 20 and memcost.min_blocks(SM90, 64, 36) == 24
    assert memcost.register_cap(SM90, 1024, 1) == 64


# --- the search ---------------------------------------------------------------------------------

@pytest.mark.parametrize("op", MEMORY_OPS)
def test_first_proposal_is_the_family_default_with_its_reason(op):
    fam = family(op)
    first = propose(SM90, "float32", (), fam)
    assert first.params == fam.first(SM90, "float32")[0]
    assert first.reason.startswith(f"first candidate: the default of the {fam.name} template "
                                   f"for {op} in float32 on sm_90")
    assert propose(SM90, "float32", (), fam) == first  # deterministic


def test_reasons_of_the_first_proposals_say_why():
    assert "kept in registers" in propose(SM90, "float32", (), family("softmax")).reason
    assert "read evict-first" in propose(SM90, "float32", (), family("sum")).reason
    assert "2 rows per 512-thread block" in propose(SM90, "float32", (), family("argmax")).reason
    assert "in flight" in propose(SM90, "float32", (), family("gelu")).reason
    assert "conflict-free" in propose(SM90, "float32", (), family("transpose")).reason


def test_without_timings_the_model_ranks_and_says_so():
    fam = family("layernorm")
    first = fam.first(SM90, "float32")[0]
    compiled = Attempt(1, 1, "// source", first.choices,
                       compile=CompileResult("sm_90", b"x", (), {"k": ResourceUsage(40, 0, 0, 0)}))
    found = propose(SM90, "float32", (compiled,), fam)
    assert found.params is not None and found.params != first
    assert "no timings" in found.reason and "bytes-in-flight" in found.reason
    assert "KiB of loads in flight per SM" in found.reason


def test_timings_move_to_a_neighbour_of_the_fastest():
    fam = family("softmax")
    a = fam.first(SM90, "float32")[0]
    b = dataclasses.replace(a, rpb=2, tpr=128)
    found = propose(SM90, "float32", (timed(1, a, 0.20), timed(2, b, 0.15)), fam)
    assert "attempt 2 is the fastest" in found.reason
    assert found.params in fam.neighbours(b, SM90, "float32")


def test_stops_at_the_copy_bandwidth_at_every_bench_size():
    fam = family("gelu")
    p = fam.first(SM90, "float32")[0]
    done = propose(SM90, "float32", (timed(1, p, 0.5, fraction=0.93, sizes=2),), fam)
    assert done.params is None and "93%, 93% of the measured copy bandwidth" in done.reason
    short = propose(SM90, "float32", (timed(1, p, 0.5, fraction=0.85, sizes=2),), fam)
    assert short.params is not None
    # gemm is compute-bound: a high share of the matmul rate never stops it this way
    from kgen.author.families import GEMM
    g = GEMM.first(SM90, "float32")[0]
    assert propose(SM90, "float32", (timed(1, g, 5.0, 0.95, "compute"),)).params is not None


def test_bank_conflicts_in_the_profile_lead_to_a_padded_tile():
    fam = family("transpose")
    p = TransposeParams(32, 16, 4, 0)
    conflicts = Profile(kernel="transpose_tile_f32", bottleneck="latency_stalls",
                        conflict_ratio=0.5, conflicts_ld=2.0e6, conflicts_st=0.0)
    found = propose(SM90, "float32", (timed(1, p, 0.3, profile=conflicts),), fam)
    assert found.params == dataclasses.replace(p, pad=1)
    assert "bank conflicts" in found.reason and "padded shared layout" in found.reason


def test_random_sampling_draws_from_the_family():
    fam = family("rmsnorm")
    picks = [propose_random(SM90, "float16", (), s, fam).params for s in range(3)]
    assert all(isinstance(p, RowParams) and p.op == "rmsnorm" for p in picks)


# --- compiling ----------------------------------------------------------------------------------

@pytest.mark.nvcc
@pytest.mark.parametrize("name", ["elementwise", "rowwise", "transpose", "dimreduce", "scan"])
@pytest.mark.parametrize("arch_name", ["sm_80", "sm_90"])
def test_each_template_file_compiles_on_its_own(name, arch_name):
    result = compile_source(template_path(name).read_text(), parse_arch(arch_name),
                            include_dir=TEMPLATES)
    assert result.ok, result.summary
    assert all(r.spill_stores == 0 for r in result.resources.values())


def configurations(op: str, dtype: str, count: int, seed: int = 0) -> list:
    """The default and a seeded sample of the space."""
    fam = family(op)
    space = [p for t in fam.templates(SM90, dtype) for p in fam.space(SM90, dtype, t)]
    return [fam.first(SM90, dtype)[0], *random.Random(seed).sample(space, count)]


def check_compiles(op: str, dtype: str, p, arch_name: str) -> None:
    fam, spec, arch = family(op), SPECS[op], parse_arch(arch_name)
    source = fam.render(p, dtype, arch)
    contract, problems = parse_contract(source, spec)
    assert contract is not None, problems
    assert contract.op == op and contract.dtype == dtype and fam.parse(contract.choices) == p
    sizes = {"M": 127, "N": min(129, getattr(p, "chunk", 129))}  # rows of the searched kernel
    (launch,) = contract.launches_at(sizes)
    grid, block, smem = launch.dims({**sizes, "SMS": 132})
    threads = block[0] * (block[1] if len(block) > 1 else 1)
    assert threads == p.threads and smem == 0 and all(g >= 1 for g in grid)
    result = compile_source(source, arch)
    assert result.ok, f"{p.choices} {dtype} {arch_name}:\n{result.summary}"
    # our own templates build clean: a warning would go back to the model as if it were its own
    assert not result.diagnostics, f"{p.choices} {dtype} {arch_name}:\n{result.summary}"
    for usage in result.resources.values():  # rowwise: a kernel per class of bench rows
        assert usage.spill_stores == 0 and usage.stack_bytes == 0, f"{p.choices} {dtype}: {usage}"


@pytest.mark.nvcc
@pytest.mark.parametrize("op", MEMORY_OPS)
@pytest.mark.parametrize("arch_name", ["sm_89", "sm_90"])
def test_configurations_render_parse_and_compile_without_spills(op, arch_name):
    for dtype in SPECS[op].dtypes:
        for p in configurations(op, dtype, 1 if dtype != "float32" else 2):
            check_compiles(op, dtype, p, arch_name)


@pytest.mark.slow
@pytest.mark.nvcc
@pytest.mark.parametrize("op", MEMORY_OPS)
def test_a_sample_of_each_space_compiles_without_spills(op):
    for dtype in SPECS[op].dtypes:
        for arch_name in ("sm_89", "sm_90"):
            for p in configurations(op, dtype, 12, seed=7):
                check_compiles(op, dtype, p, arch_name)


@pytest.mark.nvcc
def test_generate_softmax_offline_ends_with_a_compiling_best_cu(tmp_path):
    result = CliRunner().invoke(cli.main, ["generate", "--op", "softmax", "--arch", "sm_90",
                                           "--no-gpu", "--out", str(tmp_path / "run"), "--json"],
                                env={"KGEN_MODEL": ""})
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    best = Path(summary["best"]).read_text()
    contract, problems = parse_contract(best, SPECS["softmax"])
    assert not problems and "template=rowwise op=softmax" in contract.choices
    assert compile_source(best, parse_arch("sm_90")).ok


def test_the_reply_carries_the_reason_and_the_kernel():
    task = Task("generate", SM90, SPECS["transpose"], "bfloat16")
    reply = BuiltinModel().complete(Request((), task, ()))
    assert "Reason: first candidate" in reply.text and "transpose template" in reply.text
    contract, problems = parse_contract(extract_source(reply.text), SPECS["transpose"])
    assert contract is not None and contract.dtype == "bfloat16", problems
