#!/usr/bin/env bash
# One call on a GPU machine that has no package registry (see ../shared/docs/gpu.md): unpack the
# carried bubblewrap (.deb/) and wheels (.whl/), then `make test-gpu` and `make bench`, with logs
# under $OUT. Usage: scripts/device-check.sh [test|bench|all|throughput|experiment] [pytest args]
#   throughput: benchmarks/throughput.py (candidates per minute, fresh vs warm workers, ~2 min)
#   experiment: benchmarks/experiment_demo.py with 2 warm workers on the GPU (needs .whl/openai);
#               the experiment folder comes back as $OUT/experiment-demo.tgz
set -uo pipefail
what=${1:-all}; shift || true
OUT=${OUT:-/tmp/kgen-out}; mkdir -p "$OUT"
source scripts/device-env.sh
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm --format=csv,noheader
python3 -m kgen doctor 2>&1 | tee "$OUT/doctor.log"
status=0
if [ "$what" = test ] || [ "$what" = all ]; then
  python3 -m pytest -q -p no:cacheprovider -m gpu "$@" 2>&1 | tee "$OUT/test-gpu.log" | tail -40
  status=${PIPESTATUS[0]}
  # The demo: the builtin author on this GPU ends with a validated, timed best.cu.
  python3 -m kgen generate --op gemm --arch "$(nvidia-smi --query-gpu=compute_cap \
    --format=csv,noheader | head -1 | tr -d . | sed 's/^/sm_/')" --dtype float16 --rounds 4 \
    --out /tmp/kgen-demo --json 2>&1 | tee "$OUT/generate.log" | tail -12
  cp /tmp/kgen-demo/report.md "$OUT/generate-report.md" 2>/dev/null
  # What the profile and the sanitizer cost per candidate on this GPU (README: Cost).
  python3 -m benchmarks.feedback_cost --json "$OUT/feedback-cost.json" 2>&1 \
    | tee "$OUT/feedback-cost.log" | tail -8
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  python3 -m benchmarks.bench_table --out /tmp/kgen-runs 2>&1 | tee "$OUT/bench.log"
  cp /tmp/kgen-runs/bench-*.json "$OUT/" 2>/dev/null
  tar czf "$OUT/runs.tgz" -C /tmp kgen-runs 2>/dev/null
fi
if [ "$what" = throughput ]; then
  python3 -m benchmarks.throughput --out "$OUT/throughput.json" 2>&1 | tee "$OUT/throughput.log"
  status=${PIPESTATUS[0]}
fi
if [ "$what" = experiment ]; then
  python3 -m benchmarks.experiment_demo --out /tmp/kgen-exp/experiment-demo --workers 2 "$@" \
    2>&1 | tee "$OUT/experiment.log" | tail -30
  status=${PIPESTATUS[0]}
  tar czf "$OUT/experiment-demo.tgz" -C /tmp/kgen-exp experiment-demo experiment-demo.yaml
fi
exit $status
