#!/usr/bin/env bash
# Twenty-first session. From the repository root (carry .deb and .whl), results under $OUT:
#   bash benchmarks/s21-2026-12-05/device.sh tests   (at most 9.5 minutes)
#     the whole GPU suite with 8 workers (first run since the mma.sync templates zero their
#     out-of-range chunks with plain stores), then the throughput benchmark's warm-k2 row, whose
#     restarts now say how the worker ended.
#   bash benchmarks/s21-2026-12-05/device.sh final   (at most 9.5 minutes)
#     the throughput benchmark's warm and warm-k2 rows for both models after the pool's fix, then
#     on an H200 only the bench32 rows in the time left.
#   bash benchmarks/s21-2026-12-05/device.sh bench32   (at most 9.5 minutes)
#     the throughput benchmark's warm-k2 row again (the pool now starts its workers from a thread
#     of its own), then `make bench`'s float32 gemm rows: the whole search (SIMT, 3xTF32 once,
#     the fastest's neighbours) and the SIMT-only search, with Triton left out.
#   bash benchmarks/s21-2026-12-05/device.sh sk2   (at most 9.5 minutes)
#     the SIMT float32 default (sk=1) against sk=2 (the whole rounds one tile per CTA, then a
#     persistent launch for the tiles left over), validated, at the three bench sizes and
#     4224x4096x4096 (whole rounds only), cuBLAS interleaved; then the bench32 rows in the time
#     left (ROUNDS, default 4).
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
if [ "$what" = sk2 ]; then
  timeout 300 python3 -m benchmarks.gemm_configs --dtype float32 --arch sm_90 --set "" \
    --set "sk=2" --sizes 4096x4096x4096,8192x8192x8192,3000x5000x2000,4224x4096x4096 \
    --json "$OUT/f32-sk2.json" 2>&1 | tee "$OUT/f32-sk2.log"
  left=$((565 - SECONDS))
  timeout "$left" python3 -m benchmarks.bench_table --dtypes float32 --ops "" --no-triton \
    --rounds "${ROUNDS:-4}" --out /tmp/bench 2>&1 | tee "$OUT/bench-float32.log" | tail -16
  cp /tmp/bench/*.json "$OUT/" 2>/dev/null
fi
if [ "$what" = final ]; then
  timeout 240 python3 -m benchmarks.throughput --candidates 3 --modes warm,warm-k2 \
    --out "$OUT/throughput.json" 2>&1 | tee "$OUT/throughput.log" | tail -14
  grep -q H200 "$OUT/gpu.txt" && what=bench32 && SKIP_THROUGHPUT=1
fi
if [ "$what" = bench32 ]; then
  [ -z "${SKIP_THROUGHPUT:-}" ] && timeout 90 python3 -m benchmarks.throughput --candidates 3 \
    --models builtin --modes warm-k2 --out "$OUT/throughput.json" 2>&1 \
    | tee "$OUT/throughput.log" | tail -4
  left=$((565 - SECONDS))
  timeout "$left" python3 -m benchmarks.bench_table --dtypes float32 --ops "" --no-triton \
    --rounds "${ROUNDS:-5}" --out /tmp/bench 2>&1 | tee "$OUT/bench-float32.log" | tail -16
  cp /tmp/bench/*.json "$OUT/" 2>/dev/null
  find /tmp/bench -name report.md | while read -r r; do
    cp "$r" "$OUT/$(echo "${r#/tmp/bench/}" | cut -d/ -f1)-report.md"
  done
fi
exit 0
