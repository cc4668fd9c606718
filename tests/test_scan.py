"""The scan template (cumsum: the inclusive prefix sum of each row, kgen.author.scan): the rendered
kernel on the CPU emulator against numpy in float64 (one tile and many, the vector and the
one-element paths, a row of one element), judged by kgen's own checks against the shipped op's
reference (and a kernel that drops the carry between tiles rejected), nvcc in every dtype without a
spill, the space's limit on warp totals, and KernelBench's `torch.cumsum(x, dim=1)` as `same_as:
cumsum`, written by the builtin author under the problem's names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from emulate import HAVE_GXX, judge, run, stored
from helpers import builtin_best_offline

from kgen.arch import parse_arch
from kgen.author import scan
from kgen.author.families import BoundMem, MemFamily, family_for
from kgen.author.scan import ScanParams
from kgen.compile import compile_source
from kgen.loop.candidate import parse_contract
from kgen.ops import load_op
from kgen.ops.kernelbench import load_problem
from kgen.sandbox.rejected import Rejected
from kgen.sandbox.validate import compute_reference, make_inputs

DATA = Path(__file__).parent / "data" / "kernelbench"
SM90 = parse_arch("sm_90", check_nvcc=False)
SPEC = load_op("cumsum")


def _source(p: ScanParams, dtype: str = "float32") -> str:
    return family_for(SPEC).render(p, dtype, SM90)


@pytest.mark.skipif(not HAVE_GXX, reason="g++ not on PATH")
@pytest.mark.parametrize("p, sizes", [
    (ScanParams(64, 4, 2, 0), {"M": 3, "N": 1000}),  # 2 tiles, the last part empty
    (ScanParams(32, 1, 4, 1), {"M": 2, "N": 301}),  # single elements, 3 tiles, evict-first
    (ScanParams(128, 4, 1, 0), {"M": 2, "N": 4}),  # one vector in a tile of 512
    (ScanParams(32, 2, 16, 0), {"M": 1, "N": 1}),
    pytest.param(ScanParams(64, 4, 16, 0), {"M": 2, "N": 4100}, marks=pytest.mark.slow),
])
def test_the_rendered_kernel_is_the_prefix_sum_on_the_emulator(tmp_path, p, sizes):
    """Off-center inputs, so no prefix sum is 0 (the emulator's outputs start at zero)."""
    x = stored(np.random.default_rng(sizes["N"]).standard_normal((sizes["M"], sizes["N"])) + 0.25,
               "float32")
    (got,) = run(_source(p), SPEC, "float32", sizes, {"X": x}, tmp_path).values()
    want = np.cumsum(x, axis=1)
    assert np.allclose(got, want, rtol=1e-6, atol=1e-5), float(np.abs(got - want).max())


@pytest.mark.skipif(not HAVE_GXX, reason="g++ not on PATH")
def test_kgens_checks_pass_the_kernel_and_reject_one_without_the_carry(tmp_path):
    """The shipped spec's own inputs and reference at a size of several tiles; the same kernel
    that forgets the tiles before each one misses."""
    sizes = {"M": 3, "N": 1000}
    source = _source(ScanParams(64, 4, 2, 0))
    forgetful = source.replace("carry += tile_sum;", "")
    assert forgetful != source
    inputs = make_inputs(SPEC, sizes, "float32", seed=4)
    refs = compute_reference(SPEC, "float32", inputs, sizes, on_gpu=False)
    judge(source, SPEC, "float32", sizes, inputs, refs, tmp_path)
    with pytest.raises(Rejected):
        judge(forgetful, SPEC, "float32", sizes, inputs, refs, tmp_path)


@pytest.mark.nvcc
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_the_default_and_the_widest_tile_compile_without_a_spill(dtype):
    family = family_for(SPEC)
    first, _ = family.first(SM90, dtype)
    for p in (first, ScanParams(1024, 16 // (4 if dtype == "float32" else 2), 1, 1)):
        result = compile_source(_source(p, dtype), parse_arch("sm_90"))
        assert result.ok and not result.diagnostics, result.summary
        assert all(u.spill_stores == 0 for u in result.resources.values())


def test_the_default_is_one_tile_a_row_at_the_first_bench_size_and_tiles_fit_one_warp():
    family = family_for(SPEC)
    assert isinstance(family, MemFamily) and family.name == "scan"
    p, why = family.first(SM90, "float32")
    assert (p.tpr, p.vec, p.unroll) == (256, 4, 4) and p.tile == 4096 and "1 tile(s)" in why
    assert scan.problems(ScanParams(512, 4, 4, 0), SM90, "float32")  # 64 warp totals
    space = family.space(SM90, "float32", "scan")
    assert space and all(q.entries <= 32 for q in space)


def test_kernelbench_cumsum_along_the_last_dim_is_same_as_cumsum(tmp_path):
    spec = load_problem(DATA / "l1_cumsum.py")
    assert spec.same_as == "cumsum" and isinstance(family_for(spec), BoundMem)
    along_rows = tmp_path / "along_rows.py"
    along_rows.write_text((DATA / "l1_cumsum.py").read_text().replace("return [1]", "return [0]"))
    assert load_problem(along_rows).same_as == ""


@pytest.mark.slow
def test_the_builtin_author_writes_the_kernelbench_cumsum_under_its_names(tmp_path):
    best = builtin_best_offline(DATA / "l1_cumsum.py", tmp_path / "run")
    assert "template=scan" in best and "vec=1" in best  # rows of 4001 are not whole vectors
    contract, problems = parse_contract(best, load_problem(DATA / "l1_cumsum.py"))
    assert problems == () and contract.op == "l1_cumsum"
    assert contract.launches[0].args == ("x", "out", "batch_size", "length")
