#!/usr/bin/env bash
# Twenty-second session. From the repository root (carry .deb and .whl), results under $OUT:
#   bash benchmarks/s22-2026-12-06/device.sh first   (at most 9.5 minutes)
#     ew_tma.py (the copy and GELU moved by 16-byte loads or by the bulk-copy engine, against
#     torch's copy and eager GELU); the throughput benchmark's warm-k2 row for the builtin model
#     after the pool's fix; then `make bench`'s float32 gemm rows in the time left.
#   bash benchmarks/s22-2026-12-06/device.sh h100   (at most 9.5 minutes)
#     ew_tma.py, the throughput benchmark's warm-k2 row for the builtin model, then the whole GPU
#     suite with 8 workers in the time left (an H100's float32 bench rows are the s21 folder's).
#   bash benchmarks/s22-2026-12-06/device.sh tests   (at most 9.5 minutes)
#     the whole GPU suite with 8 workers, then ew_tma.py again if time is left.
#   bash benchmarks/s22-2026-12-06/device.sh phases   (about 2 minutes; ran in the twenty-third
#     session: benchmarks/s23-2026-12-06/h200-phases/)
#     wgmma_phases.py: the wgmma default's time per tile split into ramp, main loop, drain,
#     epilogue and gap from clock64() stamps, at the bench sizes and two more.
# LIMIT (seconds, default 565) bounds every mode where device time is short.
set -uo pipefail
what=${1:-first}
LIMIT=${LIMIT:-565}
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
here=benchmarks/s22-2026-12-06
if [ "$what" = first ]; then
  timeout 120 python3 "$here/ew_tma.py" --passes 30 --json "$OUT/ew_tma.json" 2>&1 \
    | tee "$OUT/ew_tma.log"
  timeout 90 python3 -m benchmarks.throughput --candidates 3 --models builtin --modes warm-k2 \
    --out "$OUT/throughput.json" 2>&1 | tee "$OUT/throughput.log" | tail -4
  left=$((LIMIT - SECONDS))
  [ "$left" -gt 60 ] && timeout "$left" python3 -m benchmarks.bench_table --dtypes float32 \
    --ops "" --no-triton --rounds "${ROUNDS:-4}" --out /tmp/bench 2>&1 \
    | tee "$OUT/bench-float32.log" | tail -16
  cp /tmp/bench/*.json "$OUT/" 2>/dev/null
  find /tmp/bench -name report.md 2>/dev/null | while read -r r; do
    cp "$r" "$OUT/$(echo "${r#/tmp/bench/}" | cut -d/ -f1)-report.md"
  done
fi
if [ "$what" = h100 ]; then
  timeout 120 python3 "$here/ew_tma.py" --passes 30 --json "$OUT/ew_tma.json" 2>&1 \
    | tee "$OUT/ew_tma.log"
  timeout 90 python3 -m benchmarks.throughput --candidates 3 --models builtin --modes warm-k2 \
    --out "$OUT/throughput.json" 2>&1 | tee "$OUT/throughput.log" | tail -4
  timeout $((LIMIT - SECONDS)) python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 2>&1 \
    | tee "$OUT/test-gpu.log" | tail -25
fi
if [ "$what" = phases ]; then
  timeout $((LIMIT - SECONDS)) python3 "$here/wgmma_phases.py" --json "$OUT/wgmma_phases.json" \
    2>&1 | tee "$OUT/wgmma_phases.log"
fi
if [ "$what" = tests ]; then
  timeout 420 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 2>&1 \
    | tee "$OUT/test-gpu.log" | tail -25
  left=$((LIMIT - SECONDS))
  [ "$left" -gt 60 ] && timeout "$left" python3 "$here/ew_tma.py" --passes 30 \
    --json "$OUT/ew_tma.json" 2>&1 | tee "$OUT/ew_tma.log"
fi
exit 0
