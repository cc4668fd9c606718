#!/usr/bin/env bash
# Twenty-sixth session. From the repository root (carry .deb and .whl), results under $OUT.
#   bash benchmarks/s26-2026-12-06/device.sh clocks   (about 3 minutes)
#     clocks.py: the kernel cuBLAS picks at each bench size (torch.profiler's names), then the
#     float32 SIMT and bfloat16 wgmma defaults against cuBLAS, launched back to back while
#     nvidia-smi samples the SM clock and the power draw.
#   bash benchmarks/s26-2026-12-06/device.sh simt   (about 1.5 minutes; on a checkout of 9c07f90
#     with simt-idx32.patch applied, as it ran)
#     the float32 SIMT kernel's interior loads addressed by 32-bit element indices, in both
#     kernels (simt-idx32.patch), against the 64-bit index arithmetic before it (the patch
#     reversed), each as sk=1 (the default) and sk=0, twice, alternating (gemm_configs at the
#     bench sizes, validated at every test size, cuBLAS interleaved). main now has the sk=0 half.
#   bash benchmarks/s26-2026-12-06/device.sh first   clocks, then simt (an H100, h100-first/).
#   bash benchmarks/s26-2026-12-06/device.sh power   (about 2.5 minutes)
#     clocks.py for bfloat16 only, each run 6 s with the first 2 s unsampled and untimed, 3 s
#     idle between runs, in the order AB BA: is the wgmma default's lower clock under sustained
#     load its own?
#   bash benchmarks/s26-2026-12-06/device.sh simtb   (about 1 minute; on a checkout of b26b0d0,
#     as it ran: main has the patch now)
#     the stream-K kernel with 32-bit indices for B's loads only (simt-bidx.patch) against
#     b26b0d0's, sk=1 and sk=0, twice, alternating; logs only (a call brings back at most 8
#     files). Ran on an H100 (h100-second/, LIMIT=150).
#   bash benchmarks/s26-2026-12-06/device.sh second   simtb, then power at 4096^3 and 8192^3.
# power and second never ran: the session's device time went on starts that found no machine.
# LIMIT (seconds, default 565) bounds every mode.
set -uo pipefail
what=${1:-clocks}
LIMIT=${LIMIT:-565}
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm --format=csv,noheader \
  | tee "$OUT/gpu.txt"
here=benchmarks/s26-2026-12-06
# simt_configs NAME [JSON DIR]: the float32 default and its sk=0 twin at the bench sizes, into
# NAME.log and DIR/NAME.json (DIR: $OUT unless given).
simt_configs() {
  timeout $((LIMIT - SECONDS)) python3 -m benchmarks.gemm_configs --dtype float32 --arch sm_90 \
    --budget 0.5 --set "" --set "sk=0" --json "${2:-$OUT}/$1.json" 2>&1 | tee "$OUT/$1.log"
}
if [ "$what" = clocks ] || [ "$what" = first ]; then
  timeout 60 python3 $here/clocks.py names 2>&1 | tee "$OUT/cublas-names.log"
  timeout $((LIMIT - SECONDS)) python3 $here/clocks.py clocks --seconds 2 2>&1 \
    | tee "$OUT/clocks.log"
fi
power() {  # SIZES: MxNxK,... (empty: the bench sizes)
  timeout $((LIMIT - SECONDS)) python3 $here/clocks.py clocks --dtypes bfloat16 --seconds 6 \
    --settle 2 --gap 3 --sizes "${1:-}" 2>&1 | tee "$OUT/power.log"
}
if [ "$what" = power ]; then
  power
fi
if [ "$what" = simt ] || [ "$what" = first ]; then
  for rep in 1 2; do
    git apply -R $here/simt-idx32.patch || exit 1
    simt_configs "simt-before-$rep"
    git apply $here/simt-idx32.patch || exit 1
    simt_configs "simt-idx32-$rep"
  done
fi
if [ "$what" = simtb ] || [ "$what" = second ]; then
  for rep in 1 2; do
    simt_configs "simtb-before-$rep" /tmp
    git apply $here/simt-bidx.patch || exit 1
    simt_configs "simtb-bidx-$rep" /tmp
    git apply -R $here/simt-bidx.patch || exit 1
  done
fi
if [ "$what" = second ]; then
  if [ $((LIMIT - SECONDS)) -gt 100 ]; then power 4096x4096x4096,8192x8192x8192
  else echo "power: only $((LIMIT - SECONDS)) s left, not run"; fi
fi
