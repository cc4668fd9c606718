"""Inside the worker: guarded buffers, loading the binary, launching per the contract, waiting.

Only the worker imports this module (it needs cupy, torch and a GPU).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgen.contract import SMS, Contract, Launch, TensorMapArg
from kgen.dtypes import DTYPES
from kgen.sandbox import driver
from kgen.sandbox import poison as patterns
from kgen.sandbox.compare import INT_POISON
from kgen.sandbox.rejected import Rejected
from kgen.spec import Entry, OpSpec, Param

NOT_READY = 600  # cudaErrorNotReady: the event's work is still running
REGISTERS_PER_SM = 65536
GUARD = 4096  # elements before and after every buffer; a multiple of 64 keeps data 256-B aligned
# Errors after which the context is unusable: the worker must end and the GPU be re-checked.
_STICKY = ("ILLEGAL_ADDRESS", "illegal memory access", "IllegalAddress", "MISALIGNED",
           "misaligned", "LAUNCH_FAILED", "unspecified launch failure", "ILLEGAL_INSTRUCTION",
           "illegal instruction", "IllegalInstruction", "HARDWARE_STACK_ERROR", "ASSERT",
           "device-side assert", "INVALID_PC", "invalid program counter", "LaunchFailure",
           "MisalignedAddress", "HardwareStackError", "Assert", "InvalidPc")


def torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, DTYPES[name].torch)


@dataclass
class Buffer:
    """One tensor argument inside a larger allocation with a guard band on each side."""

    name: str
    flat: Any  # the whole allocation (torch, on the GPU)
    data: Any  # the view the kernel gets, shaped per the spec
    role: str

    @property
    def pattern(self) -> int:
        size = self.flat.element_size()
        return patterns.signed(patterns.GUARD[size], size)

    def band(self, side: str) -> Any:
        """The guard band before or after the data (a view of the allocation)."""
        return self.flat[:GUARD] if side == "before" else self.flat[GUARD + self.data.numel():]

    def arm(self) -> None:
        """Fill the guard bands with the guard pattern (a NaN with a recognizable payload)."""
        for side in ("before", "after"):
            patterns.fill(self.band(side), patterns.GUARD)

    def guard_problem(self) -> str | None:
        """Words for the model when a guard band changed: the kernel wrote out of bounds."""
        before = int((~patterns.holds(self.band("before"), patterns.GUARD)).sum())
        after = int((~patterns.holds(self.band("after"), patterns.GUARD)).sum())
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
    """The output poison into every output, so anything the kernel does not write is visible
    bit for bit: a NaN bit pattern no arithmetic makes in float outputs, a recognisable integer
    (INT_POISON) in integer ones."""
    for buf in buffers.values():
        if buf.role == "output":
            if buf.data.is_floating_point():
                patterns.fill(buf.data, patterns.OUTPUT)
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
            "threads": int(attrs.get("MaxThreadsPerBlock", 1024)),
            "sms": int(attrs.get("MultiProcessorCount", 1))}


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
    # The 48 KiB a function gets without opting in counts its static bytes too: 49,152 dynamic
    # bytes beside 64 static ones failed with CUDA_ERROR_INVALID_VALUE on the H200.
    if smem + static > 48 * 1024:
        func.max_dynamic_shared_size_bytes = smem
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


@dataclass(frozen=True)
class Call:
    """One launch, ready to go at one size: arguments as (kind, value) with kind ptr/int/tmap."""

    name: str
    func: Any
    grid: tuple[int, ...]
    block: tuple[int, ...]
    smem: int
    args: tuple[tuple[str, Any], ...]
    cluster: tuple[int, ...] = ()


class Runner:
    """Launches the contract's kernels in order on the legacy default stream (shared with torch)."""

    def __init__(self, functions: dict[str, Any], contract: Contract, limits: dict[str, int],
                 params: tuple[Param, ...] = ()):
        self.functions = functions
        self.contract = contract
        self.limits = limits
        self.params = {p.name: p for p in params}

    def argument(self, arg: str | TensorMapArg, buffers: dict[str, Buffer], values: Entry,
                 kernel: str) -> tuple[str, Any]:
        """(kind, value): a tensor's device pointer, a tensor map built for it, a parameter in
        its C type (its value at this entry), or a size symbol as int."""
        if isinstance(arg, TensorMapArg):
            return "tmap", _tensor_map(arg, buffers[arg.tensor].data, values, kernel)
        if arg in buffers:
            return "ptr", buffers[arg].data.data_ptr()
        if arg in self.params:
            param = self.params[arg]
            value = values.get(arg, param.value)
            return ("float", float(value)) if param.dtype.startswith("float") else \
                ("int", int(value))
        return "int", int(values[arg])

    def prepare(self, buffers: dict[str, Buffer], sizes: Entry) -> list[Call]:
        """The launches that run at these sizes, checked once per size, arguments built."""
        values = {**sizes, SMS: self.limits.get("sms", 1)}
        calls = []
        for launch in self.contract.launches_at(values):
            func = self.functions[launch.kernel]
            grid, block, smem = check_dims(launch, values, func, self.limits)
            cluster = check_cluster(launch, values, grid)
            args = tuple(self.argument(a, buffers, values, launch.kernel)
                         for a in launch.arguments())
            calls.append(Call(launch.kernel, func, grid, block, smem, args, cluster))
        if not calls:
            raise Rejected("launch_error", f"no launch runs at {_sizes(sizes)}: every when= "
                           "condition is false there")
        return calls

    def launch(self, calls: list[Call], stream: Any = None) -> None:
        for call in calls:
            try:
                if call.cluster:
                    driver.launch_with_cluster(_function_handle(call.func), call.grid,
                                               call.block, call.smem,
                                               stream.ptr if stream is not None else 0,
                                               call.cluster, [_as_ctypes(a) for a in call.args])
                else:
                    call.func(call.grid, call.block, tuple(_as_numpy(a) for a in call.args),
                              shared_mem=call.smem, stream=stream)
            except Rejected:
                raise
            except Exception as exc:
                verdict = "crash" if is_sticky(str(exc)) else "launch_error"
                raise Rejected(verdict, f"launching {call.name} grid={call.grid} "
                               f"block={call.block} smem={call.smem}: {exc}") from exc

    def graph(self, calls: list[Call]) -> Any | None:
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

    def run(self, calls: list[Call], graph: Any | None = None) -> None:
        if graph is not None:
            graph.launch()
        else:
            self.launch(calls)


def _tensor_map(arg: TensorMapArg, data: Any, values: Entry, kernel: str) -> bytes:
    dtype = str(data.dtype).removeprefix("torch.")
    if arg.optional and not driver.can_map(data.data_ptr(), tuple(data.shape),
                                           data.element_size()):
        return bytes(driver.TENSOR_MAP_BYTES)  # zeros: the kernel takes its other path here
    return driver.encode_tensor_map(data.data_ptr(), dtype, tuple(data.shape),
                                    arg.box_dims(values), arg.swizzle,
                                    f"for {arg.tensor} in launch {kernel}")


def _function_handle(func: Any) -> int:
    """The CUfunction behind a cupy kernel (RawKernel keeps it as .kernel.ptr; Function as .ptr)."""
    inner = getattr(func, "kernel", func)
    return int(inner.ptr)


def _as_numpy(arg: tuple[str, Any]) -> Any:
    import numpy as np

    kind, value = arg
    if kind == "tmap":  # a size-1 128-byte void array: cupy passes it by value
        return np.frombuffer(value, dtype=np.dtype((np.void, driver.TENSOR_MAP_BYTES)))
    return {"ptr": np.uint64, "float": np.float32, "int": np.int32}[kind](value)


def _as_ctypes(arg: tuple[str, Any]) -> Any:
    import ctypes

    kind, value = arg
    if kind == "tmap":
        return (ctypes.c_char * driver.TENSOR_MAP_BYTES).from_buffer_copy(value)
    return {"ptr": ctypes.c_uint64, "float": ctypes.c_float, "int": ctypes.c_int32}[kind](value)


def check_cluster(launch: Launch, values: dict[str, int],
                  grid: tuple[int, ...]) -> tuple[int, ...]:
    """Cluster dims that the grid divides, at most 8 blocks (the portable limit)."""
    if not launch.cluster:
        return ()
    cluster = launch.cluster_dims(values)
    label = f"launch {launch.kernel} at {_sizes(values)}"
    padded = (*grid, 1, 1)[:len(cluster)]
    count = 1
    for c in cluster:
        count *= c
    if any(c < 1 for c in cluster) or count > 8:
        raise Rejected("launch_error", f"{label}: cluster={cluster} is not 1 to 8 blocks")
    if any(g % c for g, c in zip(padded, cluster, strict=True)):
        raise Rejected("launch_error", f"{label}: grid={grid} is not a multiple of "
                       f"cluster={cluster} in every dimension")
    return cluster


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
