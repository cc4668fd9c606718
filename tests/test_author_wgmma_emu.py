"""The Hopper wgmma gemm kernels compute C = A @ B on the CPU emulator (tests/emulate.py with
tests/emu/hopper.h: every thread of the grid a coroutine, mbarriers with phases and transaction
bytes, TMA with the 128-byte swizzle and zero fill, wgmma from decoded shared-memory descriptors,
run as late as wgmma.wait_group allows; AddressSanitizer on every buffer; 3 SMs), against numpy
in float64 with the spec's tolerances. No GPU: CI checks the template's descriptors and swizzle,
its mbarrier ring, stream-K hand-offs, cluster multicast and both epilogues at sizes that are
not multiples of any tile, and that the checks fail for kernels broken on purpose."""

from __future__ import annotations

from pathlib import Path

import pytest
from emulate import EMULATED_SMS, HAVE_GXX, gemm_excess

from kgen.arch import parse_arch
from kgen.author.space import default, problems
from kgen.author.wgmma import WgmmaParams, render
from kgen.ops import load_op

SPEC = load_op("gemm")
SM90A = parse_arch("sm_90a", check_nvcc=False)
DEFAULT = default(SM90A, "bfloat16")
emulator = pytest.mark.skipif(not HAVE_GXX, reason="g++ not on PATH")


def max_error(source: str, dtype: str, m: int, n: int, k: int, work: Path,
              misaligned: bool = False, sms: int = EMULATED_SMS) -> float:
    """The largest error beyond the spec's tolerance (0 where every element is within)."""
    return gemm_excess(source, SPEC, dtype, m, n, k, work, misaligned, sms)


# Sizes for 128x256 tiles on 3 emulated SMs (TMA needs K % 8 == 0 and N % 8 == 0; otherwise the
# kernel's guarded loads fill the same swizzled layout).
SIZES = [
    (1, 1, 1),        # one element: guarded loads, a tile that is almost all edge
    (130, 260, 37),   # guarded loads, ragged M, N and K
    (192, 320, 200),  # TMA; 4 tiles on 3 CTAs: stream-K cuts the one left over
    (257, 520, 136),  # TMA, ragged M and N, a partial last k-block; 9 tiles, three whole rounds
]


def test_the_default_is_what_these_tests_run():
    assert DEFAULT == WgmmaParams(stages=4, epi=1, sk=1, cluster=0, cpass=2)
    assert EMULATED_SMS == 3


@emulator
@pytest.mark.parametrize("m, n, k", SIZES)
def test_the_default_kernel_computes_gemm(tmp_path, m, n, k):
    assert max_error(render(DEFAULT, "bfloat16"), "bfloat16", m, n, k, tmp_path) == 0.0


# 200x520x136 on 4 SMs: B's rows misaligned (N % 16 != 0), so the default launches 2 clusters of
# 2; 3 cluster tiles of 256x256 (the second CTA's rows partly past M), the one left over cut along
# K over both clusters (3 k-blocks: 2 for the owner, 1 for the contributor).
CLUSTER_CUT = (200, 520, 136)


@emulator
def test_the_default_cuts_a_tile_over_clusters(tmp_path):
    assert max_error(render(DEFAULT, "bfloat16"), "bfloat16", *CLUSTER_CUT, tmp_path, sms=4) == 0.0


@emulator
def test_float16_and_misaligned_operands(tmp_path):
    """Operands one element off 16-byte alignment: zero tensor maps, the guarded loads and the
    register epilogue's scalar stores."""
    source = render(DEFAULT, "float16")
    assert max_error(source, "float16", 257, 520, 136, tmp_path) == 0.0
    assert max_error(source, "float16", 130, 264, 64, tmp_path, misaligned=True) == 0.0


@emulator
@pytest.mark.parametrize("params", [
    WgmmaParams(sk=1),                                  # register epilogue, 4 stages
    WgmmaParams(stages=3, epi=1, cluster=2),            # clusters of 2 multicasting B
    WgmmaParams(stages=3, epi=1, sk=1),                 # never a cluster
    WgmmaParams(bn=128, stages=5, epi=1, sk=1),         # m64n128 wgmmas
    WgmmaParams(bm=64, consumers=1, stages=4, epi=1, sk=1),  # one consumer warpgroup
    WgmmaParams(bn=192, stages=4, epi=1, sk=1, cpass=2),  # C in two passes of 128 and 64 columns
], ids=["register-epilogue", "cluster-2", "no-cluster", "bn-128", "one-consumer", "bn-192-cpass-2"])
@pytest.mark.parametrize("m, n, k", SIZES[1:])
def test_other_configurations_compute_gemm(tmp_path, params, m, n, k):
    assert not problems(params, SM90A, "bfloat16")
    assert max_error(render(params, "bfloat16"), "bfloat16", m, n, k, tmp_path) == 0.0


PING_PONG = WgmmaParams(bn=128, stages=5, epi=1, sk=1, pp=1)


@emulator
@pytest.mark.parametrize("params", [
    PING_PONG,
    WgmmaParams(bm=64, stages=4, epi=1, sk=1, pp=1),       # 64x256 tiles
    WgmmaParams(bn=128, stages=4, sk=1, pp=1),             # register epilogue
    WgmmaParams(bn=128, stages=4, epi=1, cluster=2, pp=1),  # clusters of 2
], ids=["128x128", "64x256", "register-epilogue", "cluster-2"])
@pytest.mark.parametrize("m, n, k", [
    *SIZES[1:],
    (250, 250, 520),   # 4 tiles of 128x128 on 3 CTAs: stream-K cuts the one left over
    (640, 384, 512),   # 15 tiles: each consumer a whole unit ahead of the other's stages
])
def test_ping_pong_consumers_compute_gemm(tmp_path, params, m, n, k):
    """Consumers taking turns with whole tiles, each stepping its ring position over the
    other's stages."""
    assert not problems(params, SM90A, "bfloat16")
    assert max_error(render(params, "bfloat16"), "bfloat16", m, n, k, tmp_path) == 0.0


# The checks can fail: each kernel below is broken on purpose.

def _broken(old: str, new: str, params: WgmmaParams = DEFAULT) -> str:
    source = render(params, "bfloat16")
    assert source.count(old) == 1
    return source.replace(old, new)


@emulator
def test_a_b_descriptor_with_its_strides_swapped_is_caught(tmp_path):
    source = "#define KGEN_DIAG_SWAP_B 1\n" + render(DEFAULT, "bfloat16")
    assert max_error(source, "bfloat16", 192, 320, 200, tmp_path) > 1.0


@emulator
def test_a_stage_released_before_its_wgmmas_are_waited_for_is_caught(tmp_path):
    """Handing a stage back before wgmma.wait_group: the producer refills it while the wgmmas
    that read it are still pending."""
    source = _broken("          wgmma_wait<1>();\n          if (lt == 0) {",
                     "          if (lt == 0) {")
    source = source.replace("        prev = s;\n", "        wgmma_wait<1>();\n        prev = s;\n")
    assert max_error(source, "bfloat16", 192, 320, 512, tmp_path) > 1.0


@emulator
@pytest.mark.parametrize("old, new", [
    ("if (lt == 0) bulk_wait_read0();", "if (lt == 0 && pass == 0) bulk_wait_read0();"),
    ("    fence_proxy_async();  // the generic-proxy smem writes -> visible to the TMA engine\n"
     "    named_bar_sync(bar_id, 128);\n",
     "    fence_proxy_async();  // the generic-proxy smem writes -> visible to the TMA engine\n"),
], ids=["second-pass-unwaited", "stored-before-all-written"])
def test_a_staging_area_written_while_its_store_is_in_flight_is_caught(tmp_path, old, new):
    """A TMA store may read its staging area any time between its issue and its wait: the
    emulator reads it at both ends. A second half-tile pass written before the first pass's store
    was waited for, or a store issued before the other threads have written their rows, changes
    the area while the store is in flight."""
    with pytest.raises(AssertionError, match="written between its issue and its wait"):
        max_error(_broken(old, new), "bfloat16", 192, 320, 200, tmp_path)


@emulator
def test_a_stream_k_owner_that_skips_its_contributors_is_caught(tmp_path):
    source = _broken("        for (int from = cid + 1; from < last; ++from)\n"
                     "          sk_absorb(acc, from * cm + static_cast<int>(rank), PP ? 0 : wg, wg,"
                     " lt);", "")
    assert max_error(source, "bfloat16", 192, 320, 200, tmp_path) > 1.0


@emulator
def test_cluster_peers_sharing_a_stream_k_slot_are_caught(tmp_path):
    """Slots named by the cluster rather than the CTA: both CTAs of the contributing cluster
    publish their rows' partial sums to one slot and raise one flag, and the owner cluster's
    first CTA to take the flag lowers it for the other, which waits for ever."""
    source = _broken("sk_publish(acc, cid * cm + static_cast<int>(rank),", "sk_publish(acc, cid,")
    source = source.replace("sk_absorb(acc, from * cm + static_cast<int>(rank),",
                            "sk_absorb(acc, from,")
    with pytest.raises(AssertionError, match="deadlock"):
        max_error(source, "bfloat16", *CLUSTER_CUT, tmp_path, sms=4)


@emulator
def test_a_producer_waiting_on_the_wrong_phase_is_a_deadlock(tmp_path):
    source = _broken("mbar_wait(empty(s), ph ^ 1);  // remote consumers arrive on it too\n"
                     "            mbar_arrive_expect_tx",
                     "mbar_wait(empty(s), ph);\n            mbar_arrive_expect_tx")
    with pytest.raises(AssertionError, match="deadlock"):
        max_error(source, "bfloat16", 192, 320, 200, tmp_path)


@emulator
def test_ping_pong_main_loops_that_do_not_take_turns_are_caught(tmp_path):
    """Without the order barriers a consumer runs a whole unit ahead and takes a stage's stale
    mbarrier phase (same parity, two phases back) for the one it needs: the first version of
    the ping-pong kernel, as the emulator found it."""
    source = _broken("if (waits >= 0) mbar_wait(order(wg), waits & 1);", "(void)waits;",
                     PING_PONG)
    assert max_error(source, "bfloat16", 640, 384, 512, tmp_path) > 1.0


@emulator
def test_a_cluster_launch_multicasting_to_one_cta_only_is_caught(tmp_path):
    """cluster=0 at N % 16 != 0 launches clusters of 2: a multicast that skips the peer leaves
    its B stages unfilled (a deadlock); at N % 16 == 0 the same file launches no cluster and
    still computes gemm, so the cluster launch is what the first size ran."""
    source = _broken("static_cast<uint16_t>((1u << cm) - 1u)", "static_cast<uint16_t>(1u)",
                     WgmmaParams(stages=3, epi=1, cluster=0, sk=1))
    assert max_error(source, "bfloat16", 192, 320, 200, tmp_path) == 0.0
    with pytest.raises(AssertionError, match="deadlock"):
        max_error(source, "bfloat16", 257, 520, 136, tmp_path)
