#!/usr/bin/env bash
# One device call that decides simt-sk-origin.patch (written without a GPU, twelfth session):
# times main's float32 SIMT default and its stream-K step (sk=1), applies the patch to this
# disposable copy of the tree, runs the SIMT GPU tests, and times the same two again, in the same
# worker setup on the same GPU. Logs and JSON under $OUT. Usage, from the repository root:
#   bash benchmarks/sass-2026-12-04-s12/device-ab.sh [main|patched|all]
# all: at most 10 minutes (each timing is cut at 4, the tests at 2; partial JSON survives).
set -uo pipefail
what=${1:-all}
here=benchmarks/sass-2026-12-04-s12
OUT=${OUT:-/tmp/kgen-out}; mkdir -p "$OUT"
source scripts/device-env.sh
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm --format=csv,noheader
# 4224x4096x4096 is exactly 4 rounds of 128x256 tiles on 132 SMs (nothing cut): the per-tile cost.
sizes=4224x4096x4096,4096x4096x4096,8192x8192x8192,3000x5000x2000
time_both() {  # $1: label
  timeout 240 python3 -m benchmarks.gemm_configs --dtype float32 --arch sm_90 --set "" \
    --set "sk=1" --sizes "$sizes" --json "$OUT/f32-$1.json" 2>&1 | tee "$OUT/f32-$1.log"
}
if [ "$what" = main ] || [ "$what" = all ]; then
  time_both main
fi
if [ "$what" = patched ] || [ "$what" = all ]; then
  git apply "$here/simt-sk-origin.patch" 2>/dev/null || patch -p1 < "$here/simt-sk-origin.patch"
  timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 tests/test_author.py \
    -k "default_is_correct_on_the_local_gpu or simt_stream_k" 2>&1 \
    | tee "$OUT/test-gpu-patched.log" | tail -3
  time_both patched
fi
