"""Where the wgmma default's epilogue time goes (twenty-fifth session): wgmma-epi-stamps.patch
adds five clock64() stamps inside store_tile_tma to s22's five (thread 0 of each consumer):

  3 accumulators drained        5 pass 0: the staging area free (bulk wait, barrier)
  6 pass 0: thread 0's writes   7 pass 0: fence and barrier (the warpgroup's writes done)
  8 pass 1: the staging area free again (pass 0's store has read it)
  9 pass 1: written, fence and barrier          4 the last store issued

For each size it prints the median over every CTA, consumer and whole unit of each step, in
cycles (with cpass=1 there is no pass 1: 7 -> 4). Apply the patch first; --set as gemm_configs.

    git apply benchmarks/s25-2026-12-06/wgmma-epi-stamps.patch
    python3 benchmarks/s25-2026-12-06/epi_split.py [--set "stages=3 cpass=1"] [--sizes ...]
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
from pathlib import Path

import numpy as np

from benchmarks.gemm_configs import configure

_spec = importlib.util.spec_from_file_location("stagger_lag", Path(__file__).with_name(
    "stagger_lag.py"))
assert _spec and _spec.loader
stagger_lag = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(stagger_lag)

DIAG = (160, 2, 64, 10)


def steps(stamps: np.ndarray, order: list[int]) -> list[float]:
    rows = []
    for cta in stamps:
        for wg in cta:
            for u in wg:
                if all(u[p] > 0 for p in order):
                    rows.append([float(u[b] - u[a]) for a, b in itertools.pairwise(order)])
    return list(np.median(np.array(rows), axis=0)) + [len(rows)] if rows else []


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="3000x5000x2000,3072x5120x2048,4096x4096x4096")
    ap.add_argument("--set", default="")
    args = ap.parse_args()
    two_passes = getattr(configure("sm_90a", "bfloat16", args.set), "cpass", 1) == 2
    order = [0, 1, 2, 3, 5, 6, 7, 8, 9, 4] if two_passes else [0, 1, 2, 3, 5, 6, 7, 4]
    runs = stagger_lag.stamp_runs(args.set, args.sizes, DIAG, marker="DIAG_STAMP_WG")
    for i, (text, stamps) in enumerate(runs):
        if i == 0:
            names = " ".join(f"{a}->{b}" for a, b in itertools.pairwise(order))
            print(f"median cycles per unit: {names} (units)")
        print(f"{text:>16} " + " ".join(f"{v:7.0f}" for v in steps(stamps, order)))


if __name__ == "__main__":
    main()
