#!/usr/bin/env bash
# Thirtieth session (the twenty-ninth's script, which never ran, plus the builtin author's
# KernelBench matmul). From the repository root (carry .deb and .whl), results under $OUT.
#   bash benchmarks/s30-2026-12-07/device.sh sk3   (about 4 minutes, 7 more on an H200)
#     The kept sk=3 default (two launches; SK_SPREAD 2; the SM count an argument), which the
#     twenty-eighth session wrote but could not run: the default's GPU tests, the profile
#     tests of the profiler range (ncu --profile-from-start off) and model_new.py's harness
#     tests (one with launches over SMS), the builtin author's l1_matmul and, from model_new.py,
#     its float16 wgmma kernel (tensor maps, clusters), then on an H200
#     bench_table's float32 gemm rows (the README's table), then sk=3 ("") against sk=2 at the
#     bench sizes and three round-edge sizes, validated at the timed sizes, REPS times
#     (default 2), as LIMIT allows.
#   bash benchmarks/s30-2026-12-07/device.sh full   (up to LIMIT)
#     make test-gpu's tests (8 workers), whose last full run came before sk=2 and sk=3.
# The twenty-ninth session could not run it: every start found no machine.
# LIMIT (seconds, default 565) bounds every mode; BENCH=0 leaves bench_table out of sk3.
set -uo pipefail
what=${1:-sk3}
LIMIT=${LIMIT:-565}
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm --format=csv,noheader \
  | tee "$OUT/gpu.txt"
if [ "$what" = sk3 ]; then
  timeout 260 python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 \
    -k "simt_default_is_correct or simt_stream_k_is_correct or chosen_by_the_sm_count or wgmma_default_is_profiled or copy_is_dram or model_new_matches_model or kernelbench_matmul or wgmma_kernel_runs_from_model_new" \
    tests/test_author.py tests/test_feedback_gpu.py tests/test_kernelbench_gpu.py 2>&1 \
    | tee "$OUT/sk3-tests.log" | tail -3
  if [ "${BENCH:-1}" = 1 ] && grep -q H200 "$OUT/gpu.txt"; then  # the README's table is the H200's
    timeout $((LIMIT - SECONDS)) python3 -m benchmarks.bench_table --dtypes float32 --ops "" \
      --out /tmp/bench 2>&1 | tee "$OUT/bench-f32.log" | tail -20
    cp /tmp/bench/bench-*.json "$OUT/" 2>/dev/null
  fi
  for rep in $(seq 1 "${REPS:-2}"); do
    timeout $((LIMIT - SECONDS)) python3 -m benchmarks.gemm_configs --dtype float32 --arch sm_90 \
      --budget 0.4 --check-timed --set "" --set "sk=2" \
      --sizes 4096x4096x4096,8192x8192x8192,3000x5000x2000,4224x4096x4096,2432x1792x4096,4864x1792x4096 \
      2>&1 | tee "$OUT/sk3-$rep.log"
  done
fi
if [ "$what" = full ]; then
  timeout $((LIMIT - SECONDS)) python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 2>&1 \
    | tee "$OUT/test-gpu.log" | tail -15
fi
