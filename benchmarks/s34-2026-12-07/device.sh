#!/usr/bin/env bash
# Thirty-fourth session. From the repository root (carry .deb and .whl), results under $OUT.
#   bash benchmarks/s34-2026-12-07/device.sh reduce
#     The KernelBench GPU tests of the reduction problems (`reduce: {op, dim}`) and log_softmax's
#     GPU tests (its reference kernels, the builtin author's, l1_log_softmax.py), then kgen
#     generate on five of them resized to 1 GiB of float32 (reduce.log), with the copy bandwidth
#     at that size.
#   bash benchmarks/s34-2026-12-07/device.sh full
#     make test-gpu's tests (8 workers).
set -uo pipefail
what=${1:-reduce}
LIMIT=${LIMIT:-565}
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
left() { local n=$((LIMIT - SECONDS)); echo $((n > 5 ? n : 5)); }  # never 0: that disables timeout
if [ "$what" = full ]; then
  timeout "$(left)" python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 2>&1 \
    | tee "$OUT/test-gpu.log" | tail -15
fi
if [ "$what" = reduce ]; then
  timeout "$(left)" python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 \
    tests/test_kernelbench_gpu.py tests/test_ops_gpu.py tests/test_author_memory_run.py \
    -k "dim or argmax or log_softmax" 2>&1 | tee "$OUT/kernelbench-gpu.log" | tail -12
  python3 - >> "$OUT/reduce.log" 2>&1 <<'PY'
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
  big() {  # name, then sed expressions for the sizes
    local name=$1; shift
    sed "$@" "tests/data/kernelbench/$name.py" > "/tmp/big/$name.py"
    echo "== $name" >> "$OUT/reduce.log"
    timeout "$(left)" python3 -m kgen generate --kernelbench "/tmp/big/$name.py" --arch sm_90 \
      --rounds 5 --out "/tmp/gen/$name" >> "$OUT/reduce.log" 2>&1
  }
  big l1_sum_dim -e 's/^rows = .*/rows = 4096/' -e 's/^cols = .*/cols = 4096/'
  big l1_argmax -e 's/^dim1 = .*/dim1 = 4096/' -e 's/^dim2 = .*/dim2 = 4096/'
  big l1_mean_dim -e 's/^dim1 = .*/dim1 = 4096/' -e 's/^dim2 = .*/dim2 = 4095/'
  big l1_min_dim -e 's/^channels = .*/channels = 1024/' -e 's/^length = .*/length = 8192/'
  big l1_argmin_dim0 -e 's/^rows = .*/rows = 65536/' -e 's/^cols = .*/cols = 4096/'
  for name in l1_sum_dim l1_argmax l1_mean_dim l1_min_dim l1_argmin_dim0; do
    cp "/tmp/gen/$name/report.md" "$OUT/$name-report.md" 2>/dev/null
  done
  tail -45 "$OUT/reduce.log"
fi
