#!/usr/bin/env bash
# Thirty-sixth session. From the repository root (carry .deb and .whl), results under $OUT.
#   bash benchmarks/s36-2026-12-07/device.sh new
#     The GPU tests of what s35 and s36 wrote on the CPU (l1_hardsigmoid_4d.py, a 4-D pointwise;
#     the L1, L2 and RMS norm problems; l1_layernorm*.py, same_as: layernorm, one of them cut
#     across blocks; l1_frobenius.py, a norm over every dim, cut across blocks; l1_mean_hw.py, a
#     mean over two dims), then kgen generate on a LayerNorm over (64, 256, 256) of 16 x 64 x 256
#     x 256 float32 (16 rows of 4M: few rows), on the Frobenius norm of that input, and on the
#     RMS norm over its 64 channels.
#   bash benchmarks/s36-2026-12-07/device.sh part1 | part2
#     make test-gpu in two halves that each fit a 10-minute call (8 workers): part1 the
#     KernelBench, memory-author and ops files, part2 the rest.
#   bash benchmarks/s36-2026-12-07/device.sh h200
#     On an H200: make bench's ops rows for log_softmax, then its float32 gemm rows with 2 rounds
#     of the builtin search. On another card: nothing.
set -uo pipefail
what=${1:-new}
LIMIT=${LIMIT:-570}
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
left() { local n=$((LIMIT - SECONDS)); echo $((n > 5 ? n : 5)); }  # never 0: that disables timeout
FIRST="tests/test_kernelbench_gpu.py tests/test_author_memory_run.py tests/test_ops_gpu.py"
if [ "$what" = part1 ]; then
  timeout "$(left)" python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 --durations=15 $FIRST \
    2>&1 | tee "$OUT/test-gpu-part1.log" | tail -30
fi
if [ "$what" = part2 ]; then
  rest=$(ls tests/test_*.py | grep -v -e test_kernelbench_gpu -e test_author_memory_run \
    -e test_ops_gpu)
  timeout "$(left)" python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 --durations=15 $rest \
    2>&1 | tee "$OUT/test-gpu-part2.log" | tail -30
fi
if [ "$what" = new ]; then
  timeout "$(left)" python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 \
    tests/test_kernelbench_gpu.py -k "hardsigmoid_4d or norm or frobenius or mean_hw" 2>&1 \
    | tee "$OUT/new-gpu.log" \
    | tail -12
  mkdir -p /tmp/big
  sed -e 's/^batch_size = .*/batch_size = 16/' -e 's/^features = .*/features = 64/' \
    -e 's/^dim1 = .*/dim1 = 256/' -e 's/^dim2 = .*/dim2 = 256/' \
    tests/data/kernelbench/l1_layernorm_3d.py > /tmp/big/l1_layernorm_3d.py
  timeout "$(left)" python3 -m kgen generate --kernelbench /tmp/big/l1_layernorm_3d.py \
    --arch sm_90 --rounds 3 --out /tmp/gen/ln >> "$OUT/ln.log" 2>&1
  cp /tmp/gen/ln/report.md "$OUT/ln-report.md" 2>/dev/null
  tail -12 "$OUT/ln.log"
  sed -e 's/^batch_size = .*/batch_size = 16/' -e 's/^features = .*/features = 64/' \
    -e 's/^dim1 = .*/dim1 = 256/' -e 's/^dim2 = .*/dim2 = 256/' \
    tests/data/kernelbench/l1_frobenius.py > /tmp/big/l1_frobenius.py
  timeout "$(left)" python3 -m kgen generate --kernelbench /tmp/big/l1_frobenius.py \
    --arch sm_90 --rounds 3 --out /tmp/gen/fro >> "$OUT/fro.log" 2>&1
  cp /tmp/gen/fro/report.md "$OUT/fro-report.md" 2>/dev/null
  tail -12 "$OUT/fro.log"
  mkdir -p /tmp/big
  sed -e 's/^batch_size = .*/batch_size = 16/' -e 's/^dim1 = .*/dim1 = 256/' \
    -e 's/^dim2 = .*/dim2 = 256/' tests/data/kernelbench/l1_rmsnorm_channels.py \
    > /tmp/big/l1_rmsnorm_channels.py
  timeout "$(left)" python3 -m kgen generate --kernelbench /tmp/big/l1_rmsnorm_channels.py \
    --arch sm_90 --rounds 4 --out /tmp/gen/rms >> "$OUT/rms.log" 2>&1
  cp /tmp/gen/rms/report.md "$OUT/rms-report.md" 2>/dev/null
  tail -20 "$OUT/rms.log"
fi
if [ "$what" = h200 ]; then
  if grep -q H200 "$OUT/gpu.txt"; then
    timeout "$(left)" python3 -m benchmarks.bench_table --dtypes "" --ops log_softmax \
      --out /tmp/bench 2>&1 | tee "$OUT/bench-log_softmax.log" | tail -8
    timeout "$(left)" python3 -m benchmarks.bench_table --dtypes float32 --rounds 2 --ops "" \
      --out /tmp/bench-f32 2>&1 | tee "$OUT/bench-f32.log" | tail -12
    cp /tmp/bench/bench-*.json /tmp/bench-f32/bench-*.json "$OUT/" 2>/dev/null
  fi
fi
