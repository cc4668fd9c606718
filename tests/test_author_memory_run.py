"""The builtin memory-bound kernels compute their ops: on the CPU emulator (tests/emulate.py: the
rendered .cu under g++ with every CUDA thread a coroutine, barriers and shuffles in lockstep,
AddressSanitizer on every buffer) against numpy at the spec's test sizes (rows capped, so it
runs in seconds), with the worker's tolerances; and on a GPU through kgen's real evaluation."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from emulate import HAVE_GXX, run, stored
from helpers import gpu_workers
from memref import draw, problems, reference

from kgen.arch import parse_arch
from kgen.author.families import WRITTEN_OPS, family_for
from kgen.author.rowwise import RowParams
from kgen.author.scan import ScanParams
from kgen.author.transpose import TransposeParams
from kgen.ops import available_ops, load_op

SM90 = parse_arch("sm_90", check_nvcc=False)
MEMORY_OPS = [op for op in WRITTEN_OPS if op != "gemm"]
SPECS = {op: load_op(op) for op in available_ops()}
TIES = load_op(path=Path(__file__).parent / "data" / "specs" / "argmax_ties" / "spec.yaml")
# Rows kept per test size on the emulator (it runs every thread of every block in turn): enough
# for several blocks and a last block with rows past M.
CAP = {"elementwise": 64, "rowwise": 9, "transpose": 70, "scan": 5}
EPS = {"float32": 2.0 ** -23, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}
emulator = pytest.mark.skipif(not HAVE_GXX, reason="g++ not on PATH")


def emulate(spec, dtype: str, p, work: Path, misaligned: bool = False,
            mutate: tuple[str, str] | None = None) -> list[str]:
    """What is off at each test size (empty strings where the kernel passes)."""
    fam = family_for(spec)
    assert fam is not None
    source = fam.render(p, dtype, SM90)
    if mutate:
        assert mutate[0] in source
        source = source.replace(*mutate)
    tol, rng, found = spec.dtypes[dtype], np.random.default_rng(3), []
    for entry in spec.test_sizes:
        rows = CAP[fam.name] if p.threads <= 256 or fam.name != "rowwise" else 3
        sizes = {**entry, "M": min(entry["M"], rows)}
        x = draw(spec, sizes, rng)
        seen = {k: stored(v, dtype) for k, v in x.items()}
        (out,) = run(source, spec, dtype, sizes, x, work, misaligned).values()
        ref = reference(spec.name, seen, float(spec.params_at(sizes).get("eps", 0.0)))
        what = problems(out, ref, tol.atol, tol.rtol)
        if not what and "row_sums" in spec.checks:  # as the worker: 2 eps, within atol + rtol
            sums = out.sum(axis=-1)
            if np.abs(sums - 1).max() > min(tol.atol + tol.rtol, max(2 * EPS[dtype], 1e-4)):
                what = f"rows sum to {sums.min():.6f}..{sums.max():.6f}"
        found.append(f"{sizes}: {what}" if what else "")
    return found


@emulator
@pytest.mark.parametrize("op", MEMORY_OPS)
@pytest.mark.parametrize("dtype", ["float32", "float16",
                                   pytest.param("bfloat16", marks=pytest.mark.slow)])
def test_defaults_compute_the_op_on_the_emulator(op, dtype, tmp_path):
    spec = SPECS[op]
    p, _ = family_for(spec).first(SM90, dtype)
    assert not any(emulate(spec, dtype, p, tmp_path))


VARIANTS = [
    ("softmax", RowParams("softmax", 64, 2, 4, 1, 1), True),  # streamed rows, online statistics
    ("softmax", RowParams("softmax", 32, 4, 2, 2, 0), False),  # streamed, two passes, a warp
    ("layernorm", RowParams("layernorm", 128, 2, 4, 1, 1), True),  # Welford
    ("layernorm", RowParams("layernorm", 1024, 1, 2, 1, 0), False),  # two passes, 32 warps
    ("rmsnorm", RowParams("rmsnorm", 32, 8, 1, 4, 0), False),
    ("sum", RowParams("sum", 512, 2, 4, 2, 0, 1), False),  # evict-first loads
    ("max", RowParams("max", 64, 4, 2, 8, 0), True),
    ("argmax", RowParams("argmax", 256, 1, 4, 1, 0), False),
    ("transpose", TransposeParams(64, 8, 2, 0), True),
    ("cumsum", ScanParams(64, 4, 2, 1), True),  # several tiles a row, evict-first
]


@emulator
@pytest.mark.parametrize("item", VARIANTS, ids=lambda i: i[1].choices.split(" ", 1)[1]
                         + (" misaligned" if i[2] else ""))
def test_other_paths_compute_the_op_on_the_emulator(item, tmp_path):
    """Streamed rows (online and two-pass statistics), block and warp reductions, and, with the
    data one element off alignment (`misaligned`), the scalar paths at every size."""
    op, p, misaligned = item
    assert not any(emulate(SPECS[op], "float32", p, tmp_path, misaligned))


@emulator
@pytest.mark.parametrize("p", [RowParams("argmax", 32, 8, 4, 4, 0),
                               RowParams("argmax", 256, 1, 8, 1, 0),
                               RowParams("argmax", 256, 2, 8, 4, 0, 1)],
                         ids=["warp", "block", "default"])
def test_argmax_takes_the_first_of_tied_maxima(p, tmp_path):
    """Integer-valued inputs tie often, across lanes, warps and chunks; a last-index rule or a
    lane-order merge fails, which shows these checks can fail."""
    assert not any(emulate(TIES, "float16", p, tmp_path))
    wrong = emulate(TIES, "float16", p, tmp_path, mutate=("o.v == v && o.i < i",
                                                          "o.v == v && o.i > i"))
    assert sum(bool(w) for w in wrong) >= 5


@pytest.mark.slow
@emulator
@pytest.mark.parametrize("op", MEMORY_OPS)
def test_a_sample_of_each_space_computes_the_op_on_the_emulator(op, tmp_path):
    fam = family_for(SPECS[op])
    for dtype in ("float32", "bfloat16"):
        space = fam.space(SM90, dtype, fam.name)
        for i, p in enumerate(random.Random(11).sample(space, 6)):
            found = emulate(SPECS[op], dtype, p, tmp_path, misaligned=i % 3 == 1)
            assert not any(found), (p.choices, dtype, [f for f in found if f])


# --- on the GPU ---------------------------------------------------------------------------------

def _evaluate(op: str, dtype: str, options):
    from kgen.arch import local_gpu
    from kgen.compile import compile_source
    from kgen.gpu.evaluate import evaluate
    from kgen.loop.candidate import parse_contract

    found = local_gpu()
    assert found is not None
    target, spec = found[1], SPECS[op]
    fam = family_for(spec)
    p, _ = fam.first(target, dtype)
    source = fam.render(p, dtype, target)
    contract, issues = parse_contract(source, spec)
    compiled = compile_source(source, target)
    assert contract is not None and compiled.ok, (issues, compiled.summary)
    result = evaluate(compiled, contract, spec, target, options=options, workers=gpu_workers())
    assert result is not None
    print(f"{op} {dtype} {p.choices}: {result.verdict} {result.message}\n{result.describe()}")
    return result


@pytest.mark.gpu
@pytest.mark.parametrize("op", MEMORY_OPS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_family_default_passes_every_test_size_on_the_gpu(op, dtype):
    from kgen.gpu.evaluate import EvalOptions

    options = EvalOptions(bench_sizes=(), input_sets=2, kernel_timeout_s=20.0, profile=False)
    result = _evaluate(op, dtype, options)
    assert result.verdict == "pass", result.message


@pytest.mark.gpu
@pytest.mark.parametrize("op", MEMORY_OPS)
def test_family_default_is_timed_near_the_copy_bandwidth(op):
    """float32 at every bench size (what `make bench`'s ops table shows; rowwise files carry a
    kernel for each longer class of bench rows): the share of the measured copy bandwidth and
    the ratio to torch eager are printed; half the copy bandwidth is the floor below which a
    default is a defect, not a tuning matter."""
    from kgen.gpu.evaluate import EvalOptions

    spec = SPECS[op]
    options = EvalOptions(bench_budget_s=0.3, input_sets=1, kernel_timeout_s=20.0,
                          profile=False)
    result = _evaluate(op, "float32", options)
    assert result.verdict == "pass", result.message
    assert len(result.timings) == len(spec.bench_sizes)
    for timing in result.timings:
        print(f"{op} {timing.size_label}: {timing.roofline_fraction:.0%} of the copy "
              f"bandwidth, {timing.speedup or 0:.2f}x of torch eager")
        assert timing.bound == "memory" and (timing.roofline_fraction or 0) >= 0.5
