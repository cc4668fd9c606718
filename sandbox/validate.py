"""Validation inside the worker: fresh random inputs, one guarded run, every check, a verdict.

The reference is computed only after the candidate ran, from copies of the inputs that the
kernel never had a pointer to, in the spec's higher precision. At test sizes those copies are on
the host; a bench size's are drawn on the GPU (see `make_inputs`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from kgen.sandbox import guards, kernelbench, reference
from kgen.sandbox.compare import (
    changed,
    compare,
    compare_exact,
    relative_error,
    row_sums_problem,
)
from kgen.sandbox.launch import Buffer, Runner, allocate, poison, torch_dtype, wait
from kgen.sandbox.rejected import Rejected
from kgen.spec import Entry, Init, OpSpec

# Above this many flops (or bytes) the reference runs on the GPU (fresh allocations, after the
# candidate); below it on the CPU, where nothing the kernel did can reach it.
CPU_REFERENCE_FLOPS = 4e9
CPU_REFERENCE_BYTES = 2**28
# The whole output's relative L2 error may be at most max(rtol, this): a kernel that returns
# zeros, a constant or an unnormalized softmax fails it even where outputs are below atol.
RELATIVE_FLOOR = 1e-3
# ...on outputs of at least this many elements. On fewer, the L2 norm averages nothing: on one
# element it is that element's relative error, which near a zero of a cancelling formula is the
# float32 rounding, not a cheat (float16 GELU at M=N=1 failed it on an H100 with 0.00212: its
# one input sat in the negative tail, where 1 + tanh cancels). Every shipped op also validates
# at sizes of thousands of elements, where a cheat still fails it; a small output that only
# exists at one size (a KernelBench loss is one number) is judged by its tolerance alone.
RELATIVE_MIN_ELEMENTS = 64


def label(dtype: str, sizes: Entry) -> str:
    return f"{dtype} " + " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                                  for k, v in sizes.items())


def make_inputs(spec: OpSpec, sizes: Entry, dtype: str, seed: int,
                device: str = "cpu") -> dict[str, Any]:
    """Tensors on `device` for every input and weight, drawn per its init (default uniform
    [-1, 1)) in its dtype, or from a KernelBench problem's own functions; a new seed gives new
    values. The bench sizes draw on the GPU: drawn on the host, they took 1.55 s of a gemm float32
    check's 6.5 s on an H200 machine's 16 cores, and the checks after each timed run, which
    copied every input back to the host to see that the kernel left it alone, 1.95 s
    (nineteenth session). A seed draws different values on each device."""
    import torch

    if spec.reference.kind == "kernelbench":
        return {k: v.to(device) for k, v in kernelbench.draw(spec, dtype, seed).items()}
    gen = torch.Generator(device=device)
    inputs = {}
    for i, tensor in enumerate(spec.operands):
        gen.manual_seed(seed * 1000 + i)
        values = _draw(tensor.init, spec.shape(tensor, sizes), gen, device)
        inputs[tensor.name] = values.to(torch_dtype(spec.tensor_dtype(tensor, dtype)))
    return inputs


def _draw(init: Init, shape: tuple[int, ...], gen: Any, device: str) -> Any:
    """Drawn in place: a bench size's inputs are hundreds of MB, and scaling a draw afterwards
    cost two more passes over them (half of gemm's 0.9 s at 8192^3 on two cores)."""
    import torch

    if init.dist == "randint":
        return torch.randint(int(init.a), int(init.b), shape, generator=gen, device=device)
    out = torch.empty(shape, dtype=torch.float32, device=device)
    if init.dist == "normal":
        return out.normal_(init.a, init.b, generator=gen)
    return out.uniform_(init.a, init.b, generator=gen)


def load_inputs(buffers: dict[str, Buffer], inputs: dict[str, Any]) -> None:
    for name, values in inputs.items():
        buffers[name].data.copy_(values)


def compute_reference(spec: OpSpec, dtype: str, inputs: dict[str, Any], sizes: Entry,
                      on_gpu: bool | None = None) -> dict[str, Any]:
    """Output name -> reference tensor in the spec's reference dtype (CPU or fresh GPU memory)."""
    import torch

    ref_dtype = torch_dtype(spec.dtypes[dtype].reference)
    if on_gpu is None:
        big = (spec.flop_count(sizes) > CPU_REFERENCE_FLOPS or spec.reference.kind == "kernelbench"
               or spec.byte_count(sizes, dtype) > CPU_REFERENCE_BYTES)
        on_gpu = big and torch.cuda.is_available()
    return _evaluate(spec, inputs, sizes, "cuda" if on_gpu else "cpu", ref_dtype)


def _evaluate(spec: OpSpec, inputs: dict[str, Any], sizes: Entry, device: str, dtype: Any
              ) -> dict[str, Any]:
    import torch

    bound = reference.bind(inputs, device, dtype)
    with torch.no_grad():
        value = reference.evaluate(spec, bound, sizes, device=device, dtype=dtype)
    return reference.outputs(spec, value, sizes)


def model_own_outputs(spec: OpSpec, dtype: str, inputs: dict[str, Any], sizes: Entry
                      ) -> dict[str, Any]:
    """For a KernelBench problem whose reference runs in a higher precision than its own dtype:
    the problem's Model run in its own dtype on the GPU, which is what KernelBench's evaluator
    compares ModelNew with. kgen's check never rejects an output element that is within the
    tolerance of it: with float32 sums over K = 1024, cuBLAS itself, and a kernel that matches it
    bit for bit, missed 1e-4 against the float64 reference on some inputs (H100, thirtieth and
    thirty-first sessions, benchmarks/findings.md). Empty for every other spec."""
    import torch

    if not has_model_own(spec, dtype):
        return {}
    device = "cuda" if torch.cuda.is_available() else "cpu"
    return _evaluate(spec, inputs, sizes, device, torch_dtype(dtype))


def has_model_own(spec: OpSpec, dtype: str) -> bool:
    return spec.reference.kind == "kernelbench" and spec.dtypes[dtype].reference != dtype


def model_own_when_needed(spec: OpSpec, dtype: str, inputs: dict[str, Any], sizes: Entry
                          ) -> Callable[[], dict[str, Any]] | None:
    """`model_own_outputs` for check_after_run, computed at its first call and kept (a second
    check of the same launch's outputs reuses it); None where the spec has none."""
    if not has_model_own(spec, dtype):
        return None
    return functools.cache(lambda: model_own_outputs(spec, dtype, inputs, sizes))


def check_after_run(spec: OpSpec, dtype: str, sizes: Entry, buffers: dict[str, Buffer],
                    inputs: dict[str, Any], refs: dict[str, Any], where: str,
                    model_own: Callable[[], dict[str, Any]] | None = None) -> None:
    """Guards, unchanged inputs, outputs within tolerance (of `refs`, or of what `model_own`
    returns, see `model_own_outputs`: called only once an output misses `refs`, since most
    kernels pass without it; `model_own_when_needed` makes one that computes once), the spec's
    checks; the first failure is the verdict."""
    for buf in buffers.values():
        problem = buf.guard_problem()
        if problem:
            raise Rejected("wrong", f"{where}: {problem}")
    for name, drawn in inputs.items():
        count = changed(drawn, buffers[name].data)  # on the device the inputs were drawn on
        if count:
            raise Rejected("wrong", f"{where}: the kernel modified {buffers[name].role} {name} "
                           f"({count} of {drawn.numel()} elements changed); inputs and weights "
                           "must stay read-only")
    tol = spec.dtypes[dtype]
    for name, ref in refs.items():
        out = buffers[name].data
        out = out if ref.is_cuda else out.cpu()
        own = ""
        if not out.is_floating_point():
            mismatch = compare_exact(out, ref, name)
        else:
            mismatch = compare(out, ref, tol.atol, tol.rtol, name)
            also = model_own().get(name) if not mismatch.ok and model_own is not None else None
            if also is not None:
                mismatch = compare(out, ref, tol.atol, tol.rtol, name, also)
                own = (f"; nor within atol + rtol of the problem's Model run in {dtype}, "
                       "KernelBench's own check")
        if not mismatch.ok:
            raise Rejected("wrong", f"{where}: {mismatch.text(name)}{own}")
        _check_relative(out, ref, name, max(tol.rtol, RELATIVE_FLOOR), where)
    for check in ("row_sums", "log_row_sums"):
        if check not in spec.checks:
            continue
        first = spec.outputs[0].name
        problem = row_sums_problem(buffers[first].data, row_tolerance(
            buffers[first].data, tol.atol + tol.rtol), log=check == "log_row_sums")
        if problem:
            raise Rejected("wrong", f"{where}: {first}: {problem}")


def row_tolerance(out: Any, elementwise: float) -> float:
    """How far a row sum may be from 1: the storage rounding of a normalized row (2 eps of the
    dtype, at least 1e-4 for float32 sums), never looser than the elementwise tolerance."""
    import torch

    return min(elementwise, max(2 * torch.finfo(out.dtype).eps, 1e-4))


def _check_relative(out: Any, ref: Any, name: str, bound: float, where: str) -> None:
    if not out.is_floating_point() or out.numel() < RELATIVE_MIN_ELEMENTS:
        return
    error = relative_error(out, ref)
    if error is not None and error > bound:
        raise Rejected("wrong", f"{where}: {name} as a whole is off by {error:.3g} relative to "
                       f"the reference (L2 norm of the error over the L2 norm of the reference; "
                       f"at most {bound:g} passes), although each element is within atol: "
                       "zeros, a constant or unnormalized values?")


def run_case(runner: Runner, spec: OpSpec, dtype: str, sizes: Entry, seed: int,
             timeout_s: float, where: str) -> None:
    """One fresh input set at one size: poison, launch, wait, then every check. A failure carries
    its sizes; computed NaN in the outputs is traced to the guard band it came from."""
    try:
        inputs = make_inputs(spec, sizes, dtype, seed)
        buffers = allocate(spec, sizes, dtype)
        load_inputs(buffers, inputs)
        calls = runner.prepare(buffers, sizes)
        wait("preparing the buffers", timeout_s)
        poison(buffers)
        runner.launch(calls)
        wait(f"the kernel at {label(dtype, sizes)}", timeout_s)
        refs = compute_reference(spec, dtype, inputs, sizes)
        model_own = model_own_when_needed(spec, dtype, inputs, sizes)
        try:
            check_after_run(spec, dtype, sizes, buffers, inputs, refs, where, model_own)
        except Rejected as rejected:
            raise guards.explained(rejected, runner, calls, buffers, timeout_s) from None
    except Rejected as rejected:
        rejected.sizes = rejected.sizes or dict(sizes)
        raise


def validate(runner: Runner, spec: OpSpec, dtype: str, sizes_list: tuple[Entry, ...],
             seed: int, input_sets: int, timeout_s: float, stage: str = "") -> int:
    """Every size with `input_sets` fresh input sets; returns how many runs passed."""
    runs = 0
    for index, sizes in enumerate(sizes_list):
        for k in range(input_sets):
            where = f"{label(dtype, sizes)} (input set {k + 1} of {input_sets}{stage})"
            run_case(runner, spec, dtype, sizes, seed + 7919 * index + 104729 * k, timeout_s,
                     where)
            runs += 1
    return runs
