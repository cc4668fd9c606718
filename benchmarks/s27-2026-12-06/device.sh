#!/usr/bin/env bash
# Twenty-seventh session. From the repository root (carry .deb and .whl), results under $OUT.
#   bash benchmarks/s27-2026-12-06/device.sh wide   (about 7 minutes)
#     Does cutting a last, more-than-half-full round over every CTA (streamk.cuh's SK_WIDE 1)
#     pay where A and B fit in L2? The thirteenth session measured it where B's misaligned rows
#     bound the ragged size and found nothing; the eighteenth found it costs L2 reuse at 4096^3
#     (64 MB of operands). bfloat16 at 3072x5120x2048 (aligned, 480 tiles: 3.64 rounds on 132
#     SMs), 3000x5000x2000 and 4096^3, validated at the timed sizes too, twice, alternating:
#       wide0: the default and cluster=1 (no cluster, so stream-K may cut), SK_WIDE 0;
#       wide1: the same, SK_WIDE 1;
#       cwide: sk-cluster.patch (stream-K in launches with clusters of 2, cut per cluster) with
#              SK_WIDE 1, the default only (it launches clusters at 3000x5000x2000).
#   bash benchmarks/s27-2026-12-06/device.sh power   (about 2.5 minutes)
#     s26's unrun power mode: clocks.py for bfloat16, 6 s runs (2 s unsampled), 3 s gaps, AB BA.
#   bash benchmarks/s27-2026-12-06/device.sh first   wide, then power at 4096^3 if time is left.
#   bash benchmarks/s27-2026-12-06/device.sh ccut   (about 3 minutes)
#     sk-cluster.patch alone (SK_WIDE 0): stream-K in launches with clusters of 2, at sizes whose
#     rows of B are not 32-byte aligned (N % 16 != 0, so the default launches clusters) and whose
#     last round has few cluster tiles left over, against the default (which cuts nothing in a
#     cluster launch); 3000x5000x2000 as a control (nothing cut either way). bfloat16, validated
#     at the timed sizes, twice, alternating.
#   bash benchmarks/s27-2026-12-06/device.sh stamps   (about 2 minutes)
#     cutstamps.py: the default's per-unit stamps (clock64 and %globaltimer) with SK_WIDE 0 and 1
#     at 3072x5120x2048 and 3000x5000x2000, raw, into cutstamps.npz: where the cut round's time
#     goes.
#   bash benchmarks/s27-2026-12-06/device.sh bn320   (about 3 minutes)
#     128x320 tiles (an n256 and an n64 wgmma per k16 step, 160 accumulators a consumer thread,
#     3 stages; cuBLAS's tile at 8192^3): 384 tiles at 3000x5000x2000 are 2.91 rounds on 132 SMs,
#     where 128x256 makes 480 (3.64). bn320.patch (BN = 320 in the template and the space's
#     checks; clusters may split an odd number of B chunks) against the default at the bench sizes
#     and 3072x5120x2048, validated at the timed sizes, twice. Ran on an H100 (h100-bn320/) on
#     5e614dd with the patch applied: it lost at every size, so main does not have it.
#   bash benchmarks/s27-2026-12-06/device.sh tests   (up to LIMIT)
#     make test-gpu (8 workers), with the stream-K test's new sizes (cuts over clusters of 2).
#   bash benchmarks/s27-2026-12-06/device.sh simt2   (about 5 minutes)
#     The float32 default's new form, sk=2 (both SIMT kernels in one file, the one-tile grid where
#     its last round is nearly full): its GPU tests, then sk=2 against sk=1 and sk=0 at the bench
#     sizes and 4224x4096x4096, validated at the timed sizes too, twice.
#   bash benchmarks/s27-2026-12-06/device.sh simt2q   (about 2 minutes)
#     sk=2 against sk=1 alone, once, at the bench sizes, validated there (what the device time
#     left allowed).
# simt2 and simt2q did not run: the device time ran out (starts that found no machine).
# Ran: first on an H100 (h100-wide/, LIMIT=560), ccut on an H100 (h100-ccut/, LIMIT=400), both on
# 36771ed with benchmarks/gemm_configs.py's --check-timed added; stamps on an H100 (h100-stamps/,
# LIMIT=300; cutstamps.py's macro text was re-wrapped for line length after it ran, the same
# code). main now has sk-cluster.patch (reworded: SK_SLOTS is 0 where stream-K is off), so ccut
# runs against a checkout before it.
# LIMIT (seconds, default 565) bounds every mode.
set -uo pipefail
what=${1:-first}
LIMIT=${LIMIT:-565}
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm --format=csv,noheader \
  | tee "$OUT/gpu.txt"
sizes=3072x5120x2048,3000x5000x2000,4096x4096x4096
wide_configs() {  # NAME SET...
  local name=$1; shift
  local sets=(); for x in "$@"; do sets+=(--set "$x"); done
  timeout $((LIMIT - SECONDS)) python3 -m benchmarks.gemm_configs --dtype bfloat16 --arch sm_90a \
    --budget 0.5 --sizes $sizes --check-timed "${sets[@]}" --json "/tmp/$name.json" 2>&1 \
    | tee "$OUT/$name.log"
}
wide_on() { sed -i 's/^#define SK_WIDE 0/#define SK_WIDE 1/' kgen/author/templates/streamk.cuh
  grep -q '^#define SK_WIDE 1' kgen/author/templates/streamk.cuh; }
if [ "$what" = wide ] || [ "$what" = first ]; then
  for rep in 1 2; do
    wide_configs "wide0-$rep" "" "cluster=1"
    wide_on || exit 1
    wide_configs "wide1-$rep" "" "cluster=1"
    git apply benchmarks/s27-2026-12-06/sk-cluster.patch || exit 1
    wide_configs "cwide-$rep" ""
    git apply -R benchmarks/s27-2026-12-06/sk-cluster.patch || exit 1
    sed -i 's/^#define SK_WIDE 1/#define SK_WIDE 0/' kgen/author/templates/streamk.cuh
  done
fi
if [ "$what" = ccut ]; then
  sizes=2432x1800x4096,2688x2040x8192,4224x4344x2048,3000x5000x2000
  for rep in 1 2; do
    wide_configs "ccut0-$rep" ""
    git apply benchmarks/s27-2026-12-06/sk-cluster.patch || exit 1
    wide_configs "ccut1-$rep" ""
    git apply -R benchmarks/s27-2026-12-06/sk-cluster.patch || exit 1
  done
fi
if [ "$what" = stamps ]; then
  timeout $((LIMIT - SECONDS)) python3 benchmarks/s27-2026-12-06/cutstamps.py 2>&1 \
    | tee "$OUT/cutstamps.log"
fi
if [ "$what" = bn320 ]; then
  sizes=3000x5000x2000,3072x5120x2048,4096x4096x4096,8192x8192x8192
  git apply benchmarks/s27-2026-12-06/bn320.patch || exit 1
  for rep in 1 2; do wide_configs "bn320-$rep" "" "bn=320 stages=3"; done
  git apply -R benchmarks/s27-2026-12-06/bn320.patch
fi
if [ "$what" = tests ]; then
  timeout $((LIMIT - SECONDS)) python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 2>&1 \
    | tee "$OUT/test-gpu.log" | tail -15
fi
if [ "$what" = simt2 ]; then
  timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 \
    -k "simt_default_is_correct or simt_stream_k_is_correct" tests/test_author.py 2>&1 \
    | tee "$OUT/simt2-tests.log" | tail -3
  for rep in 1 2; do
    timeout $((LIMIT - SECONDS)) python3 -m benchmarks.gemm_configs --dtype float32 --arch sm_90 \
      --budget 0.4 --sizes 4096x4096x4096,8192x8192x8192,3000x5000x2000,4224x4096x4096 \
      --check-timed --set "" --set "sk=1" --set "sk=0" 2>&1 | tee "$OUT/simt2-$rep.log"
  done
fi
if [ "$what" = simt2q ]; then
  timeout $((LIMIT - SECONDS)) python3 -m benchmarks.gemm_configs --dtype float32 --arch sm_90 \
    --budget 0.3 --check-timed --set "" --set "sk=1" 2>&1 | tee "$OUT/simt2q.log"
fi
power() {  # SIZES: MxNxK,... (empty: the bench sizes)
  timeout $((LIMIT - SECONDS)) python3 benchmarks/s26-2026-12-06/clocks.py clocks \
    --dtypes bfloat16 --seconds 6 --settle 2 --gap 3 --sizes "${1:-}" 2>&1 | tee "$OUT/power.log"
}
if [ "$what" = power ]; then power; fi
if [ "$what" = first ]; then
  if [ $((LIMIT - SECONDS)) -gt 60 ]; then power 4096x4096x4096
  else echo "power: only $((LIMIT - SECONDS)) s left, not run"; fi
fi
