#!/usr/bin/env bash
# Thirty-first session. From the repository root (carry .deb and .whl), results under $OUT.
#   bash benchmarks/s31-2026-12-07/device.sh table
#     On an H200: make bench's float32 rows (bench_table, the README's table) with the sk=3
#     SIMT default; then, as LIMIT allows, the float32 search three times (search_spread).
#     On another card: the spread alone. (Ran on an H100: the spread, h100-spread-f32.*.)
#   bash benchmarks/s31-2026-12-07/device.sh kb   (about 2 minutes)
#     The KernelBench GPU tests: the builtin author's l1_matmul (back at K = 1024, with the
#     check that also accepts the Model's own float32 result) and l1_softmax (same_as: softmax)
#     through KernelBench's harness; the endpoint test (l2_gemm_bias_gelu). Not yet run.
# (The sk3 and full modes of benchmarks/s30-2026-12-07/device.sh ran this session on an H100.)
set -uo pipefail
what=${1:-table}
LIMIT=${LIMIT:-565}
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
if [ "$what" = table ]; then
  if grep -q H200 "$OUT/gpu.txt"; then
    timeout $((LIMIT - SECONDS)) python3 -m benchmarks.bench_table --dtypes float32 --ops "" \
      --out /tmp/bench 2>&1 | tee "$OUT/bench-f32.log" | tail -12
    cp /tmp/bench/bench-*.json "$OUT/" 2>/dev/null
  fi
  timeout $((LIMIT - SECONDS)) python3 -m benchmarks.search_spread --targets float32:sm_90 \
    --repeats 3 --rounds 6 --out /tmp/spread --json "$OUT/spread-f32.json" 2>&1 \
    | tee "$OUT/spread-f32.log" | tail -12
fi
if [ "$what" = kb ]; then
  timeout $((LIMIT - SECONDS)) python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 \
    tests/test_kernelbench_gpu.py 2>&1 | tee "$OUT/kernelbench-gpu.log" | tail -15
fi
