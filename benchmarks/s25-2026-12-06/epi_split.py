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
import tempfile
from pathlib import Path

import cupy as cp
import numpy as np
import torch

from benchmarks.gemm_configs import configure
from kgen.author import wgmma
from kgen.loop.candidate import parse_contract
from kgen.ops import load_op
from sandbox.launch import Runner, allocate, device_limits

_spec = importlib.util.spec_from_file_location(
    "wgmma_phases", Path(__file__).parents[1] / "s22-2026-12-06" / "wgmma_phases.py")
assert _spec and _spec.loader
phases_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(phases_mod)

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
    spec = load_op("gemm")
    params = configure("sm_90a", "bfloat16", args.set)
    assert isinstance(params, wgmma.WgmmaParams)
    source = wgmma.render(params, "bfloat16")
    assert "DIAG_STAMP_WG" in source, "apply wgmma-epi-stamps.patch first"
    contract, problems = parse_contract(source, spec)
    assert contract is not None, problems
    mod = phases_mod.build(source, True, Path(tempfile.mkdtemp()))
    runner = Runner({launch.kernel: mod.get_function(launch.kernel)
                     for launch in contract.launches}, contract, device_limits())
    order = [0, 1, 2, 3, 5, 6, 7, 8, 9, 4] if params.cpass == 2 else [0, 1, 2, 3, 5, 6, 7, 4]
    names = " ".join(f"{a}->{b}" for a, b in itertools.pairwise(order))
    print(f"wgmma bfloat16 {params.choices}\nmedian cycles per unit: {names} (units)")
    for text in args.sizes.split(","):
        m, n, k = (int(v) for v in text.split("x"))
        sizes = {"M": m, "N": n, "K": k}
        buffers = allocate(spec, sizes, "bfloat16")
        buffers["A"].data.copy_(torch.randn(m, k, device="cuda").to(torch.bfloat16))
        buffers["B"].data.copy_(torch.randn(k, n, device="cuda").to(torch.bfloat16))
        want = buffers["A"].data.float() @ buffers["B"].data.float()
        calls = runner.prepare(buffers, sizes)
        buffers["C"].data.fill_(float("nan"))
        runner.launch(calls)
        torch.cuda.synchronize()
        err = ((buffers["C"].data.float() - want).abs().max() / want.abs().max()).item()
        assert err < 2e-2, f"{text}: relative error {err}"
        for _ in range(3):
            runner.launch(calls)
        stamps = cp.ndarray(DIAG, dtype=cp.int64, memptr=mod.get_global("kgen_diag_t"))
        stamps.fill(0)
        runner.launch(calls)
        torch.cuda.synchronize()
        med = steps(cp.asnumpy(stamps), order)
        print(f"{text:>16} " + " ".join(f"{v:7.0f}" for v in med))


if __name__ == "__main__":
    main()
