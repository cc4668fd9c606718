#!/usr/bin/env bash
# Twenty-fourth session. From the repository root (carry .deb and .whl), results under $OUT.
#   bash benchmarks/s24-2026-12-06/device.sh stages   (about 2 minutes)
#     a fourth stage for the wgmma default: the C tile staged half at a time (cpass=2) frees the
#     32 KB that 4 stages of 128x256x64 need. The default (3 stages, whole staging) against
#     stages=4 cpass=2 and against cpass=2 alone (3 stages: what the second pass costs),
#     alternating, twice, at the bench sizes and two aligned ones (bfloat16, cuBLAS interleaved;
#     each validated at every test size first), then the phases of stages=4 cpass=2 and of the
#     default on the same card (s22's wgmma_phases.py).
#   bash benchmarks/s24-2026-12-06/device.sh f16   (about 1 minute)
#     the default against stages=4 cpass=2 in float16.
# LIMIT (seconds, default 565) bounds every mode where device time is short.
set -uo pipefail
what=${1:-stages}
LIMIT=${LIMIT:-565}
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm --format=csv,noheader \
  | tee "$OUT/gpu.txt"
sizes=3072x5120x2048,4096x4096x2048,3000x5000x2000,4096x4096x4096,8192x8192x8192
four="stages=4 cpass=2"
if [ "$what" = stages ]; then
  timeout 300 python3 -m benchmarks.gemm_configs --dtype bfloat16 --arch sm_90a --budget 0.5 \
    --sizes "$sizes" --set "" --set "$four" --set "cpass=2" --set "" --set "$four" \
    --set "cpass=2" --json "$OUT/stages-bf16.json" 2>&1 | tee "$OUT/stages-bf16.log"
  for set in "$four" ""; do
    left=$((LIMIT - SECONDS))
    tag=${set:+four}; tag=${tag:-default}
    [ "$left" -gt 30 ] && timeout "$left" python3 benchmarks/s22-2026-12-06/wgmma_phases.py \
      --set "$set" --json "$OUT/phases-$tag.json" 2>&1 | tee "$OUT/phases-$tag.log"
  done
fi
if [ "$what" = f16 ]; then
  timeout $((LIMIT - SECONDS)) python3 -m benchmarks.gemm_configs --dtype float16 \
    --arch sm_90a --budget 0.5 --sizes "$sizes" --set "" --set "$four" --set "" --set "$four" \
    --json "$OUT/stages-f16.json" 2>&1 | tee "$OUT/stages-f16.log"
fi
exit 0
