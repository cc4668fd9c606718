#!/usr/bin/env bash
# Twenty-first session. From the repository root (carry .deb and .whl), results under $OUT:
#   bash benchmarks/s21-2026-12-05/device.sh tests   (at most 9.5 minutes)
#     the whole GPU suite with 8 workers (first run since the mma.sync templates zero their
#     out-of-range chunks with plain stores), then the throughput benchmark's warm-k2 row, whose
#     restarts now say how the worker ended.
set -uo pipefail
what=${1:-tests}
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
if [ "$what" = tests ]; then
  timeout 420 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 2>&1 \
    | tee "$OUT/test-gpu.log" | tail -25
  left=$((565 - SECONDS))
  [ "$left" -gt 60 ] && timeout "$left" python3 -m benchmarks.throughput --candidates 3 \
    --models builtin --modes warm-k2 --out "$OUT/throughput.json" 2>&1 | tee "$OUT/throughput.log" | tail -12
fi
exit 0
