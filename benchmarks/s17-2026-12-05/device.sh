#!/usr/bin/env bash
# Prepared in the seventeenth session, which got no machine in 18 calls, and not run: the s15
# script's steps that the sixteenth session's H100 left for an H200, fitted into calls of 3 to
# 10 minutes. From the repository root (carry .deb and .whl), results
# under $OUT:
#   bash benchmarks/s17-2026-12-05/device.sh first     (at most 10 minutes)
#     the ops table's argmax rows with the new default (make bench's path), then the wgmma default
#     against SK_WIDE 1 under Nsight Compute at 4096^3 (the question in s15's device.sh: does the
#     cut last round lose L2 reuse of B, or is it the fix-up?); in the time left, the argmax GPU
#     tests and the wgmma profile test the sixteenth session added.
#   bash benchmarks/s17-2026-12-05/device.sh argmax    (at most 3 minutes)
#     only the ops table's argmax rows, for when little device time is left.
#   bash benchmarks/s17-2026-12-05/device.sh wide      (at most 7 minutes)
#     only the two profiles (an H100 has the same 132 SMs, so the same rounds at 4096^3).
# The profiles are s15's `wide` step, run from here. After them, s15's `test-gpu`: the whole GPU
# suite, with the wgmma profile test the sixteenth session added.
set -uo pipefail
what=${1:-first}
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm --format=csv,noheader
if [ "$what" = first ] || [ "$what" = argmax ]; then
  timeout 170 python3 -m benchmarks.bench_table --dtypes "" --ops argmax --out "$OUT/bench" \
    2>&1 | tee "$OUT/ops-argmax.log" | tail -8
fi
if [ "$what" = first ] || [ "$what" = wide ]; then
  bash benchmarks/s15-2026-12-05/device.sh wide | tail -n +2  # its own nvidia-smi line aside
fi
if [ "$what" = first ]; then
  left=$((560 - SECONDS))
  [ "$left" -gt 30 ] && timeout "$left" python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 \
    tests/test_feedback_gpu.py tests/test_author_memory_run.py tests/test_ops_gpu.py \
    -k "wgmma or argmax" 2>&1 | tee "$OUT/test-gpu-first.log" | tail -4
fi
