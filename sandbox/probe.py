"""The worker's profile and sanitize modes: one launch of the candidate, run under a tool the
parent wraps around the worker (ncu, compute-sanitizer), which reads the tool's own output.

profile: at the first bench size, after PROFILE_WARMUP launches of the whole contract, one more
inside a profiler range (cudaProfilerStart/Stop: ncu runs with --profile-from-start off and a
kernel-name filter, so it measures that run's launches and never torch's kernels).
sanitize: at the given (smallest failing) size, each tensor in an exact-size allocation of its own
(cudaMalloc, no guard bands, no caching allocator) so memcheck sees every byte out of bounds;
outputs left uninitialized, so initcheck sees a kernel that reads them before writing. No torch
CUDA work happens in this mode: only the candidate's kernels run.

Writes PROBE_FILE: what ran, at which sizes, and every buffer's address range.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kgen.sandbox.launch import Runner, allocate, device_limits, load_module, poison, wait
from kgen.sandbox.rejected import Rejected
from kgen.sandbox.validate import label, load_inputs, make_inputs
from kgen.wire import BINARY_FILE, PROBE_FILE, PROFILE_WARMUP, REQUEST_FILE, EvalRequest


def run(workdir: Path, mode: str) -> None:
    """Run one probe and write PROBE_FILE (the parent reads it after the tool exits)."""
    req = EvalRequest.from_json(json.loads((workdir / REQUEST_FILE).read_text()))
    sizes = req.bench_sizes[0] if mode == "profile" else req.test_sizes[0]
    record: dict[str, Any] = {"mode": mode, "sizes": sizes, "buffers": {}, "error": "",
                              "launched": False}
    try:
        runner = Runner(load_module(workdir / BINARY_FILE, req.contract), req.contract,
                        device_limits())
        if mode == "profile":
            _profile(runner, req, sizes)
        else:
            _sanitize(runner, req, sizes, lambda layout: _write(workdir, record | layout))
        record["launched"] = True
    except Rejected as rejected:  # a launch that fails under the tool is what the tool reports
        record["error"] = f"{rejected.verdict}: {rejected.message}"[:1000]
    except Exception as exc:
        record["error"] = f"{type(exc).__name__}: {exc}"[:1000]
    previous = workdir / PROBE_FILE
    if previous.exists():  # keep the buffer layout written before the launch
        record["buffers"] = json.loads(previous.read_text()).get("buffers", {})
    _write(workdir, record)


def _profile(runner: Runner, req: EvalRequest, sizes: dict[str, int]) -> None:
    import torch

    torch.cuda.init()
    # Drawn on the GPU, as the bench sizes are when timed; ncu's kernel filter skips torch's.
    inputs = make_inputs(req.spec, sizes, req.dtype, req.seed, device="cuda")
    buffers = allocate(req.spec, sizes, req.dtype)
    load_inputs(buffers, inputs)
    calls = runner.prepare(buffers, sizes)
    for _ in range(PROFILE_WARMUP):  # module load, clocks, caches: outside the profiled range
        poison(buffers)
        runner.launch(calls)
    wait(f"the warm-up launches at {label(req.dtype, sizes)}", req.kernel_timeout_s)
    poison(buffers)
    torch.cuda.profiler.start()  # the run ncu measures: whichever launch lines run at these sizes
    try:
        runner.launch(calls)
        wait(f"the profiled launch at {label(req.dtype, sizes)}", req.kernel_timeout_s)
    finally:
        torch.cuda.profiler.stop()


class _Exact:
    """A device allocation of exactly one tensor's bytes, shaped like a Buffer for Runner."""

    def __init__(self, name: str, role: str, nbytes: int, element: int):
        import cupy

        self.name, self.role, self.nbytes, self.element = name, role, nbytes, element
        self.ptr = cupy.cuda.runtime.malloc(max(nbytes, 1))
        self.data = self  # Runner.prepare reads buffers[name].data.data_ptr()

    def data_ptr(self) -> int:
        return int(self.ptr)


def _sanitize(runner: Runner, req: EvalRequest, sizes: dict[str, int],
              save: Callable[[dict[str, Any]], None]) -> None:
    """Exact allocations, inputs copied in, the layout saved, one launch."""
    import cupy

    from kgen.dtypes import DTYPES

    element = DTYPES[req.dtype].size
    inputs = make_inputs(req.spec, sizes, req.dtype, req.seed)
    exact: dict[str, Any] = {}
    for tensor in req.spec.tensors:
        count = 1
        for dim in req.spec.shape(tensor, sizes):
            count *= dim
        exact[tensor.name] = _Exact(tensor.name, tensor.role, count * element, element)
    for name, host in inputs.items():
        data = host.contiguous()
        cupy.cuda.runtime.memcpy(exact[name].ptr, data.data_ptr(), exact[name].nbytes,
                                 cupy.cuda.runtime.memcpyHostToDevice)
    save({"buffers": {b.name: {"start": int(b.ptr), "bytes": b.nbytes, "element": b.element,
                                "role": b.role} for b in exact.values()}})
    calls = runner.prepare(exact, sizes)  # type: ignore[arg-type]  # duck-typed buffers
    runner.launch(calls)
    wait(f"the kernel at {label(req.dtype, sizes)}", req.kernel_timeout_s)


def _write(workdir: Path, record: dict[str, Any]) -> None:
    (workdir / PROBE_FILE).write_text(json.dumps(record))
