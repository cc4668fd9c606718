#!/usr/bin/env bash
# Twenty-fourth session. From the repository root (carry .deb and .whl), results under $OUT.
# All eight modes ran, in this order: on H100s stages and variants (h100-stages/), bench and
# tests (h100-bench/), quarters (h100-quarters/), warps (h100-warps/); then an H200 came for l2pf
# and h200 (h200-l2pf/). cpass=4 tied cpass=2, wstore=1 and l2pf lost; all three were taken out
# again: `quarters`, `warps` and `l2pf` apply wgmma-cpass4.patch, wgmma-wstore.patch and
# wgmma-l2pf.patch first (the first two against commit d77c1a6's kgen/ and tests/, the third
# against 524fa04's). l2pf's first call, with 48 producer registers, hung (l2pf-bf16-regs48-hang.log)
# and its phases run took the rest of the call; the phases were not run again.
#   bash benchmarks/s24-2026-12-06/device.sh stages   (about 1.5 minutes)
#     a fourth stage for the wgmma default: the C tile staged half at a time (cpass=2) frees the
#     32 KB that 4 stages of 128x256x64 need. The 3-stage default against stages=4 cpass=2 and
#     against cpass=2 alone (3 stages: what the second pass costs), alternating, twice, at the
#     bench sizes and two aligned ones (bfloat16, cuBLAS interleaved; each validated at every
#     test size first), then the phases of stages=4 cpass=2 and of the 3-stage default on the
#     same card (s22's wgmma_phases.py).
#   bash benchmarks/s24-2026-12-06/device.sh variants   (about 1.5 minutes)
#     the 4-stage kernel with clusters of 1, clusters of 2 and group 16 (bfloat16), then the
#     3-stage default against it in float16.
#   bash benchmarks/s24-2026-12-06/device.sh bench   (about 4 minutes)
#     make bench's bfloat16 and float16 gemm rows.
#   bash benchmarks/s24-2026-12-06/device.sh quarters   (about 1.5 minutes)
#     the C tile a quarter at a time through two buffers used in turn (cpass=4: a pass waits only
#     for the store two passes back) against the halves (cpass=2), both with 4 stages, twice,
#     alternating (bfloat16), then cpass=4's phases.
#   bash benchmarks/s24-2026-12-06/device.sh warps   (about 1.5 minutes)
#     each warp TMA-stores its own 16 rows (a 64x16 box) after a warp barrier (wstore=1) against
#     one thread storing the warpgroup's 64 rows after two warpgroup barriers, twice,
#     alternating (bfloat16), then wstore=1's phases.
#   bash benchmarks/s24-2026-12-06/device.sh l2pf   (about 2 minutes)
#     the next unit's first 2 or 4 k-blocks prefetched into L2 (cp.async.bulk.prefetch.tensor)
#     8 k-blocks before the producer ends the current unit (l2pf=2, 4) against none, twice,
#     alternating (bfloat16).
#   bash benchmarks/s24-2026-12-06/device.sh h200   (about 40 s)
#     the 3-stage kernel against the 4-stage default, twice, alternating (bfloat16): the H100's
#     comparison on the H200.
#   bash benchmarks/s24-2026-12-06/device.sh tests   (about 5 minutes)
#     the whole GPU suite, 8 workers.
# The commands ran with the 4-stage kernel as `--set "stages=4 cpass=2"` while the default was
# still 3 stages (stages, variants); since then it is the default, so "" and "$four" name the same
# kernel and the 3-stage one is "stages=3 cpass=1".
# LIMIT (seconds, default 565) bounds every mode where device time is short.
set -uo pipefail
what=${1:-stages}
LIMIT=${LIMIT:-565}
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm --format=csv,noheader \
  | tee "$OUT/gpu.txt"
sizes=3072x5120x2048,4096x4096x2048,3000x5000x2000,4096x4096x4096,8192x8192x8192
three="stages=3 cpass=1"
four="stages=4 cpass=2"
# configs NAME DTYPE SECONDS SIZES SET...: benchmarks.gemm_configs with each SET as a --set, in
# the order given, into $OUT/NAME.json and NAME.log.
configs() {
  local name=$1 dtype=$2 secs=$3 at=$4 sets=() set
  shift 4
  for set in "$@"; do sets+=(--set "$set"); done
  timeout "$secs" python3 -m benchmarks.gemm_configs --dtype "$dtype" --arch sm_90a \
    --budget 0.5 --sizes "$at" "${sets[@]}" --json "$OUT/$name.json" 2>&1 | tee "$OUT/$name.log"
}
# phases TAG SET: s22's wgmma_phases.py with --set SET, for at most 90 s (it takes about 20):
# it launches in its own process with no watchdog, so a kernel that hangs (l2pf's first run)
# would otherwise hold the GPU for the rest of the call.
phases() {
  local left=$((LIMIT - SECONDS))
  [ "$left" -gt 90 ] && left=90
  [ "$left" -gt 30 ] && timeout "$left" python3 benchmarks/s22-2026-12-06/wgmma_phases.py \
    --set "$2" --json "$OUT/phases-$1.json" 2>&1 | tee "$OUT/phases-$1.log"
}
if [ "$what" = stages ]; then
  configs stages-bf16 bfloat16 300 "$sizes" "$three" "$four" "stages=3 cpass=2" "$three" "$four" \
    "stages=3 cpass=2"
  phases four "$four"
  phases default "$three"
fi
if [ "$what" = variants ]; then
  configs four-variants-bf16 bfloat16 200 "$sizes" "$four" "$four cluster=1" \
    "$four cluster=2 sk=0" "$four group=16" "$four" "$four cluster=1" "$four cluster=2 sk=0" \
    "$four group=16"
  configs stages-f16 float16 200 "$sizes" "$three" "$four" "$three" "$four"
fi
if [ "$what" = bench ]; then
  for pair in bfloat16:bf16 float16:f16; do
    dtype=${pair%%:*} short=${pair##*:}
    timeout 300 python3 -m benchmarks.bench_table --dtypes "$dtype" --ops "" --out "$OUT/bench" \
      2>&1 | tee "$OUT/bench-$short.log" | tail -10
  done
fi
if [ "$what" = quarters ]; then
  git apply benchmarks/s24-2026-12-06/wgmma-cpass4.patch || exit 1
  configs quarters-bf16 bfloat16 200 "$sizes" "$four" "stages=4 cpass=4" "$four" "stages=4 cpass=4"
  phases quarters "stages=4 cpass=4"
fi
if [ "$what" = warps ]; then
  git apply benchmarks/s24-2026-12-06/wgmma-wstore.patch || exit 1
  configs warps-bf16 bfloat16 200 "$sizes" "" "wstore=1" "" "wstore=1"
  phases warps "wstore=1"
fi
if [ "$what" = l2pf ]; then
  git apply benchmarks/s24-2026-12-06/wgmma-l2pf.patch || exit 1
  configs l2pf-bf16 bfloat16 250 "$sizes" "" "l2pf=2" "l2pf=4" "" "l2pf=2" "l2pf=4"
fi
if [ "$what" = h200 ]; then
  configs h200-stages-bf16 bfloat16 120 3072x5120x2048,3000x5000x2000,4096x4096x4096,8192x8192x8192 \
    "$three" "" "$three" ""
fi
if [ "$what" = tests ]; then
  timeout 560 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 2>&1 \
    | tee "$OUT/test-gpu.log" | tail -15
fi
exit 0
