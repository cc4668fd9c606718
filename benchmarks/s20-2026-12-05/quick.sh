#!/usr/bin/env bash
# Twentieth session, for a short device call (at most 4 minutes; carry .deb and .whl):
#   bash benchmarks/s20-2026-12-05/quick.sh
# The 3xTF32 template's GPU test (every test size, then 4096^3 against cuBLAS), the mma default's
# (its cp.async helpers moved to cpasync.cuh), then `kgen generate` for float32 with the builtin
# author for three rounds: SIMT's default, then 3xTF32's once, then the fastest's neighbour.
set -uo pipefail
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader
timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_author.py \
  -k "default_is_correct and (float16 or tf32x3)" 2>&1 | tee "$OUT/test-author-gpu.log" | tail -4
left=$((${LIMIT:-230} - SECONDS))
timeout "$left" python3 -m kgen generate --op gemm --dtype float32 --rounds 3 --no-profile \
  --out "$OUT/generate-f32" 2>&1 | tee "$OUT/generate-f32.log" | tail -12
rm -rf "$OUT"/generate-f32/attempts 2>/dev/null
exit 0
