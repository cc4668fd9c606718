"""Inside the worker: guarded buffers, loading the binary, launching per the contract, waiting.

Only the worker imports this module (it needs cupy, torch and a GPU).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgen.contract import Contract, Launch
from kgen.dtypes import DTYPES
from kgen.sandbox.compare import INT_POISON
from kgen.sandbox.rejected import Rejected
from kgen.spec import Entry, OpSpec, Param

NOT_READY = 600  # cudaErrorNotReady: the event's work is still running
REGISTERS_PER_SM = 65536
GUARD = 4096  # elements before and after every buffer; a multiple of 64 keeps data 256-B aligned
_PATTERN = {1: 0x5A, 2: 0x7E5A, 4: 0x7FA5A5A5, 8: 0x7FF5A5A5A5A5A5A5}  # NaN-like bit patterns
# Errors after which the context is unusable: the worker must end and the GPU be re-checked.
_STICKY = ("ILLEGAL_ADDRESS", "illegal memory access", "IllegalAddress", "MISALIGNED",
           "misaligned", "LAUNCH_FAILED", "unspecified launch failure", "ILLEGAL_INSTRUCTION",
           "illegal instruction", "IllegalInstruction", "HARDWARE_STACK_ERROR", "ASSERT",
           "device-side assert", "INVALID_PC", "invalid program counter", "LaunchFailure",
           "MisalignedAddress", "HardwareStackError", "Assert", "InvalidPc")


def torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, DTYPES[name].torch)


def _ints(t: Any) -> Any:
    import torch

    return t.view({1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


@dataclass
class Buffer:
    """One tensor argument inside a larger allocation with a guard band on each side."""

    name: str
    flat: Any  # the whole allocation (torch, on the GPU)
    data: Any  # the view the kernel gets, shaped per the spec
    role: str

    @property
    def pattern(self) -> int:
        return _PATTERN[self.flat.element_size()]

    def arm(self) -> None:
        """Fill the guard bands with the pattern."""
        ints = _ints(self.flat)
        ints[:GUARD].fill_(self.pattern)
        ints[GUARD + self.data.numel():].fill_(self.pattern)

    def guard_problem(self) -> str | None:
        """Words for the model when a guard band changed: the kernel wrote out of bounds."""
        ints = _ints(self.flat)
        before = int((ints[:GUARD] != self.pattern).sum())
        after = int((ints[GUARD + self.data.numel():] != self.pattern).sum())
        if not before and not after:
            return None
        where = " and ".join(p for p in (f"{before} before its start" if before else "",
                                         f"{after} past its end" if after else "") if p)
        return (f"out-of-bounds write: {where} of {self.name} were overwritten (guard bands of "
                f"{GUARD} elements); check the bounds checks on the last rows/columns")


def allocate(spec: OpSpec, sizes: Entry, dtype: str, device: str = "cuda") -> dict[str, Buffer]:
    """Guarded buffers for every tensor of the op in its dtype (on the GPU in the worker);
    outputs poisoned."""
    import torch

    buffers = {}
    for tensor in spec.tensors:
        shape = spec.shape(tensor, sizes)
        count = 1
        for dim in shape:
            count *= dim
        kind = torch_dtype(spec.tensor_dtype(tensor, dtype))
        flat = torch.empty(count + 2 * GUARD, dtype=kind, device=device)
        data = flat[GUARD:GUARD + count].view(shape)
        buffers[tensor.name] = Buffer(tensor.name, flat, data, tensor.role)
        buffers[tensor.name].arm()
    poison(buffers)
    return buffers


def poison(buffers: dict[str, Buffer]) -> None:
    """NaN into every float output, a recognisable pattern into integer ones (INT_POISON), so
    anything the kernel does not write is visible."""
    for buf in buffers.values():
        if buf.role == "output":
            if buf.data.is_floating_point():
                buf.data.fill_(float("nan"))
            else:
                buf.data.fill_(INT_POISON.get(buf.data.element_size(), -1))


def load_module(path: Path, contract: Contract) -> dict[str, Any]:
    """kernel name -> cupy Function; a binary that cannot load is a launch_error with the reason."""
    import cupy

    functions = {}
    try:
        module = cupy.RawModule(path=str(path))  # loads lazily, on the first get_function
        for launch in contract.launches:
            functions[launch.kernel] = module.get_function(launch.kernel)
    except Exception as exc:  # cupy raises driver errors of several classes
        raise Rejected("launch_error", _load_problem(str(exc), contract)) from exc
    return functions


def _load_problem(text: str, contract: Contract) -> str:
    if "NO_BINARY_FOR_GPU" in text or "no kernel image" in text:
        return (f"the binary did not load: {text} (it holds no code this GPU can run: compile "
                "for this GPU's arch, or embed PTX so the driver can JIT it)")
    if "NOT_FOUND" in text or "not found" in text:
        names = ", ".join(launch.kernel for launch in contract.launches)
        return (f"a launched kernel ({names}) is not in the binary: {text}; declare it "
                "extern \"C\" __global__ so its name is not mangled")
    return f"the binary did not load: {text}"


def device_limits() -> dict[str, int]:
    import cupy

    attrs = cupy.cuda.Device().attributes
    return {"smem_optin": int(attrs.get("MaxSharedMemoryPerBlockOptin", 48 * 1024)),
            "threads": int(attrs.get("MaxThreadsPerBlock", 1024))}


def check_dims(launch: Launch, sizes: Entry, func: Any,
               limits: dict[str, int]) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """Evaluate grid/block/smem and refuse impossible ones with the arithmetic spelled out."""
    grid, block, smem = launch.dims(sizes)
    label = f"launch {launch.kernel} at {_sizes(sizes)}"
    if any(g <= 0 for g in grid):
        raise Rejected("launch_error", f"{label}: grid={grid} has a dimension <= 0")
    if any(g > 65535 for g in grid[1:]) or grid[0] > 2**31 - 1:
        raise Rejected("launch_error", f"{label}: grid={grid} exceeds the limits "
                       "(x < 2^31, y and z <= 65535)")
    threads = 1
    for b in block:
        threads *= b
    if any(b <= 0 for b in block) or threads > limits["threads"]:
        raise Rejected("launch_error", f"{label}: block={block} is {threads} threads; the "
                       f"limit is {limits['threads']} per block")
    # The driver's own answer for this function (registers included): beyond it a launch fails.
    most = _attribute(func, "max_threads_per_block") or limits["threads"]
    if threads > most:
        regs = _attribute(func, "num_regs")
        raise Rejected("launch_error", f"{label}: block={block} is {threads} threads, but at "
                       f"{regs} registers per thread at most {most} fit in one block "
                       f"({REGISTERS_PER_SM} registers per SM): use fewer threads per block, or "
                       "__launch_bounds__ so the compiler uses fewer registers")
    static = _attribute(func, "shared_size_bytes")
    if smem < 0 or smem + static > limits["smem_optin"]:
        raise Rejected("launch_error", f"{label}: smem={smem} dynamic + {static} static bytes "
                       f"exceed this GPU's {limits['smem_optin']} bytes per block")
    if smem > 48 * 1024:
        func.max_dynamic_shared_size_bytes = smem  # opt-in above the 48 KiB default
    return grid, block, smem


def _attribute(func: Any, name: str) -> int:
    """A CUDA function attribute through cupy (a property, or a method in some versions); 0 if
    unavailable, so the launch itself decides."""
    try:
        value = getattr(func, name, 0)
        return int(value() if callable(value) else value or 0)
    except Exception:
        return 0


def _sizes(sizes: Entry) -> str:
    return " ".join(f"{k}={v}" for k, v in sizes.items())


class Runner:
    """Launches the contract's kernels in order on the legacy default stream (shared with torch)."""

    def __init__(self, functions: dict[str, Any], contract: Contract, limits: dict[str, int],
                 params: tuple[Param, ...] = ()):
        self.functions = functions
        self.contract = contract
        self.limits = limits
        self.params = {p.name: p for p in params}

    def argument(self, name: str, buffers: dict[str, Buffer], sizes: Entry) -> Any:
        """A tensor's device pointer, a parameter in its C type (its value at this entry), or a
        size symbol as int."""
        import numpy as np

        if name in buffers:
            return np.uint64(buffers[name].data.data_ptr())
        if name in self.params:
            param = self.params[name]
            return getattr(np, param.dtype)(sizes.get(name, param.value))  # np.float32 ...
        return np.int32(sizes[name])

    def prepare(self, buffers: dict[str, Buffer], sizes: Entry) -> list[tuple]:
        """(name, function, grid, block, args, smem) per launch, checked once per size."""
        calls = []
        for launch in self.contract.launches:
            func = self.functions[launch.kernel]
            grid, block, smem = check_dims(launch, sizes, func, self.limits)
            args = tuple(self.argument(a, buffers, sizes) for a in launch.args)
            calls.append((launch.kernel, func, grid, block, args, smem))
        return calls

    def launch(self, calls: list[tuple], stream: Any = None) -> None:
        for name, func, grid, block, args, smem in calls:
            try:
                func(grid, block, args, shared_mem=smem, stream=stream)
            except Exception as exc:
                verdict = "crash" if is_sticky(str(exc)) else "launch_error"
                raise Rejected(verdict, f"launching {name} grid={grid} block={block} "
                               f"smem={smem}: {exc}") from exc

    def graph(self, calls: list[tuple]) -> Any | None:
        """A CUDA graph of a multi-launch sequence (timed as a whole), or None to launch plainly."""
        import cupy

        if len(calls) < 2:
            return None
        stream = cupy.cuda.Stream(non_blocking=True)
        try:
            with stream:
                stream.begin_capture()
                try:
                    self.launch(calls, stream)
                finally:
                    graph = stream.end_capture()
            return graph
        except Exception:
            return None  # capture is an optimisation; plain launches are timed the same way

    def run(self, calls: list[tuple], graph: Any | None = None) -> None:
        if graph is not None:
            graph.launch()
        else:
            self.launch(calls)


def is_sticky(text: str) -> bool:
    return any(marker in text for marker in _STICKY)


def wait(what: str, timeout_s: float) -> None:
    """Block until the GPU is idle; a hang becomes `timeout`, a CUDA error `crash`."""
    import cupy

    runtime = cupy.cuda.runtime
    try:
        event = cupy.cuda.Event(disable_timing=True)
        event.record()
        deadline = time.monotonic() + timeout_s
        # Not Event.done: it reads any error status as "not done yet", turning a crash into a hang.
        while (status := runtime.eventQuery(event.ptr)) == NOT_READY:
            if time.monotonic() > deadline:
                raise Rejected("timeout", f"{what} did not finish within {timeout_s:g} s (an "
                               "endless loop, a deadlock at __syncthreads, or far too slow)")
            time.sleep(0.0005)
        runtime.deviceSynchronize()  # raises with the error's name if the kernel failed
        if status != 0:
            raise runtime.CUDARuntimeError(status)
    except Rejected:
        raise
    except Exception as exc:
        raise Rejected("crash", f"{what} failed on the GPU: {exc}") from exc
