#!/usr/bin/env bash
# Eighteenth session, on the H100 it was lent. The whole GPU suite (s15's test-gpu, 8 workers)
# failed twice there: a profile test got "==ERROR== An error was reported by the driver" (two
# ncu runs at once: ncu's lock, /tmp/nsight-compute-lock, is private to each sandbox), and the timed
# warm-check test ran 2.7 s beyond its budget under the eight workers. kgen now holds a lock of
# its own around every ncu run, and that test no longer bounds time. From the repository root
# (carry .deb and .whl), results under $OUT:
#   bash benchmarks/s18-2026-12-05/device.sh lock    (about 4 minutes)
#     two profiles at once without kgen's lock (the driver's whole message, for the test data)
#     and with it; then the profile, sanitizer and pool GPU tests with 8 workers.
set -uo pipefail
what=${1:-lock}
source scripts/device-env.sh  # also sets and makes $OUT
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm --format=csv,noheader
if [ "$what" = lock ]; then
  timeout 150 python3 - <<'PY' 2>&1 | tee "$OUT/two-profiles.log"
import contextlib, itertools
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from kgen.arch import local_gpu
from kgen.compile import compile_source
from kgen.gpu import profile
from kgen.gpu.evaluate import profile_only
from kgen.loop.candidate import parse_contract
from kgen.ops import load_op

spec = load_op(path=Path("tests/data/specs/scale.yaml"))
source = Path("tests/data/kernels/scale_copy_vec.cu").read_text()
target = local_gpu()[1]
contract, _ = parse_contract(source, spec)
compiled = compile_source(source, target)
def one(_):
    return profile_only(compiled, contract, spec, target)
for locked in (False, True):
    saved = profile.one_profile_at_a_time
    if not locked:
        profile.one_profile_at_a_time = contextlib.nullcontext
    with ThreadPoolExecutor(3) as pool:
        found = list(pool.map(one, range(3)))
    profile.one_profile_at_a_time = saved
    print(f"kgen's lock {'held' if locked else 'off'}:")
    for p in found:
        print("  ", p.error or p.describe().splitlines()[0], f"({p.seconds} s)")
PY
  timeout 400 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 \
    tests/test_feedback_gpu.py tests/test_pool_gpu.py 2>&1 | tee "$OUT/test-gpu-lock.log" | tail -6
fi
# Added after the `lock` run: the profile and sanitizer runs now hold the GPU that judged the
# candidate (no other candidate is judged there meanwhile) and run on it.
#   bash benchmarks/s18-2026-12-05/device.sh held    (about 6 minutes)
#     the pool, profile/sanitizer and sandbox GPU tests with 8 workers, then the throughput
#     benchmark's builtin rows (the profile now inside the pool's turn) in the time left.
if [ "$what" = held ]; then
  timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 tests/test_pool_gpu.py \
    tests/test_feedback_gpu.py tests/test_sandbox_gpu.py 2>&1 | tee "$OUT/test-gpu-held.log" | tail -6
  left=$((400 - SECONDS))
  [ "$left" -gt 60 ] && timeout "$left" python3 -m benchmarks.throughput --candidates 3 \
    --out "$OUT/throughput.json" 2>&1 | tee "$OUT/throughput.log" | tail -8
fi
# Prepared after the `held` run and not run (no device time was left): where a warm check's time
# goes, from the phases each passing evaluation now records (`phases_s`), and the pool test that
# asserts them.
#   bash benchmarks/s18-2026-12-05/device.sh phases  (about 7 minutes)
if [ "$what" = phases ]; then
  timeout 120 python3 -m pytest -q -s -p no:cacheprovider -m gpu tests/test_pool_gpu.py \
    -k "warm_checks" 2>&1 | tee "$OUT/test-pool-phases.log" | grep -E "warm checks|phases|passed|failed"
  left=$((560 - SECONDS))
  timeout "$left" python3 -m benchmarks.throughput --candidates 3 --out "$OUT/throughput.json" \
    2>&1 | tee "$OUT/throughput.log" | tail -12
fi
