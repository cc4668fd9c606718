"""Does a late start of the wgmma default's second consumer (stagger=N) last, and does it
overlap one consumer's epilogue with the other's main loop? (Twenty-fifth session.)

Builds the default with --set's fields changed and -DKGEN_DIAG_TIMES=1 (s22's clock64() stamps:
0 unit start, 1 first stage ready, 2 last wgmma issued, 3 accumulators drained, 4 epilogue
issued), launches it once per size after a validated warm-up, and prints, over every CTA, the lag
of consumer 1's unit starts behind consumer 0's (median, 10th and 90th percentile, for the first
unit and for the later ones), and how much of consumer 0's epilogues (3 -> 4) fell while
consumer 1 was still in its main loop or drain (1 -> 3).

    python3 benchmarks/s25-2026-12-06/stagger_lag.py --set "stagger=1000" [--sizes ...]
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
from collections.abc import Iterator
from pathlib import Path

import cupy as cp
import numpy as np
import torch

from benchmarks.gemm_configs import configure
from kgen.author import wgmma
from kgen.loop.candidate import parse_contract
from kgen.ops import load_op
from sandbox.launch import Runner, device_limits

_spec = importlib.util.spec_from_file_location(
    "wgmma_phases", Path(__file__).parents[1] / "s22-2026-12-06" / "wgmma_phases.py")
assert _spec and _spec.loader
phases_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(phases_mod)


def lag_stats(stamps: np.ndarray) -> dict[str, float]:
    first, later, overlap, epi = [], [], 0.0, 0.0
    for cta in stamps:
        c0, c1 = cta[0], cta[1]
        for i in range(len(c0)):
            if not ((c0[i] > 0).all() and (c1[i] > 0).all()):
                continue
            (first if i == 0 else later).append(float(c1[i][0] - c0[i][0]))
            lo, hi = c0[i][3], c0[i][4]  # consumer 0's epilogue
            # consumer 1's main loop and drain of the same unit index, and of the one before
            for j in (i - 1, i):
                if j >= 0 and (c1[j] > 0).all():
                    overlap += max(0.0, float(min(hi, c1[j][3]) - max(lo, c1[j][1])))
            epi += float(hi - lo)

    def pct(v: list[float], q: float) -> float:
        return float(np.percentile(v, q)) if v else float("nan")
    return {"first_p50": pct(first, 50), "later_p10": pct(later, 10),
            "later_p50": pct(later, 50), "later_p90": pct(later, 90),
            "epi_overlap": overlap / epi if epi else float("nan")}


def stamp_runs(fields: str, sizes: str, diag: tuple[int, ...], marker: str = ""
               ) -> Iterator[tuple[str, np.ndarray]]:
    """Build the bfloat16 default with `fields` changed and -DKGEN_DIAG_TIMES=1 (its source must
    hold `marker`), print its choices, and for each size validate it against torch, warm it up,
    and yield the stamps of one more launch, shaped `diag`."""
    spec = load_op("gemm")
    params = configure("sm_90a", "bfloat16", fields)
    assert isinstance(params, wgmma.WgmmaParams)
    source = wgmma.render(params, "bfloat16")
    assert marker in source, f"{marker} is not in the template: apply its patch first"
    contract, problems = parse_contract(source, spec)
    assert contract is not None, problems
    mod = phases_mod.build(source, True, Path(tempfile.mkdtemp()))
    runner = Runner({launch.kernel: mod.get_function(launch.kernel)
                     for launch in contract.launches}, contract, device_limits())
    print(f"wgmma bfloat16 {params.choices}")
    for text in sizes.split(","):
        m, n, k = (int(v) for v in text.split("x"))
        calls = phases_mod.checked(runner, *phases_mod.inputs(spec, m, n, k), text)
        stamps = cp.ndarray(diag, dtype=cp.int64, memptr=mod.get_global("kgen_diag_t"))
        stamps.fill(0)
        runner.launch(calls)
        torch.cuda.synchronize()
        yield text, cp.asnumpy(stamps)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="3000x5000x2000,4096x4096x4096")
    ap.add_argument("--set", default="")
    args = ap.parse_args()
    for text, stamps in stamp_runs(args.set, args.sizes, phases_mod.DIAG):
        s = lag_stats(stamps)
        print(f"{text:>16}  lag of consumer 1 (cycles): first unit {s['first_p50']:7.0f}, later "
              f"units p10 {s['later_p10']:7.0f} p50 {s['later_p50']:7.0f} p90 "
              f"{s['later_p90']:7.0f}; consumer 0's epilogue overlapped by consumer 1's main "
              f"loop: {100 * s['epi_overlap']:4.1f}%")


if __name__ == "__main__":
    main()
