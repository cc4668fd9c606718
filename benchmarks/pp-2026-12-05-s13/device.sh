#!/usr/bin/env bash
# The thirteenth session's device calls: the wgmma ping-pong consumers (pp=1), written and checked
# on the CPU emulator, on the H200. From the repository root (carry .deb and .whl), results under
# $OUT:
#   bash benchmarks/pp-2026-12-05-s13/device.sh pp      (at most 9 minutes)
#     the wgmma GPU correctness tests (default, clusters of 2, ping-pong; both dtypes), then
#     bfloat16 at gemm's three bench sizes: the default, ping-pong with 128x128 and 64x256 tiles,
#     and the cooperative 128x128 (the same tile without turns).
set -uo pipefail
what=${1:-pp}
OUT=${OUT:-/tmp/kgen-out}; mkdir -p "$OUT"
source scripts/device-env.sh
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm --format=csv,noheader
if [ "$what" = pp ]; then
  timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 tests/test_author.py \
    -k "wgmma_default_is_correct" 2>&1 | tee "$OUT/test-gpu-wgmma.log" | tail -4
  timeout 320 python3 -m benchmarks.gemm_configs --dtype bfloat16 --arch sm_90a --set "" \
    --set "bn=128 stages=5 pp=1" --set "bm=64 stages=4 pp=1" --set "bn=128 stages=5" \
    --json "$OUT/pp-bf16.json" 2>&1 | tee "$OUT/pp-bf16.log"
fi
if [ "$what" = wide ]; then
  # The wgmma default against the same with SK_WIDE 1 (stream-K also cuts a last round that is
  # over half full, over every CTA), bfloat16 at gemm's bench sizes, cuBLAS interleaved.
  python3 - "$OUT" <<'PY'
import sys
from kgen.arch import parse_arch
from kgen.author import space
p = space.default(parse_arch("sm_90a"), "bfloat16")
source = space.render(p, "bfloat16")
open(f"{sys.argv[1]}/wgmma-default.cu", "w").write(source)
wide = source.replace("#define SK_SPREAD 0", "#define SK_SPREAD 0\n#define SK_WIDE 1")
assert wide != source
open(f"{sys.argv[1]}/wgmma-wide.cu", "w").write(wide)
PY
  for v in default wide default wide; do
    echo "== bench $v"
    timeout 120 python3 -m kgen bench "$OUT/wgmma-$v.cu" --arch sm_90a --no-profile 2>&1 \
      | tail -6 | tee -a "$OUT/bench-$v.txt"
  done
fi
if [ "$what" = profile ]; then
  # Nsight Compute's view of the wgmma default at the ragged bench size (0.83x of cuBLAS).
  python3 - "$OUT" <<'PY'
import sys
from kgen.arch import parse_arch
from kgen.author import space
p = space.default(parse_arch("sm_90a"), "bfloat16")
open(f"{sys.argv[1]}/wgmma-default.cu", "w").write(space.render(p, "bfloat16"))
PY
  timeout 200 python3 -m kgen profile "$OUT/wgmma-default.cu" --arch sm_90a \
    --op-file benchmarks/pp-2026-12-05-s13/gemm3000.yaml --dtype bfloat16 > "$OUT/profile3000.txt" 2>&1
  cat "$OUT/profile3000.txt" | tail -30
fi
