"""Where a wgmma tile's fixed cost goes (written in the twenty-second session, first run in the
twenty-third: benchmarks/s23-2026-12-06/).

The builtin wgmma default (bfloat16, sm_90a: 128x256x64, 2 consumers, 3 stages, TMA-store
epilogue, stream-K, clusters of 2 where N % 16 != 0) is built twice from its rendered source:
as kgen renders it, and with -DKGEN_DIAG_TIMES=1, where thread 0 of each consumer warpgroup
stamps clock64() at five points of each unit (templates/gemm_wgmma.cu, DIAG_STAMP):
0 the unit's start, 1 its first stage ready, 2 its last wgmma issued, 3 its accumulators
drained, 4 its epilogue issued. Each build is launched as kgen launches it (its contract, tensor
maps, clusters), timed with CUDA events (20 launches back to back, median of 5 such runs), and
the stamps of the last diagnostic launch are summed per phase over every CTA and consumer:

  ramp   0 -> 1   waiting for the unit's first stage
  main   1 -> 2   issuing the k-blocks' wgmmas (waits for later stages included)
  drain  2 -> 3   wgmma.wait_group 0: the tensor pipe finishing the last k-blocks
  epi    3 -> 4   the epilogue (stream-K hand-off, accumulators to shared memory, the TMA store)
  gap    4 -> next unit's 0 (the scheduler's next unit; the last unit's end to the CTA's exit is
         not seen)

as shares of the stamped span and in cycles per unit; then the ramp of each consumer's first
unit (the kernel's start: cold rings) apart from the ramp of the later ones (steady state). The
two builds' times say what the stamps cost. Validates each build's output against torch first.
`--set "epi=2"` changes fields of the default first (as benchmarks.gemm_configs does).

    python3 benchmarks/s22-2026-12-06/wgmma_phases.py [--sizes 4096x4096x4096,...] [--set F=V]
        [--json F]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
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

PHASES = ("ramp", "main", "drain", "epi", "gap")
DIAG = (160, 2, 64, 5)  # CTAs, consumers, units, points: DIAG_* in the template


def build(source: str, diag: bool, work: Path) -> cp.RawModule:
    name = "diag" if diag else "plain"
    (work / f"{name}.cu").write_text(source)
    cmd = ["nvcc", "-cubin", "-gencode", "arch=compute_90a,code=sm_90a", "-O3",
           "-o", str(work / f"{name}.cubin"), str(work / f"{name}.cu")]
    subprocess.run(cmd + (["-DKGEN_DIAG_TIMES=1"] if diag else []), check=True)
    return cp.RawModule(path=str(work / f"{name}.cubin"))


def phases(stamps: np.ndarray) -> dict[str, float]:
    """Summed cycles per phase over every CTA and consumer, and the units seen whole (a stream-K
    contributor's piece has no epilogue stamp and is left out, with the gaps beside it)."""
    sums = dict.fromkeys(PHASES, 0.0)
    units = firsts = 0
    ramp_first = 0.0
    for cta in stamps:
        for wg in cta:
            for i, u in enumerate(wg):
                if not (u > 0).all():
                    continue
                units += 1
                for p, name in enumerate(PHASES[:4]):
                    sums[name] += float(u[p + 1] - u[p])
                if i == 0:
                    firsts += 1
                    ramp_first += float(u[1] - u[0])
                if i + 1 < len(wg) and wg[i + 1][0] > 0:
                    sums["gap"] += float(wg[i + 1][0] - u[4])
    return {**sums, "units": units, "first_units": firsts, "ramp_first": ramp_first}


def inputs(spec, m: int, n: int, k: int) -> tuple[dict, dict, torch.Tensor]:
    """The sizes, bfloat16 gemm buffers at them with random A and B, and A @ B in float32."""
    sizes = {"M": m, "N": n, "K": k}
    buffers = allocate(spec, sizes, "bfloat16")
    buffers["A"].data.copy_(torch.randn(m, k, device="cuda").to(torch.bfloat16))
    buffers["B"].data.copy_(torch.randn(k, n, device="cuda").to(torch.bfloat16))
    return sizes, buffers, buffers["A"].data.float() @ buffers["B"].data.float()


def checked(runner: Runner, sizes: dict, buffers: dict, want: torch.Tensor, what: str) -> list:
    """The launch's calls at `sizes`, run once on C poisoned with NaN and checked against `want`,
    then three more times (warm)."""
    calls = runner.prepare(buffers, sizes)
    buffers["C"].data.fill_(float("nan"))
    runner.launch(calls)
    torch.cuda.synchronize()
    err = ((buffers["C"].data.float() - want).abs().max() / want.abs().max()).item()
    assert err < 2e-2, f"{what}: relative error {err}"
    for _ in range(3):
        runner.launch(calls)
    return calls


def checked_ms(runner: Runner, sizes: dict, buffers: dict, want: torch.Tensor, what: str
               ) -> tuple[list, float]:
    """`checked`'s calls and their time: the median of 5 runs of 20 launches back to back (the
    GPU never waits for the host)."""
    calls = checked(runner, sizes, buffers, want, what)
    times = []
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(20):
            runner.launch(calls)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 20)
    return calls, statistics.median(times)


def run_size(spec, runners: dict[str, tuple[Runner, cp.RawModule]], size: tuple[int, int, int]
             ) -> dict:
    m, n, k = size
    sizes, buffers, want = inputs(spec, m, n, k)
    out: dict = {"size": f"{m}x{n}x{k}"}
    for label, (runner, mod) in runners.items():
        calls, out[f"{label}_ms"] = checked_ms(runner, sizes, buffers, want,
                                               f"{label} at {out['size']}")
        out[f"{label}_cluster"] = list(calls[0].cluster)
        if label == "diag":
            stamps = cp.ndarray(DIAG, dtype=cp.int64, memptr=mod.get_global("kgen_diag_t"))
            stamps.fill(0)
            runner.launch(calls)
            torch.cuda.synchronize()
            out["phases"] = phases(cp.asnumpy(stamps))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096x4096x4096,8192x8192x8192,3000x5000x2000,"
                    "3072x5120x2048,4096x4096x2048")
    ap.add_argument("--set", default="", help="field=value ... changed in the default")
    ap.add_argument("--json")
    args = ap.parse_args()
    spec = load_op("gemm")
    # The builtin's first wgmma kernel, with --set's fields changed (checked as gemm_configs does)
    params = configure("sm_90a", "bfloat16", args.set)
    assert isinstance(params, wgmma.WgmmaParams)
    source = wgmma.render(params, "bfloat16")
    work = Path(tempfile.mkdtemp())
    contract, problems = parse_contract(source, spec)
    assert contract is not None, problems
    limits = device_limits()
    runners = {}
    for label in ("plain", "diag"):
        mod = build(source, label == "diag", work)
        functions = {launch.kernel: mod.get_function(launch.kernel)
                     for launch in contract.launches}
        runners[label] = (Runner(functions, contract, limits), mod)
    rows = []
    print(f"wgmma bfloat16 {params.choices}")
    print(f"{'size':>16} {'plain ms':>9} {'diag ms':>9} {'units':>6}  "
          + "  ".join(f"{p:>13}" for p in PHASES) + "  ramp: first, later units")
    for text in args.sizes.split(","):
        m, n, k = (int(v) for v in text.split("x"))
        row = run_size(spec, runners, (m, n, k))
        ph = row["phases"]
        span = sum(ph[p] for p in PHASES) or 1.0
        units = max(ph["units"], 1)
        cells = "  ".join(f"{100 * ph[p] / span:5.1f}% {ph[p] / units:6.0f}" for p in PHASES)
        firsts = max(ph["first_units"], 1)
        later = (ph["ramp"] - ph["ramp_first"]) / max(ph["units"] - ph["first_units"], 1)
        print(f"{row['size']:>16} {row['plain_ms']:9.4f} {row['diag_ms']:9.4f} {units:6d}  {cells}"
              f"  {ph['ramp_first'] / firsts:6.0f} {later:6.0f}")
        rows.append(row)
    print("(each phase: share of the stamped span, and cycles per unit)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
