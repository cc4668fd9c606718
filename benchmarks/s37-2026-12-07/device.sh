#!/usr/bin/env bash
# Thirty-seventh session. From the repository root (carry .deb and .whl), results under $OUT.
#   bash benchmarks/s37-2026-12-07/device.sh kb
#     All of tests/test_kernelbench_gpu.py (the chat-server model's KernelBench run and every
#     builtin-author problem, s35's and s36's among them, each through a KernelBench-style
#     harness importing ModelNew), then make bench's cumsum rows (the scan template, new in
#     s37; on an H200 also log_softmax's), then kgen
#     generate at KernelBench's 16 x 64 x 256 x 256 float32 (256 MiB) on the instance norm (new
#     in s37), the LayerNorm over three dims and the Frobenius norm (s36).
#   bash benchmarks/s37-2026-12-07/device.sh short
#     The same with only the GPU tests of the problems written since s35 and the chat-server run.
#   bash benchmarks/s37-2026-12-07/device.sh tiny
#     The same with only the GPU tests of s37's two problems (instance norm, cumsum).
#   bash benchmarks/s37-2026-12-07/device.sh rest
#     make test-gpu's other files (8 workers).
set -uo pipefail
what=${1:-kb}
LIMIT=${LIMIT:-570}
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
left() { local n=$((LIMIT - SECONDS)); echo $((n > 5 ? n : 5)); }  # never 0: that disables timeout
if [ "$what" = kb ] || [ "$what" = short ] || [ "$what" = tiny ]; then
  # short: the problems written on the CPU since s35 (and the chat-server run) only
  new="endpoint or norm or frobenius or mean_hw or hardsigmoid_4d or cumsum"
  pick=(); [ "$what" = short ] && pick=(-k "$new")
  [ "$what" = tiny ] && pick=(-k "instancenorm or cumsum")
  timeout "$(left)" python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 --durations=10 \
    tests/test_kernelbench_gpu.py "${pick[@]}" 2>&1 | tee "$OUT/kb-gpu.log" | tail -25
  ops=cumsum  # the scan template, new in s37: its ops rows on any card; log_softmax's H200 row
  grep -q H200 "$OUT/gpu.txt" && ops=cumsum,log_softmax
  timeout "$(left)" python3 -m benchmarks.bench_table --dtypes "" --ops "$ops" \
    --out /tmp/bench 2>&1 | tee "$OUT/bench-ops.log" | tail -10
  cp /tmp/bench/bench-*.json "$OUT/" 2>/dev/null
  mkdir -p /tmp/big
  big() {  # problem, rounds: the test file at 16 x 64 x 256 x 256
    sed -e 's/^batch_size = .*/batch_size = 16/' -e 's/^features = .*/features = 64/' \
      -e 's/^dim1 = .*/dim1 = 256/' -e 's/^dim2 = .*/dim2 = 256/' \
      "tests/data/kernelbench/$1.py" > "/tmp/big/$1.py"
    timeout "$(left)" python3 -m kgen generate --kernelbench "/tmp/big/$1.py" --arch sm_90 \
      --rounds "$2" --out "/tmp/gen/$1" > "$OUT/$1.log" 2>&1
    tail -8 "$OUT/$1.log"
  }
  big l1_instancenorm 3
  big l1_layernorm_3d 3
  big l1_frobenius 3
fi
if [ "$what" = rest ]; then
  rest=$(ls tests/test_*.py | grep -v -e test_kernelbench_gpu)
  timeout "$(left)" python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 --durations=15 $rest \
    2>&1 | tee "$OUT/test-gpu-rest.log" | tail -30
fi
