#!/usr/bin/env bash
# The fourteenth session's device calls. From the repository root (carry .deb and .whl), results
# under $OUT:
#   bash benchmarks/s14-2026-12-05/device.sh diag      (at most 9 minutes)
#     wgmma bfloat16 at 3000x5000x2000 taken apart: the default, sk=0 and clusters of 2 at sizes
#     that change one thing each (K tail, M edge, N edge with 16- or 32-byte aligned rows), and
#     the argmax configurations near its default at its bench sizes, twice each.
#   bash benchmarks/s14-2026-12-05/device.sh tall      (at most 9 minutes)
#     the GPU correctness tests for clusters of 2 and cluster=0 (clusters of 2 set at launch
#     where N % 16 != 0); then bfloat16 at the bench sizes and two of diag's: the default,
#     cluster=0, and 256x128 tiles (B, whose rows are misaligned at N = 5000, a third of the
#     bytes instead of two thirds) with and without it.
#   bash benchmarks/s14-2026-12-05/device.sh auto      (at most 10 minutes)
#     cluster=0 built as two specialized bodies, now the default: the wgmma GPU tests, one CTA
#     against it twice, alternating, at the same sizes, and make bench for bfloat16.
#   bash benchmarks/s14-2026-12-05/device.sh bench-f16 (at most 5 minutes)
#     make bench for float16.
set -uo pipefail
what=${1:-diag}
OUT=${OUT:-/tmp/kgen-out}; mkdir -p "$OUT"
source scripts/device-env.sh
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm --format=csv,noheader
if [ "$what" = diag ]; then
  sizes=3072x5120x2048,3000x5000x2000,3072x5120x2000,3072x5000x2048,3072x5008x2048,3000x5120x2048,4096x4096x4096
  timeout 300 python3 -m benchmarks.gemm_configs --dtype bfloat16 --arch sm_90a --budget 0.5 \
    --sizes "$sizes" --set "" --set "sk=0" --set "cluster=2 sk=0" \
    --json "$OUT/ragged-bf16.json" 2>&1 | tee "$OUT/ragged-bf16.log"
  timeout 200 python3 -m benchmarks.mem_sweep --op argmax --dtype float32 --repeat 2 \
    --where "tpr=128,256 rpb=1,2 vec=4 cache=8,16 hint=1" \
    --json "$OUT/argmax-sweep.json" 2>&1 | tail -40 | tee "$OUT/argmax-sweep.log"
fi
if [ "$what" = tall ]; then
  timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 tests/test_author.py \
    -k "wgmma_default_is_correct and cluster" 2>&1 | tee "$OUT/test-gpu-cluster.log" | tail -4
  sizes=3072x5120x2048,3000x5000x2000,3072x5000x2048,4096x4096x4096,8192x8192x8192
  timeout 380 python3 -m benchmarks.gemm_configs --dtype bfloat16 --arch sm_90a --budget 0.5 \
    --sizes "$sizes" --set "" --set "cluster=0" --set "bm=256 bn=128" \
    --set "bm=256 bn=128 cluster=0" \
    --json "$OUT/tall-bf16.json" 2>&1 | tee "$OUT/tall-bf16.log"
fi
if [ "$what" = auto ]; then
  # cluster=0 (now the default) with one specialized copy of the kernel per launchable cluster
  # size (the first version read the size at run time in one body and ran 2-3% slower without a
  # cluster): the GPU tests, one CTA (cluster=1) against it twice, alternating, then make bench
  # for bfloat16.
  timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 tests/test_author.py \
    -k "wgmma_default_is_correct and not ping" 2>&1 | tee "$OUT/test-gpu-wgmma.log" | tail -4
  sizes=3072x5120x2048,3000x5000x2000,3072x5000x2048,4096x4096x4096,8192x8192x8192
  timeout 150 python3 -m benchmarks.gemm_configs --dtype bfloat16 --arch sm_90a --budget 0.5 \
    --sizes "$sizes" --set "cluster=1" --set "" --set "cluster=1" --set "" \
    --json "$OUT/auto-bf16.json" 2>&1 | tee "$OUT/auto-bf16.log"
  timeout 290 python3 -m benchmarks.bench_table --dtypes bfloat16 --ops "" --out "$OUT/bench" \
    2>&1 | tee "$OUT/bench-bf16.log" | tail -12
fi
if [ "$what" = bench-f16 ]; then
  # make bench's gemm table for float16 (run on the warm machine right after `auto`).
  timeout 250 python3 -m benchmarks.bench_table --dtypes float16 --ops "" --out "$OUT/bench" \
    2>&1 | tee "$OUT/bench-f16.log" | tail -9
fi
