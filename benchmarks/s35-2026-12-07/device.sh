#!/usr/bin/env bash
# Thirty-fifth session. From the repository root (carry .deb and .whl), results under $OUT.
#   bash benchmarks/s35-2026-12-07/device.sh full
#     make test-gpu's tests (8 workers): the first full run since the pointwise, reduce and
#     log_softmax work (the half-type log_softmax defaults under the widened log_row_sums).
#   bash benchmarks/s35-2026-12-07/device.sh rows
#     make bench's ops rows for log_softmax (any card; the card is in gpu.txt), then kgen generate
#     on l1_mean_dim.py at 1 GiB float32 (the default changed after s34's 0.91x) with the copy
#     bandwidth at that size; on an H200 first, make bench's float32 gemm rows (issue 8).
#   bash benchmarks/s35-2026-12-07/device.sh part1 | part2
#     make test-gpu in two halves that each fit a 10-minute call (8 workers): part1 the
#     KernelBench, memory-author and ops files, part2 the rest.
#   bash benchmarks/s35-2026-12-07/device.sh new
#     Not yet run: the GPU tests of what this session wrote on the CPU (l1_hardsigmoid_4d.py, a
#     4-D pointwise; l1_l1norm.py, l1_l2norm.py, l1_rmsnorm_channels.py, the norms), then kgen
#     generate on the RMS norm over the 64 channels of 16 x 64 x 256 x 256 float32 (256 MiB).
#   bash benchmarks/s35-2026-12-07/device.sh h200
#     On an H200: make bench's ops rows for log_softmax, then its float32 gemm rows with 2 rounds
#     of the builtin search (what is left of the call). On another card: `sweep` below.
#   bash benchmarks/s35-2026-12-07/device.sh sweep
#     l1_mean_dim.py at 16 x 4096 x 4095 float32 (INNER odd: 4-byte accesses): dimreduce
#     configurations with vec 1 through benchmarks.mem_sweep (the loop's own judging), unroll 16
#     among them, to see what the 0.87x of torch eager is short of.
set -uo pipefail
what=${1:-full}
LIMIT=${LIMIT:-570}
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
left() { local n=$((LIMIT - SECONDS)); echo $((n > 5 ? n : 5)); }  # never 0: that disables timeout
if [ "$what" = full ]; then
  timeout "$(left)" python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 --durations=15 2>&1 \
    | tee "$OUT/test-gpu.log" | tail -30
fi
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
    tests/test_kernelbench_gpu.py -k "hardsigmoid_4d or norm" 2>&1 | tee "$OUT/new-gpu.log" \
    | tail -12
  mkdir -p /tmp/big
  sed -e 's/^batch_size = .*/batch_size = 16/' -e 's/^dim1 = .*/dim1 = 256/' \
    -e 's/^dim2 = .*/dim2 = 256/' tests/data/kernelbench/l1_rmsnorm_channels.py \
    > /tmp/big/l1_rmsnorm_channels.py
  timeout "$(left)" python3 -m kgen generate --kernelbench /tmp/big/l1_rmsnorm_channels.py \
    --arch sm_90 --rounds 4 --out /tmp/gen/rms >> "$OUT/rms.log" 2>&1
  cp /tmp/gen/rms/report.md "$OUT/rms-report.md" 2>/dev/null
  tail -20 "$OUT/rms.log"
fi
if [ "$what" = rows ]; then
  if grep -q H200 "$OUT/gpu.txt"; then
    timeout "$(left)" python3 -m benchmarks.bench_table --dtypes float32 --ops "" \
      --out /tmp/bench-f32 2>&1 | tee "$OUT/bench-f32.log" | tail -12
  fi
  timeout "$(left)" python3 -m benchmarks.bench_table --dtypes "" --ops log_softmax \
    --out /tmp/bench 2>&1 | tee "$OUT/bench-log_softmax.log" | tail -8
  python3 - >> "$OUT/mean.log" 2>&1 <<'PY'
import torch  # the copy bandwidth at 1 GiB of float32: the bar a reduction's read is held to
x = torch.randn(1 << 28, device="cuda"); y = torch.empty_like(x)
times = []
for _ in range(40):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record(); y.copy_(x); b.record(); b.synchronize(); times.append(a.elapsed_time(b))
ms = sorted(times[5:])[len(times[5:]) // 2]
print(f"copy 1 GiB float32: {ms:.4f} ms, {2 * x.numel() * 4 / ms / 1e6:.0f} GB/s (read + write)")
PY
  mkdir -p /tmp/big
  sed -e 's/^dim1 = .*/dim1 = 4096/' -e 's/^dim2 = .*/dim2 = 4095/' \
    tests/data/kernelbench/l1_mean_dim.py > /tmp/big/l1_mean_dim.py
  timeout "$(left)" python3 -m kgen generate --kernelbench /tmp/big/l1_mean_dim.py --arch sm_90 \
    --rounds 4 --out /tmp/gen/l1_mean_dim >> "$OUT/mean.log" 2>&1
  cp /tmp/gen/l1_mean_dim/report.md "$OUT/l1_mean_dim-report.md" 2>/dev/null
  cp /tmp/bench/bench-*.json /tmp/bench-f32/bench-*.json "$OUT/" 2>/dev/null
  tail -20 "$OUT/mean.log"
fi
if [ "$what" = h200 ]; then
  if grep -q H200 "$OUT/gpu.txt"; then
    timeout "$(left)" python3 -m benchmarks.bench_table --dtypes "" --ops log_softmax \
      --out /tmp/bench 2>&1 | tee "$OUT/bench-log_softmax.log" | tail -8
    timeout "$(left)" python3 -m benchmarks.bench_table --dtypes float32 --rounds 2 --ops "" \
      --out /tmp/bench-f32 2>&1 | tee "$OUT/bench-f32.log" | tail -12
    cp /tmp/bench/bench-*.json /tmp/bench-f32/bench-*.json "$OUT/" 2>/dev/null
  else
    what=sweep
  fi
fi
if [ "$what" = sweep ]; then
  mkdir -p /tmp/big
  sed -e 's/^dim1 = .*/dim1 = 4096/' -e 's/^dim2 = .*/dim2 = 4095/' \
    tests/data/kernelbench/l1_mean_dim.py > /tmp/big/l1_mean_dim.py
  timeout "$(left)" python3 -m benchmarks.mem_sweep --op /tmp/big/l1_mean_dim.py \
    --where "vec=1 hint=0 tx=32,64,128 ty=2,4,8,16 unroll=4,8,16" --json "$OUT/sweep.json" \
    2>&1 | tee "$OUT/sweep.log" | tail -8
fi
