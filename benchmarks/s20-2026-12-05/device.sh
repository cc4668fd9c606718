#!/usr/bin/env bash
# Twentieth session. From the repository root (carry .deb and .whl), results under $OUT:
#   bash benchmarks/s20-2026-12-05/device.sh   (at most 9.5 minutes)
# The GPU tests of the 3xTF32 template and of the mma template (whose cp.async helpers moved to
# cpasync.cuh), then `make bench`'s float32 gemm rows: the whole search (SIMT, then 3xTF32 once,
# then the fastest's neighbours) and the SIMT-only search, the float32 target's measure.
set -uo pipefail
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader
timeout 170 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_author.py \
  -k "default_is_correct" 2>&1 | tee "$OUT/test-author-gpu.log" | tail -4
left=$((${LIMIT:-560} - SECONDS))
timeout "$left" python3 -m benchmarks.bench_table --dtypes float32 --ops "" --no-triton --rounds "${ROUNDS:-5}" \
  --out /tmp/bench 2>&1 | tee "$OUT/bench-float32.log" | tail -14
cp /tmp/bench/*.json "$OUT/" 2>/dev/null
find /tmp/bench -name report.md | while read -r r; do
  cp "$r" "$OUT/$(echo "${r#/tmp/bench/}" | cut -d/ -f1)-report.md"
done
exit 0
