#!/usr/bin/env bash
# Nineteenth session. From the repository root (carry .deb and .whl), results under $OUT:
#   bash benchmarks/s19-2026-12-05/device.sh first   (at most 10 minutes)
#     on an H200 only: the ops table's argmax rows with the fourteenth session's default
#     (make bench's path; never timed on an H200). On any card: where a warm check's time goes
#     (the pool's warm-check test with -s prints the phases), then the throughput benchmark's
#     warm rows (builtin, then scripted) with the phases under each.
#   bash benchmarks/s19-2026-12-05/device.sh phases  (at most 9 minutes)
#     after the bench sizes' inputs were drawn on the GPU (the first run's phases put 3.5 s of a
#     6.5 s check in drawing them on the host and copying them back): the GPU tests of the
#     change, where gemm's reference phase goes, then the phases and warm throughput rows again.
#   bash benchmarks/s19-2026-12-05/device.sh ab      (at most 9 minutes)
#     for a card with no phases on record (an H100): `phases`, then gpu-draw.patch taken back (the
#     inputs drawn on the host again) and the pool's warm-check test run once more, so the two
#     sets of phases come from one card.
#   bash benchmarks/s19-2026-12-05/device.sh tf32x3  (at most 9 minutes)
#     the prepared 3xTF32 float32 gemm (tf32x3/, never run on a GPU yet): `kgen bench` of the file
#     at the first bench size, then at every bench size against cuBLAS (TF32 off), then each variant of variants.py at the first
#     bench size. Every run validates at every test size first; a wrong one says so. In the time
#     left, the throughput benchmark's builtin warm-k2 row, whose one restart per row is unexplained.
set -uo pipefail
what=${1:-first}
source scripts/device-env.sh  # also sets and makes $OUT
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm --format=csv,noheader
if [ "$what" = first ] && [[ "$gpu" == *H200* ]]; then
  timeout 170 python3 -m benchmarks.bench_table --dtypes "" --ops argmax --out "$OUT/bench" \
    2>&1 | tee "$OUT/ops-argmax.log" | tail -8
fi
if [ "$what" = tf32x3 ]; then
  dir=benchmarks/s19-2026-12-05/tf32x3
  # The prepared file is the builtin template now (twentieth session); variants.py renders it, the
  # default first. First the quickest answer (validation, then the first bench size).
  python3 "$dir/variants.py" "$OUT/variants" > /dev/null
  default="$OUT/variants/tf32x3_128_128_32_2_4_3_8.cu"
  timeout 60 python3 -m kgen bench "$default" --quick --no-profile 2>&1 | tee "$OUT/tf32x3-quick.log" | tail -8
  timeout 150 python3 -m kgen bench "$default" --no-profile 2>&1 | tee "$OUT/tf32x3-bench.log" | tail -12
  for f in "$OUT"/variants/*.cu; do
    echo "== $(basename "$f")"
    timeout 60 python3 -m kgen bench "$f" --quick --no-profile 2>&1 | tail -6
  done 2>&1 | tee "$OUT/tf32x3-variants.log"
  # Then, in the time left, why warm-k2's pool restarted its worker once per row (s18, s19): the
  # pool now records each restart's reason, printed under the row.
  left=$((540 - SECONDS))
  [ -z "${SKIP_K2:-}" ] && [ "$left" -gt 80 ] && timeout "$left" python3 -m benchmarks.throughput --candidates 3 \
    --models builtin --modes warm-k2 --out "$OUT/throughput-k2.json" 2>&1 | tee "$OUT/throughput-k2.log" | tail -5
  exit 0
fi
if [ "$what" = phases ] || [ "$what" = ab ]; then
  timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_sandbox_gpu.py \
    -k "bench_size or drawn_on_the_gpu or correct_kernels" 2>&1 | tee "$OUT/test-drawn.log" | tail -4
  timeout 60 python3 benchmarks/s19-2026-12-05/reference_cost.py 2>&1 | tee "$OUT/reference-cost.log"
fi
timeout 120 python3 -m pytest -q -s -p no:cacheprovider -m gpu tests/test_pool_gpu.py \
  -k "warm_checks" 2>&1 | tee "$OUT/test-pool-phases.log" | grep -E "warm|phases|passed|failed"
left=$(( $([ "$what" = ab ] && echo 480 || echo 570) - SECONDS ))
[ "$left" -gt 60 ] && timeout "$left" python3 -m benchmarks.throughput --candidates 3 \
  --modes warm --out "$OUT/throughput.json" 2>&1 | tee "$OUT/throughput.log" | tail -8
if [ "$what" = ab ]; then
  patch -R -p1 < benchmarks/s19-2026-12-05/gpu-draw.patch && \
  timeout 120 python3 -m pytest -q -s -p no:cacheprovider -m gpu tests/test_pool_gpu.py \
    -k "warm_checks" 2>&1 | tee "$OUT/test-pool-phases-host-draw.log" | grep -E "warm|phases|passed|failed"
fi
