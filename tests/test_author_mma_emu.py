"""The mma.sync gemm kernels compute C = A @ B on the CPU emulator (tests/emulate.py with
tests/emu/mma_sync.h: the block's threads in lockstep, cp.async copies landing only at
cp.async.wait_group, ldmatrix and mma.sync exchanging each warp's registers lane by lane as the PTX
ISA lays out the fragments, sums rounded toward zero as the tensor cores do; AddressSanitizer on
every buffer), against numpy in float64 with the spec's tolerances: the 3xTF32 float32 template
and the float16/bfloat16 mma template, at sizes that are not multiples of any tile and with
misaligned operands (the guarded loads). No GPU: CI checks the templates' fragment layouts, edge
guards and cp.async ring as written, and that the checks fail for kernels broken on purpose."""

from __future__ import annotations

from pathlib import Path

import pytest
from emulate import HAVE_GXX, gemm_excess

from kgen.arch import parse_arch
from kgen.author.space import OLD_MMA_DEFAULT, default, render
from kgen.ops import load_op

SPEC = load_op("gemm")
SM90 = parse_arch("sm_90", check_nvcc=False)
TF32X3 = default(SM90, "float32", "tf32x3")
MMA = default(SM90, "float16")  # 128x256x32, double-buffered fragments
emulator = pytest.mark.skipif(not HAVE_GXX, reason="g++ not on PATH")


def max_error(source: str, dtype: str, m: int, n: int, k: int, work: Path,
              misaligned: bool = False) -> float:
    """The largest error beyond the spec's tolerance (0 where every element is within)."""
    return gemm_excess(source, SPEC, dtype, m, n, k, work, misaligned)


SIZES = [
    (1, 1, 1),        # one element: a tile that is almost all edge, guarded loads
    (7, 3, 5),        # ragged everything, K shorter than one k-step
    (130, 260, 37),   # ragged M, N and K: edge blocks, a partial last k-tile
    (128, 256, 96),   # whole tiles, unguarded cp.async, three k-tiles through the ring
    (257, 136, 72),   # ragged M, N a multiple of 8 only
]


@emulator
@pytest.mark.parametrize("m, n, k", SIZES)
def test_the_3xtf32_kernel_computes_float32_gemm(tmp_path, m, n, k):
    assert max_error(render(TF32X3, "float32"), "float32", m, n, k, tmp_path) == 0.0


@emulator
@pytest.mark.parametrize("m, n, k", SIZES[2:])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_mma_kernel_computes_half_gemm(tmp_path, dtype, m, n, k):
    assert max_error(render(MMA, dtype), dtype, m, n, k, tmp_path) == 0.0


@emulator
def test_the_single_buffered_mma_kernel_computes_gemm(tmp_path):
    """pipe=1 (ldmatrix then mma per k-step), 128x128x64 tiles."""
    assert max_error(render(OLD_MMA_DEFAULT, "float16"), "float16", 130, 260, 136, tmp_path) == 0.0


@emulator
@pytest.mark.parametrize("template", ["tf32x3", "mma"])
def test_misaligned_operands_take_the_guarded_loads(tmp_path, template):
    """Pointers off 16-byte alignment: cp.async must step aside for element-by-element loads."""
    dtype, p = ("float32", TF32X3) if template == "tf32x3" else ("bfloat16", MMA)
    assert max_error(render(p, dtype), dtype, 130, 264, 40, tmp_path, misaligned=True) == 0.0


@emulator
@pytest.mark.parametrize("what, template, before, after", [
    # a stage read one cp.async group too early: the tile has not landed
    ("early read", "tf32x3", "cp_async_wait<STAGES - 2>();  // tile t has landed",
     "cp_async_wait<STAGES - 1>();  // tile t has landed"),
    # each k-slice's partial replacing the accumulator instead of joining it
    ("lost slices", "tf32x3", "acc[i][j][e] += part[i][j][e];", "acc[i][j][e] = part[i][j][e];"),
    # B's fragments loaded without the transpose
    ("untransposed B", "mma", "ldmatrix_x4_trans(r, bs +", "ldmatrix_x4(r, bs +"),
])
def test_kernels_broken_on_purpose_are_caught(tmp_path, what, template, before, after):
    """The checks can fail: each break gives wrong values somewhere at a size with several
    k-tiles."""
    dtype, p = ("float32", TF32X3) if template == "tf32x3" else ("float16", MMA)
    source = render(p, dtype)
    broken = source.replace(before, after)
    assert broken != source, what
    assert max_error(broken, dtype, 128, 256, 96, tmp_path) > 0.1, what
