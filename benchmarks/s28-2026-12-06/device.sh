#!/usr/bin/env bash
# Twenty-eighth session. From the repository root (carry .deb and .whl), results under $OUT.
#   bash benchmarks/s28-2026-12-06/device.sh simt   (about 8 minutes)
#     The float32 default's form since the twenty-seventh session, sk=2 (both SIMT kernels in one
#     file, the one-tile grid where its last round is nearly full), never run on a GPU: its GPU
#     tests, then on an H200 bench_table's float32 gemm rows (the README's table), then sk=2
#     against sk=1 and sk=0 at the bench sizes, validated at the timed sizes, twice, as time
#     allows.
#   bash benchmarks/s28-2026-12-06/device.sh full   (up to LIMIT)
#     On an H200, bench_table's float32 gemm rows first; then make test-gpu (8 workers) on main,
#     whose last full GPU run (twenty-seventh session) came before sk=2.
#   bash benchmarks/s28-2026-12-06/device.sh sk3   (about 3 minutes)
#     sk=3 (two launches: the one-tile grid for the tiles before the last ones, whose CTAs past
#     them exit at once, then the persistent kernel cutting those along K over every SM) against
#     sk=2 at the bench sizes, 4224x4096x4096 (whole rounds: the first launch alone),
#     2432x1792x4096 (133 tiles: one left over) and 4864x1792x4096 (266: two left over),
#     validated at the timed sizes, REPS times (default 2), alternating, after the default's
#     GPU tests. Ran once, on an H100 (h100-sk3/), on the first version: the T % G tiles always
#     cut, about SK_PIECES CTAs each where few are left over (so 2432x1792x4096 lost, 0.92x
#     against 1.11x), the default still sk=2 (so "" was sk=2 and the second set sk=3, no GPU
#     tests) and the one-tile grid's bound fixed at 132 SMs. The kept form (SK_SPREAD 2, the SM
#     count an argument, sk=3 the default) did not run: every later start found no machine
#     until the device time ran out.
# LIMIT (seconds, default 565) bounds every mode.
set -uo pipefail
what=${1:-simt}
LIMIT=${LIMIT:-565}
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm --format=csv,noheader \
  | tee "$OUT/gpu.txt"
bench_f32() {
  timeout $((LIMIT - SECONDS)) python3 -m benchmarks.bench_table --dtypes float32 --ops "" \
    --out /tmp/bench 2>&1 | tee "$OUT/bench-f32.log" | tail -20
  cp /tmp/bench/bench-*.json "$OUT/" 2>/dev/null
}
if [ "$what" = simt ]; then
  timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 \
    -k "simt_default_is_correct or simt_stream_k_is_correct" tests/test_author.py 2>&1 \
    | tee "$OUT/simt-tests.log" | tail -3
  if grep -q H200 "$OUT/gpu.txt"; then bench_f32; fi  # the README's table is the H200's
  for rep in 1 2; do
    timeout $((LIMIT - SECONDS)) python3 -m benchmarks.gemm_configs --dtype float32 --arch sm_90 \
      --budget 0.4 --check-timed --set "" --set "sk=1" --set "sk=0" 2>&1 | tee "$OUT/simt-ab$rep.log"
  done
fi
if [ "$what" = full ]; then
  if grep -q H200 "$OUT/gpu.txt"; then bench_f32; fi
  timeout $((LIMIT - SECONDS)) python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 2>&1 \
    | tee "$OUT/test-gpu.log" | tail -15
fi
if [ "$what" = sk3 ]; then
  timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 \
    -k "simt_default_is_correct or simt_stream_k_is_correct" tests/test_author.py 2>&1 \
    | tee "$OUT/sk3-tests.log" | tail -3
  for rep in $(seq 1 "${REPS:-2}"); do
    timeout $((LIMIT - SECONDS)) python3 -m benchmarks.gemm_configs --dtype float32 --arch sm_90 \
      --budget 0.4 --check-timed --set "" --set "sk=2" \
      --sizes 4096x4096x4096,8192x8192x8192,3000x5000x2000,4224x4096x4096,2432x1792x4096,4864x1792x4096 \
      2>&1 | tee "$OUT/sk3-$rep.log"
  done
fi
