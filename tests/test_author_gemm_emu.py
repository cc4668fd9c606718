"""The SIMT gemm kernels compute C = A @ B on the CPU emulator (tests/emulate.py: the rendered .cu
under g++, every CUDA thread a coroutine, AddressSanitizer on every buffer, 3 SMs), against
numpy in float64 with the spec's float32 tolerances: the one-tile kernel at odd and aligned
sizes (guarded scalar loads and the float4 paths), and the persistent stream-K kernel (sk=1) at
sizes where it deals tiles whole, cuts them, and hands partial tiles between CTAs, and the files
with both: sk=2, each launched where its line says, and the default, sk=3, both launched in
turn, the one-tile grid's tiles and then the persistent kernel's. No GPU: CI checks the
template's index math, edge guards and stream-K protocol as written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from emulate import EMULATED_SMS, HAVE_GXX, run

from kgen.author.simt import SimtParams, render
from kgen.ops import load_op

SPEC = load_op("gemm")
ONE_TILE = SimtParams(128, 256, 16, 8, 16, 2, 4)  # the stream-K default's one-tile twin
emulator = pytest.mark.skipif(not HAVE_GXX, reason="g++ not on PATH")


def max_error(source: str, m: int, n: int, k: int, work: Path, misaligned: bool = False) -> float:
    """The largest error beyond the spec's float32 tolerance (0 where every element is within)."""
    rng = np.random.default_rng(m * 7 + n * 3 + k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    (c,) = run(source, SPEC, "float32", {"M": m, "N": n, "K": k}, {"A": a, "B": b}, work,
               misaligned).values()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    tol = SPEC.dtypes["float32"]
    excess = np.abs(c - ref) - (tol.atol + tol.rtol * np.abs(ref))
    return float(np.nan_to_num(excess, nan=np.inf).max(initial=0.0).clip(min=0.0))


@emulator
@pytest.mark.parametrize("m, n, k", [(7, 3, 5), (130, 260, 37), (128, 256, 32), (257, 300, 64)])
def test_the_one_tile_kernel_computes_gemm(tmp_path, m, n, k):
    assert max_error(render(ONE_TILE, "float32"), m, n, k, tmp_path) == 0.0


@emulator
def test_the_one_tile_kernel_with_misaligned_operands(tmp_path):
    """Pointers off 16-byte alignment: the float4 paths must step aside for the guarded loads."""
    assert max_error(render(ONE_TILE, "float32"), 130, 260, 36, tmp_path, misaligned=True) == 0.0


@emulator
@pytest.mark.parametrize("m, n, k", [
    (256, 512, 48),    # 4 tiles on 3 CTAs: all cut (one left over + one round), 3 k-tiles each
    (250, 500, 45),    # the same, odd sizes: guarded loads, ragged edges, a partial k-tile
    (640, 256, 160),   # 5 tiles, all cut: each CTA's range longer than a tile
    (896, 256, 64),    # 7 tiles: a round whole, then 4 cut
    (300, 700, 20),    # 9 tiles: three whole rounds, nothing cut
    (100, 200, 300),   # 1 tile, fewer than the CTAs: one CTA, whole
])
def test_the_stream_k_kernel_computes_gemm(tmp_path, m, n, k):
    source = render(SimtParams(128, 256, 16, 8, 16, 2, 4, sk=1), "float32")
    assert max_error(source, m, n, k, tmp_path) == 0.0


@emulator
@pytest.mark.parametrize("m, n, k, kernel", [
    (100, 700, 40, "gemm_simt_f32"),      # 3 tiles on 3 SMs: a whole round, the one-tile grid
    (256, 512, 48, "gemm_simt_f32_sk"),   # 4 tiles: 2 of 6 slots would idle, stream-K cuts
])
def test_the_default_runs_either_kernel_by_size(tmp_path, m, n, k, kernel):
    """sk=2: both kernels in one file, the launch line chosen by how full the one-tile grid's
    last round would be."""
    from kgen.contract import SMS
    from kgen.loop.candidate import parse_contract

    source = render(SimtParams(128, 256, 16, 8, 16, 2, 4, sk=2), "float32")
    contract, _ = parse_contract(source, SPEC)
    assert contract is not None
    (launch,) = contract.launches_at({"M": m, "N": n, "K": k, SMS: EMULATED_SMS})
    assert launch.kernel == kernel
    assert max_error(source, m, n, k, tmp_path) == 0.0


@emulator
def test_a_stream_k_owner_that_skips_a_contributor_is_caught(tmp_path):
    """The check can fail: an owner that adds none of its contributors' partial tiles leaves
    their k-blocks out of C."""
    source = render(SimtParams(128, 256, 16, 8, 16, 2, 4, sk=1), "float32")
    broken = source.replace("from1 = work->contributors_end(unit[0], blockIdx.x);",
                            "from1 = from0;")
    assert broken != source
    assert EMULATED_SMS == 3
    assert max_error(broken, 256, 512, 48, tmp_path) > 1.0


TWO_LAUNCHES = SimtParams(128, 256, 16, 8, 16, 2, 4, sk=3)


@emulator
@pytest.mark.parametrize("m, n, k, kernels", [
    (640, 256, 64, 2),     # 5 tiles on 3 SMs: a round one tile per CTA, then 2 cut over all 3
    (600, 250, 45, 2),     # the same, odd sizes: guarded loads, ragged edges, a partial k-tile
    (896, 256, 64, 2),     # 7: 1 left over, so the round before it is cut with it: 3 + 4
    (256, 512, 48, 1),     # 4: 1 left over, fewer than 2 rounds: all 4 spread, persistent alone
    (384, 512, 64, 1),     # 6: two whole rounds, the one-tile grid alone
    (100, 200, 300, 1),    # 1 tile, fewer than the SMs: the persistent launch alone, whole
    (1, 1, 1, 1),
])
def test_the_two_launch_form_computes_gemm(tmp_path, m, n, k, kernels):
    """sk=3: the one-tile grid runs the tiles before the last ones (its CTAs past them exit at
    once), then the persistent kernel cuts those along K over every SM (streamk.cuh's
    SK_SPREAD 2); both take SMS."""
    from kgen.contract import SMS
    from kgen.loop.candidate import parse_contract

    source = render(TWO_LAUNCHES, "float32")
    contract, _ = parse_contract(source, SPEC)
    assert contract is not None
    assert len(contract.launches_at({"M": m, "N": n, "K": k, SMS: EMULATED_SMS})) == kernels
    assert max_error(source, m, n, k, tmp_path) == 0.0


@emulator
@pytest.mark.parametrize("tiles, kernels", [
    (39, 1),   # 19 left over on 20 SMs: the last round nearly full, the one-tile grid alone
    (51, 2),   # 11 left over (over half a round): 40 one tile per CTA, then 11 cut over all 20
    (30, 1),   # 10 left over, fewer than 2 rounds: all 30 spread, the persistent launch alone
])
def test_the_two_launch_form_on_20_sms(tmp_path, tiles, kernels):
    """The rule's other branches, on 20 emulated SMs: a nearly full last round is not cut."""
    from emulate import gemm_excess

    from kgen.contract import SMS
    from kgen.loop.candidate import parse_contract

    source = render(TWO_LAUNCHES, "float32")
    contract, _ = parse_contract(source, SPEC)
    assert contract is not None
    m, n, k = 128 * tiles - 5, 250, 24
    assert len(contract.launches_at({"M": m, "N": n, "K": k, SMS: 20})) == kernels
    assert gemm_excess(source, SPEC, "float32", m, n, k, tmp_path, sms=20) == 0.0


@emulator
@pytest.mark.parametrize("kept", ["gemm_simt_f32 ", "gemm_simt_f32_sk "])
@pytest.mark.parametrize("m", [640, 896])
def test_each_launch_of_the_two_launch_form_writes_only_its_tiles(tmp_path, kept, m):
    """With one launch line removed, C holds the kept launch's tiles and zeros elsewhere. On 3
    SMs the one-tile grid takes the first 3 tile rows either way: of 5, the 2 left over are cut;
    of 7, the 1 left over is cut with the round before it. So the one-tile grid stops where the
    persistent launch starts."""
    from emulate import run

    source = render(TWO_LAUNCHES, "float32")
    lines = source.splitlines(keepends=True)
    launches = [ln for ln in lines if ln.startswith("// kgen: launch ")]
    assert len(launches) == 2
    (line,) = [ln for ln in launches if ln.startswith(f"// kgen: launch {kept}")]
    source = "".join(ln.split(" when=")[0] + "\n" if ln == line else ln  # runs at every size
                     for ln in lines if ln not in launches or ln == line)
    n, k = 256, 64
    rng = np.random.default_rng(m)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    (c,) = run(source, SPEC, "float32", {"M": m, "N": n, "K": k}, {"A": a, "B": b},
               tmp_path).values()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    mine, other = (slice(0, 384), slice(384, m)) if kept == "gemm_simt_f32 " else \
        (slice(384, m), slice(0, 384))
    assert np.allclose(c[mine], ref[mine], rtol=1e-4, atol=1e-4)
    assert not c[other].any()
