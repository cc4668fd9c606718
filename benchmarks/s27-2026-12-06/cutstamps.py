"""Where a wide last-round cut loses its time (twenty-seventh session).

The wgmma default (bfloat16, sm_90a) is built with -DKGEN_DIAG_TIMES=1 (the template's
DIAG_STAMP: thread 0 of each consumer warpgroup stamps five points of each unit: start, first
stage ready, last wgmma issued, accumulators drained, epilogue issued), once as kgen renders it
and once with `#define SK_WIDE 1` in front (streamk.cuh: a last round more than half full cut
along K over every CTA or cluster). Each point is stamped twice: clock64() (per SM) and
%globaltimer (nanoseconds, one clock for the whole GPU, so the CTAs' timelines line up). Per
size and build: the output checked against torch, the plain build's time (CUDA events, 20
launches back to back, median of 5), then one stamped launch, its stamps saved raw to
$OUT/cutstamps.npz (key "wide{0,1}-MxNxK", shape CTAs x 2 consumers x 64 units x 10 points:
clock64 at 0-4, globaltimer at 5-9) with the times in $OUT/cutstamps.json.

    python3 benchmarks/s27-2026-12-06/cutstamps.py [--sizes 3072x5120x2048,3000x5000x2000]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import tempfile
from pathlib import Path

import cupy as cp
import numpy as np
import torch

from kgen.arch import parse_arch
from kgen.author import space, wgmma
from kgen.loop.candidate import parse_contract
from kgen.ops import load_op
from sandbox.launch import Runner, device_limits

_here = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "wgmma_phases", _here.parent / "s22-2026-12-06" / "wgmma_phases.py")
assert _spec and _spec.loader
phases_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(phases_mod)

SHAPE = (160, 2, 64, 10)
# The stamp macro's clock64() line, then a second stamp of %globaltimer at point + 5 (macro
# continuation lines; the padding before each backslash does not matter).
STAMP = re.compile(r"^( +clock64\(\);) +\\$", re.M)
GLOBAL = "\n".join([
    r"\1 \\",
    r"    if (lt == 0 && (unit) < DIAG_UNITS && blockIdx.x < DIAG_CTAS && wg < 2) { \\",
    r"      unsigned long long g_; \\",
    r'      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g_)); \\',
    r"      kgen_diag_t[((blockIdx.x * 2 + wg) * DIAG_UNITS + (unit)) * DIAG_POINTS + (point) + \\",
    r"                  5] = (long long)g_; \\",
    r"    } \\",
])


def source(wide: bool) -> str:
    text = wgmma.render(space.default(parse_arch("sm_90a", check_nvcc=False), "bfloat16"),
                        "bfloat16")
    assert text.count("DIAG_POINTS = 5;") == 1 and len(STAMP.findall(text)) == 1
    text = STAMP.sub(GLOBAL, text.replace("DIAG_POINTS = 5;", "DIAG_POINTS = 10;"))
    return ("#define SK_WIDE 1\n" if wide else "") + text


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="3072x5120x2048,3000x5000x2000")
    args = ap.parse_args()
    out = Path(os.environ.get("OUT", "/tmp"))
    spec = load_op("gemm")
    limits = device_limits()
    stamps: dict[str, np.ndarray] = {}
    rows = []
    for wide in (0, 1):
        text = source(bool(wide))
        contract, problems = parse_contract(text, spec)
        assert contract is not None, problems
        work = Path(tempfile.mkdtemp())
        runners = {}
        for diag in (False, True):
            mod = phases_mod.build(text, diag, work)
            functions = {launch.kernel: mod.get_function(launch.kernel)
                         for launch in contract.launches}
            runners[diag] = (Runner(functions, contract, limits), mod)
        for item in args.sizes.split(","):
            m, n, k = (int(v) for v in item.split("x"))
            sizes, buffers, want = phases_mod.inputs(spec, m, n, k)
            row: dict = {"size": item, "wide": wide}
            for diag, (runner, mod) in runners.items():
                calls, row["diag_ms" if diag else "ms"] = phases_mod.checked_ms(
                    runner, sizes, buffers, want, f"wide {wide} diag {diag} at {item}")
                row["grid"] = list(calls[0].grid)
                row["cluster"] = list(calls[0].cluster)
                if diag:
                    t = cp.ndarray(SHAPE, dtype=cp.int64, memptr=mod.get_global("kgen_diag_t"))
                    t.fill(0)
                    runner.launch(calls)
                    torch.cuda.synchronize()
                    stamps[f"wide{wide}-{item}"] = cp.asnumpy(t)
            print(json.dumps(row), flush=True)
            rows.append(row)
    np.savez_compressed(out / "cutstamps.npz", **stamps)
    (out / "cutstamps.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
