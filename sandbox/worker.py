"""The worker process: `python -m kgen.sandbox.worker [--canary | --serve | --mode MODE] WORKDIR`.

Spawned as a new process (never forked from a process with CUDA). One-shot: reads request.json
and kernel.cubin from WORKDIR, writes result.json there, and exits hard (os._exit) so that a hung or
broken CUDA context can never stall the teardown. `--serve` (kgen.gpu.pool): torch is imported and
the GPU checked once, then candidate after candidate is judged (see serve). MODE profile or
sanitize runs one launch of the candidate under ncu or compute-sanitizer instead (probe.py).
Imports only the standard library, torch, cupy and kgen's shared types.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgen.sandbox.rejected import Rejected
from kgen.verdict import Evaluation, Timing
from kgen.wire import (
    BINARY_FILE,
    PEAKS_FILE,
    READY_JOB,
    REQUEST_FILE,
    RESULT_FILE,
    EvalRequest,
)

if TYPE_CHECKING:  # imported lazily, like the rest of the GPU side of the worker
    from kgen.sandbox.timing import Stopwatch

# Peaks measured in this process (bandwidth, matmul rate per dtype): a serving worker measures them
# once; the pool hands them to the next worker on the same GPU through PEAKS_FILE.
_MEASURED: dict[str, float | None] = {}


def _setup_torch() -> Any:
    import torch

    # The baseline must do the same math the spec asks for: no TF32, no reduced-precision sums.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for name in ("allow_fp16_reduced_precision_reduction",
                 "allow_bf16_reduced_precision_reduction"):
        if hasattr(torch.backends.cuda.matmul, name):
            setattr(torch.backends.cuda.matmul, name, False)
    torch.set_grad_enabled(False)  # references and baselines are inference; no autograd cost
    torch.cuda.init()
    return torch


def device_info() -> dict[str, Any]:
    import cupy
    import torch

    props = torch.cuda.get_device_properties(0)
    attrs = cupy.cuda.Device().attributes
    return {"name": props.name, "cc": props.major * 10 + props.minor,
            "sms": props.multi_processor_count,
            "clock_hz": float(attrs.get("ClockRate", 1_500_000)) * 1e3}


def evaluate(workdir: Path) -> Evaluation:
    """Validate, time, re-validate; the first failed check raises Rejected."""
    from kgen.sandbox import timing
    from kgen.sandbox.launch import Runner, device_limits, load_module
    from kgen.sandbox.validate import validate

    req = EvalRequest.from_json(json.loads((workdir / REQUEST_FILE).read_text()))
    try:  # before the candidate is touched: a failure here is the machine's, not the kernel's
        _setup_torch()
        info = device_info()
    except Exception as exc:
        return Evaluation("launch_error", f"the GPU stack does not work here: "
                          f"{type(exc).__name__}: {exc}"[:500], extra={"environment": True})
    device = f"{info['name']}, sm_{info['cc']}"
    watch = timing.Stopwatch()
    functions = load_module(workdir / BINARY_FILE, req.contract)
    runner = Runner(functions, req.contract, device_limits(), req.spec.params)
    watch.lap("load")
    checks = []
    runs = validate(runner, req.spec, req.dtype, req.test_sizes, req.seed, req.input_sets,
                    req.kernel_timeout_s)
    watch.lap("validate")
    checks.append(f"validated {len(req.test_sizes)} sizes x {req.input_sets} fresh input sets "
                  f"({runs} runs): outputs poisoned (NaN; a pattern for integers), guard bands, "
                  "inputs and weights checked")
    timings: list[Timing] = []
    if req.bench_sizes:
        timings, timed = _time_all(runner, req, info, watch)
        checks += timed
    if req.revalidate_sizes:
        validate(runner, req.spec, req.dtype, req.revalidate_sizes, req.seed + 999_983, 2,
                 req.kernel_timeout_s, stage=", after timing")
        checks.append(f"re-validated {len(req.revalidate_sizes)} sizes on fresh inputs after "
                      "timing")
        watch.lap("revalidate")
    return Evaluation("pass", f"all checks passed at {len(req.test_sizes)} sizes", tuple(timings),
                     device, checks=tuple(checks), extra={"phases_s": watch.rounded()})


def _measured(what: str, dtype: str) -> float | None:
    """A device peak, measured on first use in this process (or handed over by the pool)."""
    from kgen.sandbox import timing

    key = f"{what}:{dtype}"
    if key not in _MEASURED:
        _MEASURED[key] = (timing.measure_bandwidth() if what == "bandwidth"
                          else timing.measure_matmul_rate(dtype))
    return _MEASURED[key]


def _time_all(runner: Any, req: EvalRequest, info: dict[str, Any], watch: Stopwatch
              ) -> tuple[list[Timing], list[str]]:
    """Every bench size timed against the baseline; the timings and what the checks say."""
    from kgen.sandbox import roofline, timing

    peaks = replace(roofline.peaks_for(info["name"], info["cc"], info["sms"], info["clock_hz"],
                                       _measured("bandwidth", "")),
                    measured_flops=_measured("matmul", req.dtype))
    watch.lap("peaks")
    timings, notes = [], set()
    for i, sizes in enumerate(req.bench_sizes):
        try:
            measured, note = timing.measure(runner, req.spec, req.dtype, sizes,
                                            req.seed + 31 * i, req.bench_budget_s,
                                            req.kernel_timeout_s, peaks, req.compile_baseline,
                                            watch)
        except Rejected as rejected:  # the size it failed at: where the sanitizer re-runs it
            rejected.sizes = rejected.sizes or dict(sizes)
            raise
        timings.append(measured)
        notes.add(note)
    also = " and torch.compile of it" if req.compile_baseline else ""
    checks = [f"timed {len(timings)} sizes against {timing.baseline_name(req.spec)}{also}, L2 "
              f"flushed before each launch; roofline from {roofline.describe(peaks)}"]
    return timings, checks + sorted(n for n in notes if n)


def run_canary() -> Evaluation:
    """A tiny kernel with a known answer: is the GPU usable after the last worker died?"""
    torch = _setup_torch()
    info = device_info()
    x = torch.arange(1 << 20, device="cuda", dtype=torch.float64)
    total = float((x * 2 + 1).sum())
    torch.cuda.synchronize()
    expected = float((1 << 20) ** 2)  # sum of the first n odd numbers is n^2
    verdict = "pass" if total == expected else "wrong"
    import cupy

    return Evaluation(verdict, f"canary sum {total:.0f}, expected {expected:.0f}",
                     device=f"{info['name']}, sm_{info['cc']}",
                     extra={"torch": torch.__version__, "cupy": cupy.__version__,
                            "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion()})


def _classify(exc: BaseException) -> Evaluation:
    from kgen.sandbox.launch import is_sticky

    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, ImportError):
        return Evaluation("launch_error", f"the worker cannot run here: {text}",
                         extra={"environment": True})
    verdict = "crash" if is_sticky(text) or "CUDA" in text else "launch_error"
    tail = "".join(traceback.format_exception(exc)[-3:])[-1500:]
    return Evaluation(verdict, text[:1500], extra={"traceback": tail})


def judge(workdir: Path, canary: bool) -> dict[str, Any]:
    """One evaluation (or the canary) as the JSON record; every outcome is a verdict."""
    start = time.monotonic()
    try:
        result = run_canary() if canary else evaluate(workdir)
    except Rejected as rejected:  # the sizes it failed at: where the sanitizer re-runs it
        result = Evaluation(rejected.verdict, rejected.message,
                            extra={"sizes": rejected.sizes} if rejected.sizes else {})
    except Exception as exc:  # anything else is still a verdict, never a traceback in the loop
        result = _classify(exc)
    data = result.to_json()
    data["seconds"] = round(time.monotonic() - start, 3)
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    """Whole or not at all: the pool polls for the file's name."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def serve(workdir: Path) -> None:
    """Run the canary into READY_JOB/result.json; then, for each stdin line `eval NAME` or
    `canary NAME`, judge the job folder WORKDIR/NAME into NAME/result.json. Ends at EOF, and after
    a verdict that may leave the CUDA context broken (crash, timeout): the pool starts another."""
    peaks = workdir / PEAKS_FILE
    if peaks.is_file():
        _MEASURED.update({k: v for k, v in json.loads(peaks.read_text()).items()
                          if v is None or isinstance(v, float)})
    ready = judge(workdir, canary=True)
    (workdir / READY_JOB).mkdir(exist_ok=True)
    _write(workdir / READY_JOB / RESULT_FILE, ready)
    if ready["verdict"] != "pass":
        os._exit(0)
    while line := sys.stdin.readline():
        kind, _, name = line.strip().partition(" ")
        job = workdir / name
        if not name or "/" in name or not job.is_dir():
            continue  # only the pool writes here; ignore anything else
        data = judge(job, canary=kind == "canary")
        data["extra"] = {**data.get("extra", {}), "peaks": dict(_MEASURED)}
        _write(job / RESULT_FILE, data)
        sys.stdout.flush()
        if data["verdict"] in ("crash", "timeout"):
            os._exit(0)
        _release_memory()
    os._exit(0)


def _release_memory() -> None:
    """Between candidates: drop the last one's buffers so N workers can share one GPU."""
    import gc

    gc.collect()
    try:
        import cupy
        import torch

        torch.cuda.empty_cache()
        cupy.get_default_memory_pool().free_all_blocks()
    except Exception:
        pass  # only memory hygiene; the next candidate still runs


def main(argv: list[str]) -> None:
    workdir = Path([a for a in argv if not a.startswith("--")][-1])
    if "--serve" in argv:
        serve(workdir)
    mode = argv[argv.index("--mode") + 1] if "--mode" in argv else "evaluate"
    if mode in ("profile", "sanitize"):  # one launch under ncu or compute-sanitizer
        from kgen.sandbox import probe

        probe.run(workdir, mode)
        sys.stdout.flush()
        os._exit(0)
    data = judge(workdir, canary="--canary" in argv)
    (workdir / RESULT_FILE).write_text(json.dumps(data))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
