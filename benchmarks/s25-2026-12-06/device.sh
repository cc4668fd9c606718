#!/usr/bin/env bash
# Twenty-fifth session. From the repository root (carry .deb and .whl), results under $OUT.
# Ran, in this order: first (an H100: the stagger part, h100-stagger/), lag (an H100, h100-lag/),
# h200bench (an H100 came: nothing ran), epi (an H100, h100-epi/), reuse (an H200: the A/B, the
# phases and the bench, h200-reuse/), then s24's `tests` mode on the same H200 (h200-tests/),
# then copyout (an H100, h100-copyout/), then spread (an H100, h100-spread/, LIMIT=420), then epi
# again (an H100, LIMIT=100: h100-epi/epi-split-rerun.log, the scripts' shared launch code).
# Last, lanes (an H100, ARCH=sm_90, h100-lanes/): lost; it applies simt-lanes.patch (against
# df72665's kgen/) first. stagger=N, reuse=1 and epi=2 lost and were taken out
# again: `stagger`, `first`, `lag`, `reuse` and `copyout` apply wgmma-stagger.patch,
# wgmma-reuse.patch or wgmma-copyout.patch first (all against commit df72665's kgen/ and tests/),
# `epi` wgmma-epi-stamps.patch (likewise).
#   bash benchmarks/s25-2026-12-06/device.sh stagger   (about 2.5 minutes)
#     the wgmma default's second consumer started late (stagger=N cycles), so that each tile's
#     epilogue of one consumer overlaps the other's last k-blocks, against the default, twice,
#     alternating (bfloat16; each validated at every test size first, cuBLAS interleaved); with
#     the TMA-store epilogue (which shares shared memory with the main loop) and with stores
#     straight from registers (epi=0, which does not).
#   bash benchmarks/s25-2026-12-06/device.sh bench   (about 4 minutes)
#     make bench's bfloat16 and float16 gemm rows.
#   bash benchmarks/s25-2026-12-06/device.sh first   stagger, then bench where the card is an
#     H200 and time is left (the H100's bench rows are s24's).
#   bash benchmarks/s25-2026-12-06/device.sh lag   (about 1.5 minutes)
#     stagger_lag.py: whether the late start lasts (consumer 1's unit starts behind consumer 0's)
#     and how much of one consumer's epilogue overlaps the other's main loop, for stagger=0, 1000
#     and 2000; then 128x192 tiles with 4 stages (clusters of 1: three 64-column chunks do not
#     split over 2 CTAs) against the default at the ragged size, twice, alternating.
#   bash benchmarks/s25-2026-12-06/device.sh h200bench   bench where the card is an H200, nothing
#     on an H100 (a call that gets an H100 costs only its start).
#   bash benchmarks/s25-2026-12-06/device.sh epi   (about 1 minute; then h200bench's bench)
#     epi_split.py with wgmma-epi-stamps.patch: the default's epilogue split into its steps, and
#     the 3-stage kernel's (cpass=1) beside it; the patch is taken out again before the bench.
#   bash benchmarks/s25-2026-12-06/device.sh reuse   (about 2.5 minutes)
#     the second half-tile pass staged in each consumer's own A rows of the unit's last two
#     stages (reuse=1: kept from the producer until the store has read them, so no pass waits for
#     a store) against the default, twice, alternating (bfloat16), then both kernels' phases
#     (s22's wgmma_phases.py).
#   bash benchmarks/s25-2026-12-06/device.sh copyout   (about 2.5 minutes)
#     the staged C tile copied out by the consumers' own threads with 16-byte stores (epi=2: the
#     staging area is free as soon as they have read it, where a TMA store holds it until its
#     writes have gone) against the default, half tiles with 4 stages and whole tiles with 3,
#     twice, alternating (bfloat16), then epi=2's phases.
#   bash benchmarks/s25-2026-12-06/device.sh spread   (about 5 minutes)
#     benchmarks.search_spread for bfloat16 on sm_90a, three runs of 6 rounds (patience 3): does
#     the search keep the 4-stage default run after run?
#   ARCH=sm_90 bash benchmarks/s25-2026-12-06/device.sh lanes   (about 30 s)
#     the float32 SIMT default with each warp's threads on 8 x 4 thread tiles (lanes=1: its
#     float4 reads of a k-row of B are one 128-byte wavefront, not two) against 16 x 2, twice,
#     alternating.
# LIMIT (seconds, default 565) bounds every mode.
set -uo pipefail
what=${1:-first}
LIMIT=${LIMIT:-565}
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm --format=csv,noheader \
  | tee "$OUT/gpu.txt"
sizes=3072x5120x2048,3000x5000x2000,4096x4096x4096,8192x8192x8192
# configs NAME DTYPE SECONDS SIZES SET...: benchmarks.gemm_configs with each SET as a --set, in
# the order given, into $OUT/NAME.json and NAME.log.
configs() {
  local name=$1 dtype=$2 secs=$3 at=$4 sets=() set
  shift 4
  for set in "$@"; do sets+=(--set "$set"); done
  timeout "$secs" python3 -m benchmarks.gemm_configs --dtype "$dtype" --arch "${ARCH:-sm_90a}" \
    --budget 0.5 --sizes "$at" "${sets[@]}" --json "$OUT/$name.json" 2>&1 | tee "$OUT/$name.log"
}
# bench DTYPE SHORT: make bench's rows for one dtype, within what is left of LIMIT.
bench() {
  local left=$((LIMIT - SECONDS))
  [ "$left" -gt 150 ] || { echo "bench $1: only ${left}s left, not run"; return; }
  timeout "$left" python3 -m benchmarks.bench_table --dtypes "$1" --ops "" --out "$OUT/bench" \
    2>&1 | tee "$OUT/bench-$2.log" | tail -10
}
if [ "$what" = stagger ] || [ "$what" = first ] || [ "$what" = lag ]; then
  git apply benchmarks/s25-2026-12-06/wgmma-stagger.patch || exit 1
fi
if [ "$what" = reuse ]; then
  git apply benchmarks/s25-2026-12-06/wgmma-reuse.patch || exit 1
fi
if [ "$what" = copyout ]; then
  git apply benchmarks/s25-2026-12-06/wgmma-copyout.patch || exit 1
fi
if [ "$what" = lanes ]; then
  git apply benchmarks/s25-2026-12-06/simt-lanes.patch || exit 1
fi
if [ "$what" = stagger ] || [ "$what" = first ]; then
  e0="epi=0 cpass=1"
  configs stagger-bf16 bfloat16 240 "$sizes" "" "stagger=1000" "stagger=2000" "$e0" \
    "$e0 stagger=1500" "" "stagger=1000" "stagger=2000" "$e0" "$e0 stagger=1500"
fi
if [ "$what" = lag ]; then
  for st in 0 1000 2000; do
    timeout 90 python3 benchmarks/s25-2026-12-06/stagger_lag.py --set "stagger=$st" 2>&1 \
      | tee -a "$OUT/stagger-lag.log"
  done
  configs bn192-bf16 bfloat16 200 3000x5000x2000,4096x4096x4096 "" "bn=192 cluster=1" \
    "bn=192 cluster=1 cpass=1" "" "bn=192 cluster=1" "bn=192 cluster=1 cpass=1"
fi
if [ "$what" = reuse ]; then
  configs reuse-bf16 bfloat16 240 "$sizes,4096x4096x2048" "" "reuse=1" "" "reuse=1"
  for tag in default:"" reuse:"reuse=1"; do
    timeout 90 python3 benchmarks/s22-2026-12-06/wgmma_phases.py --set "${tag#*:}" \
      --sizes 3000x5000x2000,3072x5120x2048,4096x4096x4096 --json "$OUT/phases-${tag%%:*}.json" \
      2>&1 | tee "$OUT/phases-${tag%%:*}.log"
  done
fi
if [ "$what" = copyout ]; then
  configs copyout-bf16 bfloat16 240 "$sizes,4096x4096x2048" "" "epi=2" "epi=2 stages=3 cpass=1" \
    "" "epi=2" "epi=2 stages=3 cpass=1"
  timeout 90 python3 benchmarks/s22-2026-12-06/wgmma_phases.py --set "epi=2" \
    --sizes 3000x5000x2000,3072x5120x2048,4096x4096x4096 --json "$OUT/phases-copyout.json" \
    2>&1 | tee "$OUT/phases-copyout.log"
fi
if [ "$what" = spread ]; then
  timeout $((LIMIT - SECONDS)) python3 -m benchmarks.search_spread --targets bfloat16:sm_90a \
    --repeats 3 --rounds 6 --out "$OUT/spread" --json "$OUT/spread-bf16.json" 2>&1 \
    | tee "$OUT/spread-bf16.log" | tail -12
  rm -rf "$OUT/spread"  # the runs' directories: the JSON and log hold what is read
fi
if [ "$what" = lanes ]; then
  configs lanes-f32 float32 170 4096x4096x4096,8192x8192x8192,3000x5000x2000 "" "lanes=1" "" \
    "lanes=1"
fi
if [ "$what" = epi ]; then
  git apply benchmarks/s25-2026-12-06/wgmma-epi-stamps.patch || exit 1
  for set in "" "stages=3 cpass=1"; do
    timeout 90 python3 benchmarks/s25-2026-12-06/epi_split.py --set "$set" 2>&1 \
      | tee -a "$OUT/epi-split.log"
  done
  git apply -R benchmarks/s25-2026-12-06/wgmma-epi-stamps.patch
fi
if [ "$what" = bench ] || { { [ "$what" = first ] || [ "$what" = h200bench ] \
    || [ "$what" = epi ] || [ "$what" = reuse ]; } \
    && grep -q H200 "$OUT/gpu.txt"; }; then
  bench bfloat16 bf16
  bench float16 f16
fi
exit 0
