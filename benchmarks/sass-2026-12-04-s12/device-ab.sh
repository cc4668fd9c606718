#!/usr/bin/env bash
# Times what the twelfth session changed without a GPU: the SIMT stream-K kernel's main loop.
# From the repository root, on the device (carry .deb and .whl), with results under $OUT:
#   bash benchmarks/sass-2026-12-04-s12/device-ab.sh tile    (at most 8 minutes)
#     the SIMT GPU tests; then `kgen bench` at 4224x4096x4096 (exactly 4 rounds of 128x256 tiles
#     on 132 SMs, so nothing is cut: the per-tile cost) of the one-tile default, the stream-K
#     kernel as the eleventh session timed it (simt-sk1-first.cu) and as it is now (both of
#     main's rendered into $OUT); and a profile of the one now.
#   bash benchmarks/sass-2026-12-04-s12/device-ab.sh sizes   (at most 5 minutes)
#     the default against sk=1 at 4224x4096x4096 and the three float32 bench sizes.
set -uo pipefail
what=${1:-tile}
here=benchmarks/sass-2026-12-04-s12
OUT=${OUT:-/tmp/kgen-out}; mkdir -p "$OUT"
source scripts/device-env.sh
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm --format=csv,noheader
if [ "$what" = tile ]; then
  timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 tests/test_author.py \
    -k "default_is_correct_on_the_local_gpu or simt_stream_k" 2>&1 \
    | tee "$OUT/test-gpu-simt.log" | tail -3
  python3 - "$OUT" <<'PY'
import dataclasses, sys
from kgen.arch import parse_arch
from kgen.author import space
p = space.default(parse_arch("sm_90"), "float32")
for name, q in (("default", p), ("sk1", dataclasses.replace(p, sk=1))):
    open(f"{sys.argv[1]}/simt-{name}.cu", "w").write(space.render(q, "float32"))
PY
  cp "$here/simt-sk1-first.cu" "$OUT/"
  for v in default sk1-first sk1; do
    echo "== bench $v"
    timeout 90 python3 -m kgen bench "$OUT/simt-$v.cu" --arch sm_90 --op-file "$here/gemm4224.yaml" \
      --no-profile 2>&1 | tail -4 | tee "$OUT/bench4224-$v.txt"
  done
  timeout 100 python3 -m kgen profile "$OUT/simt-sk1.cu" --arch sm_90 \
    --op-file "$here/gemm4224.yaml" > "$OUT/profile4224-sk1.txt" 2>&1
  grep -E "profile|speed|top stalls|occupancy" "$OUT/profile4224-sk1.txt"
fi
if [ "$what" = sizes ]; then
  timeout 280 python3 -m benchmarks.gemm_configs --dtype float32 --arch sm_90 --set "" \
    --set "sk=1" --sizes 4224x4096x4096,4096x4096x4096,8192x8192x8192,3000x5000x2000 \
    --json "$OUT/f32-sizes.json" 2>&1 | tee "$OUT/f32-sizes.log"
fi
