#!/usr/bin/env bash
# Twenty-third session. From the repository root (carry .deb and .whl), results under $OUT.
# `defer` ran on an H100 (no H200 came; h100-defer/); `tests` and `f16` did not run. epi=2 lost
# and was taken out of the template; every mode applies wgmma-epi2.patch first to put it back.
# The patch is against the template as of commit 029fc98 (before s24's cpass field): check that
# commit's kgen/ out first (git checkout 029fc98 -- kgen).
#   bash benchmarks/s23-2026-12-06/device.sh defer   (about 1 minute)
#     the wgmma epilogue deferred into the next unit's first k-block (epi=2): the default against
#     epi=2, alternating, twice, at the bench sizes and two aligned ones (bfloat16, cuBLAS
#     interleaved; each validated at every test size first), then epi=2's phases (s22's
#     wgmma_phases.py; the default's: the same script without --set).
#   bash benchmarks/s23-2026-12-06/device.sh tests   (about 1 minute)
#     the GPU tests of the wgmma default and of epi=2 in both dtypes.
#   bash benchmarks/s23-2026-12-06/device.sh f16   (about 1 minute)
#     the default against epi=2 in float16.
# LIMIT (seconds, default 565) bounds every mode where device time is short.
set -uo pipefail
what=${1:-defer}
LIMIT=${LIMIT:-565}
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm --format=csv,noheader \
  | tee "$OUT/gpu.txt"
git apply benchmarks/s23-2026-12-06/wgmma-epi2.patch || exit 1
sizes=3072x5120x2048,4096x4096x2048,3000x5000x2000,4096x4096x4096,8192x8192x8192
if [ "$what" = tests ]; then
  timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 tests/test_author.py \
    -k "wgmma_default_is_correct and (default or deferred)" 2>&1 \
    | tee "$OUT/test-gpu-wgmma.log" | tail -4
fi
if [ "$what" = defer ]; then
  timeout 240 python3 -m benchmarks.gemm_configs --dtype bfloat16 --arch sm_90a --budget 0.5 \
    --sizes "$sizes" --set "" --set "epi=2" --set "" --set "epi=2" \
    --json "$OUT/defer-bf16.json" 2>&1 | tee "$OUT/defer-bf16.log"
  left=$((LIMIT - SECONDS))
  [ "$left" -gt 30 ] && timeout "$left" python3 benchmarks/s22-2026-12-06/wgmma_phases.py \
    --set "epi=2" --json "$OUT/phases-epi2.json" 2>&1 | tee "$OUT/phases-epi2.log"
fi
if [ "$what" = f16 ]; then
  timeout $((LIMIT - SECONDS)) python3 -m benchmarks.gemm_configs --dtype float16 \
    --arch sm_90a --budget 0.5 --sizes "$sizes" --set "" --set "epi=2" --set "" --set "epi=2" \
    --json "$OUT/defer-f16.json" 2>&1 | tee "$OUT/defer-f16.log"
fi
exit 0
