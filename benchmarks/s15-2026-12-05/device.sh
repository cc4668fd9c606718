#!/usr/bin/env bash
# Prepared in the fifteenth session, which was lent no device: the calls that decide what it left
# open. The sixteenth session, lent only an H100, ran test-gpu, the first two steps of ops and
# wide (its profiles found no launch: kgen profile counted both of the default's launch lines;
# fixed since, not re-run); results in benchmarks/s16-2026-12-05/. From the repository root
# (carry .deb and .whl), results under $OUT:
#   bash benchmarks/s15-2026-12-05/device.sh ops      (at most 8 minutes)
#     argmax's new default (256 threads per row, 2 rows per block) against its neighbours at every
#     bench size, twice in fresh workers (mem_sweep now prints each size's share), then the ops
#     table's argmax rows (make bench's path) and the argmax GPU tests.
#   bash benchmarks/s15-2026-12-05/device.sh wide     (at most 6 minutes)
#     why cutting 4096^3's last round (116 tiles on 132 SMs) over every CTA ran slower (0.93x
#     against 0.97x): Nsight Compute on the wgmma default and on SK_WIDE 1 at gemm's first bench
#     size. The guess to confirm or refute: the CTAs' skewed k offsets in the cut round lose the
#     L2 reuse of B (the L2 hit rate falls and DRAM throughput rises), not the fix-up.
#   bash benchmarks/s15-2026-12-05/device.sh test-gpu (at most 8 minutes)
#     the whole GPU suite, 8 workers (last run in full in the thirteenth session, before
#     cluster=0 and the argmax default).
set -uo pipefail
what=${1:-ops}
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm --format=csv,noheader
if [ "$what" = ops ]; then
  timeout 200 python3 -m benchmarks.mem_sweep --op argmax --dtype float32 --repeat 2 \
    --where "tpr=128,256 rpb=1,2 vec=4 cache=8,16 hint=1" \
    --json "$OUT/argmax-sweep.json" 2>&1 | tail -40 | tee "$OUT/argmax-sweep.log"
  timeout 150 python3 -m benchmarks.bench_table --dtypes "" --ops argmax --out "$OUT/bench" \
    2>&1 | tee "$OUT/ops-argmax.log" | tail -8
  timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 \
    tests/test_author_memory_run.py tests/test_ops_gpu.py -k argmax 2>&1 \
    | tee "$OUT/test-gpu-argmax.log" | tail -4
fi
if [ "$what" = wide ]; then
  # The default as the builtin author writes it (no GPU needed: the first clean compile), and
  # the same file with SK_WIDE 1.
  timeout 120 python3 -m kgen generate --op gemm --arch sm_90a --dtype bfloat16 --no-gpu \
    --rounds 1 --out "$OUT/render" > /dev/null
  cp "$OUT/render/best.cu" "$OUT/wgmma-default.cu"
  sed 's|^#define SK_SPREAD 0 |#define SK_WIDE 1\n&|' "$OUT/wgmma-default.cu" > "$OUT/wgmma-wide.cu"
  grep -q '^#define SK_WIDE 1' "$OUT/wgmma-wide.cu" || { echo "SK_WIDE not set"; exit 1; }
  for v in default wide; do
    timeout 150 python3 -m kgen profile "$OUT/wgmma-$v.cu" --arch sm_90a --op gemm \
      --dtype bfloat16 > "$OUT/profile-$v.txt" 2>&1
    tail -30 "$OUT/profile-$v.txt"
  done
fi
if [ "$what" = test-gpu ]; then
  timeout 470 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 2>&1 \
    | tee "$OUT/test-gpu.log" | tail -8
fi
