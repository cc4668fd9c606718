"""What clock and power the builtin gemm defaults and cuBLAS run at, and which kernel cuBLAS picks
(twenty-sixth session).

Two questions no earlier session asked:
- `names`: which kernel cuBLAS launches for each bench size and dtype (torch.profiler's kernel
  name, which on Hopper spells the tile, the stages and the cluster), so that its shape at the
  ragged size can be compared with the wgmma default's;
- `clocks`: whether our kernels lose to cuBLAS per cycle or per second. Each subject is launched
  back to back for `--seconds` while `nvidia-smi` is polled for the SM clock and the power draw; the
  time per launch times the median clock gives cycles per launch. A kernel that draws more power
  runs at a lower clock once the card is at its power limit, which a cycle count alone would not
  show.

Subjects: the float32 SIMT default (sm_90), the bfloat16 wgmma default (sm_90a), each validated
first (outputs poisoned, against float64 torch), and cuBLAS through torch.matmul in the same dtype
(TF32 off for float32). They alternate, twice.

    python3 benchmarks/s26-2026-12-06/clocks.py names
    python3 benchmarks/s26-2026-12-06/clocks.py clocks [--seconds 2.5] [--settle 0.5]
        [--gap 0.5] [--dtypes float32,bfloat16] [--sizes MxNxK,...]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import cupy as cp
import torch

from benchmarks.gemm_configs import configure, parse_sizes
from kgen.author import space
from kgen.loop.candidate import parse_contract
from kgen.ops import load_op
from sandbox.launch import Runner, allocate, device_limits

SIZES = {"float32": ["4096x4096x4096", "8192x8192x8192", "3000x5000x2000"],
         "bfloat16": ["4096x4096x4096", "8192x8192x8192", "3000x5000x2000", "3072x5120x2048"]}
ARCH = {"float32": "sm_90", "bfloat16": "sm_90a"}
TORCH_DTYPE = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def dims(text: str) -> tuple[int, int, int]:
    """`MxNxK` as (M, N, K), read as gemm_configs' --sizes is."""
    (size,) = parse_sizes(text)
    return size["M"], size["N"], size["K"]


def cublas_names() -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    for dtype, sizes in SIZES.items():
        for text in sizes:
            m, n, k = dims(text)
            a = torch.randn(m, k, device="cuda", dtype=TORCH_DTYPE[dtype])
            b = torch.randn(k, n, device="cuda", dtype=TORCH_DTYPE[dtype])
            torch.matmul(a, b)
            torch.cuda.synchronize()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                torch.matmul(a, b)
                torch.cuda.synchronize()
            kernels = sorted({e.name for e in prof.events()
                              if e.device_type == torch.autograd.DeviceType.CUDA})
            print(f"{dtype:>9} {text:>16}: {' | '.join(kernels)}", flush=True)


def builtin_launcher(dtype: str, text: str) -> Callable[[], None]:
    """The builtin default for `dtype`, validated at `text`; a function that launches it once."""
    spec = load_op("gemm")
    arch = ARCH[dtype]
    params = configure(arch, dtype, "")
    source = space.render(params, dtype)
    contract, problems = parse_contract(source, spec)
    assert contract is not None, problems
    work = Path(tempfile.mkdtemp())
    (work / "k.cu").write_text(source)
    code = arch.removeprefix("sm_")
    subprocess.run(["nvcc", "-cubin", "-gencode", f"arch=compute_{code},code=sm_{code}", "-O3",
                    "-o", str(work / "k.cubin"), str(work / "k.cu")], check=True)
    mod = cp.RawModule(path=str(work / "k.cubin"))
    runner = Runner({launch.kernel: mod.get_function(launch.kernel)
                     for launch in contract.launches}, contract, device_limits())
    m, n, k = dims(text)
    sizes = {"M": m, "N": n, "K": k}
    buffers = allocate(spec, sizes, dtype)
    buffers["A"].data.copy_(torch.randn(m, k, device="cuda").to(TORCH_DTYPE[dtype]))
    buffers["B"].data.copy_(torch.randn(k, n, device="cuda").to(TORCH_DTYPE[dtype]))
    want = buffers["A"].data.double() @ buffers["B"].data.double()
    calls = runner.prepare(buffers, sizes)
    buffers["C"].data.fill_(float("nan"))
    runner.launch(calls)
    torch.cuda.synchronize()
    err = ((buffers["C"].data.double() - want).abs().max() / want.abs().max()).item()
    assert err < (1e-4 if dtype == "float32" else 2e-2), f"{dtype} {text}: relative error {err}"
    print(f"builtin {dtype} {params.choices}: validated at {text} (max error {err:.1e} of max |C|)",
          flush=True)
    return lambda: runner.launch(calls)


def cublas_launcher(dtype: str, text: str) -> Callable[[], None]:
    torch.backends.cuda.matmul.allow_tf32 = False
    m, n, k = dims(text)
    a = torch.randn(m, k, device="cuda").to(TORCH_DTYPE[dtype])
    b = torch.randn(k, n, device="cuda").to(TORCH_DTYPE[dtype])
    c = torch.empty(m, n, device="cuda", dtype=TORCH_DTYPE[dtype])

    def launch() -> None:
        torch.matmul(a, b, out=c)
    return launch


class Sampler:
    """nvidia-smi's SM clock (MHz), power draw (W), temperature and clock event reasons, polled
    about every 100 ms, each sample stamped with the middle of its query."""

    FIELDS = ("clocks.sm,power.draw.instant,temperature.gpu,clocks_event_reasons.active",
              "clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active")

    def __init__(self) -> None:
        self.samples: list[tuple[float, list[str]]] = []
        self.fields = next((f for f in self.FIELDS if subprocess.run(
            ["nvidia-smi", f"--query-gpu={f}", "--format=csv"], capture_output=True
        ).returncode == 0), "clocks.sm,power.draw,temperature.gpu,pstate")
        print(f"sampling {self.fields}", flush=True)
        self.running = True
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        while self.running:
            t0 = time.monotonic()
            out = subprocess.run(["nvidia-smi", f"--query-gpu={self.fields}",
                                  "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True).stdout
            t1 = time.monotonic()
            if out.strip():
                self.samples.append(((t0 + t1) / 2, [v.strip() for v in out.split(",")]))
            time.sleep(max(0.0, 0.1 - (t1 - t0)))

    def between(self, t0: float, t1: float) -> list[list[str]]:
        return [v for t, v in self.samples if t0 <= t <= t1]

    def stop(self) -> None:
        self.running = False
        self.thread.join(timeout=5)


def timed(launch: Callable[[], None], seconds: float, sampler: Sampler, settle: float) -> str:
    for _ in range(3):
        launch()
    torch.cuda.synchronize()
    t = time.monotonic()
    launch()
    torch.cuda.synchronize()
    # batches of about 20 ms, one queued while the one before runs, so the GPU never waits
    batch = max(2, int(0.02 / max(time.monotonic() - t, 1e-5)))
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t_begin = time.monotonic()
    count = 0
    start.record()
    before: torch.cuda.Event | None = None
    mid, count_mid = None, 0  # the launches after `settle` seconds, timed on their own
    while time.monotonic() - t_begin < seconds:
        if mid is None and time.monotonic() - t_begin >= settle:
            mid, count_mid = torch.cuda.Event(enable_timing=True), count
            mid.record()
        for _ in range(batch):
            launch()
        count += batch
        done = torch.cuda.Event()
        done.record()
        if before is not None:
            before.synchronize()
        before = done
    stop.record()
    torch.cuda.synchronize()
    t_end = time.monotonic()
    ms_all = start.elapsed_time(stop) / count
    ms = mid.elapsed_time(stop) / (count - count_mid) if mid is not None else ms_all
    # the first `settle` seconds are the clock settling; sample only what follows
    rows = sampler.between(t_begin + settle, t_end)
    if not rows:
        return f"{ms:8.4f} ms/launch (whole run {ms_all:.4f}), no clock samples"
    mhz = statistics.median(float(r[0]) for r in rows)
    powers = [float(r[1]) for r in rows if r[1].replace(".", "", 1).isdigit()]
    watts = statistics.median(powers) if powers else float("nan")
    temp = max(int(r[2]) for r in rows)
    reasons = sorted({r[3] for r in rows})
    kcycles = ms * mhz  # ms x MHz = thousands of cycles
    low = min(float(r[0]) for r in rows)
    return (f"{ms:8.4f} ms/launch (whole run {ms_all:.4f}), "
            f"SM clock {mhz:6.0f} MHz (min {low:.0f}), "
            f"{watts:5.0f} W ({watts * ms:.0f} mJ/launch), {temp} C, "
            f"{kcycles:9.0f} kcycles/launch, "
            f"event reasons {','.join(reasons)}, {len(rows)} samples")


def clocks(seconds: float, settle: float, dtypes: list[str], sizes: list[str] | None,
           gap: float) -> None:
    """Each size's builtin and cuBLAS runs in the order AB BA (a card that heats up or a clock
    that has not recovered from the run before favours neither)."""
    sampler = Sampler()
    time.sleep(1.0)
    try:
        for dtype in dtypes:
            for text in sizes or SIZES[dtype][:3]:
                subjects = [("builtin", builtin_launcher(dtype, text)),
                            ("cuBLAS", cublas_launcher(dtype, text))]
                for rep in range(2):
                    for name, launch in subjects if rep == 0 else subjects[::-1]:
                        print(f"{dtype:>9} {text:>16} {name:>7} #{rep}: "
                              f"{timed(launch, seconds, sampler, settle)}", flush=True)
                        time.sleep(gap)
    finally:
        sampler.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["names", "clocks"])
    ap.add_argument("--seconds", type=float, default=2.5)
    ap.add_argument("--settle", type=float, default=0.5, help="seconds of each run not sampled")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--sizes", default="", help="MxNxK,... (default: the bench sizes)")
    ap.add_argument("--gap", type=float, default=0.5, help="idle seconds between runs")
    args = ap.parse_args()
    print(subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,power.limit,"
                          "clocks.max.sm,clocks.max.mem", "--format=csv"],
                         capture_output=True, text=True).stdout, flush=True)
    if args.mode == "names":
        cublas_names()
    else:
        clocks(args.seconds, args.settle, args.dtypes.split(","),
               args.sizes.split(",") if args.sizes else None, args.gap)


if __name__ == "__main__":
    main()
