"""Validation inside the worker: fresh random inputs, one guarded run, every check, a verdict.

The reference is computed only after the candidate ran, from host copies of the inputs that the
kernel never had a pointer to, in the spec's higher precision.
"""

from __future__ import annotations

from typing import Any

from kgen import refexpr
from kgen.sandbox import guards
from kgen.sandbox.compare import changed, compare
from kgen.sandbox.launch import Buffer, Runner, allocate, poison, torch_dtype, wait
from kgen.sandbox.rejected import Rejected
from kgen.spec import OpSpec

# Above this many flops the reference runs on the GPU (fresh allocations, after the candidate);
# below it on the CPU, where nothing the kernel did can reach it.
CPU_REFERENCE_FLOPS = 4e9


def label(dtype: str, sizes: dict[str, int]) -> str:
    return f"{dtype} " + " ".join(f"{k}={v}" for k, v in sizes.items())


def make_inputs(spec: OpSpec, sizes: dict[str, int], dtype: str, seed: int) -> dict[str, Any]:
    """Host tensors, uniform in [-1, 1), rounded to the dtype; a new seed gives new values."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    inputs = {}
    for i, tensor in enumerate(spec.inputs):
        shape = spec.shape(tensor, sizes)
        gen.manual_seed(seed * 1000 + i)
        values = torch.rand(shape, generator=gen, dtype=torch.float32) * 2 - 1
        inputs[tensor.name] = values.to(torch_dtype(dtype))
    return inputs


def load_inputs(buffers: dict[str, Buffer], inputs: dict[str, Any]) -> None:
    for name, host in inputs.items():
        buffers[name].data.copy_(host)


def compute_reference(spec: OpSpec, dtype: str, inputs: dict[str, Any], sizes: dict[str, int],
                      on_gpu: bool | None = None) -> dict[str, Any]:
    """Output name -> reference tensor in the spec's reference dtype (CPU or fresh GPU memory)."""
    import torch

    ref_dtype = torch_dtype(spec.dtypes[dtype].reference)
    if on_gpu is None:
        on_gpu = spec.flop_count(sizes) > CPU_REFERENCE_FLOPS and torch.cuda.is_available()
    device = "cuda" if on_gpu else "cpu"
    bound = {k: v.to(device=device, dtype=ref_dtype) for k, v in inputs.items()}
    value = refexpr.evaluate(spec.reference, bound)
    values = value if isinstance(value, (tuple, list)) else (value,)
    outputs = spec.outputs
    if len(values) != len(outputs):
        raise Rejected("launch_error", f"the spec's reference gives {len(values)} values for "
                       f"{len(outputs)} outputs")
    return {t.name: v.reshape(spec.shape(t, sizes)) for t, v in zip(outputs, values, strict=True)}


def check_after_run(spec: OpSpec, dtype: str, sizes: dict[str, int], buffers: dict[str, Buffer],
                    inputs: dict[str, Any], refs: dict[str, Any], where: str) -> None:
    """Guards, unchanged inputs, outputs within tolerance; the first failure is the verdict."""
    for buf in buffers.values():
        problem = buf.guard_problem()
        if problem:
            raise Rejected("wrong", f"{where}: {problem}")
    for name, host in inputs.items():
        count = changed(host, buffers[name].data.cpu())
        if count:
            raise Rejected("wrong", f"{where}: the kernel modified input {name} ({count} of "
                           f"{host.numel()} elements changed); inputs must stay read-only")
    tol = spec.dtypes[dtype]
    for name, ref in refs.items():
        out = buffers[name].data
        mismatch = compare(out if ref.is_cuda else out.cpu(), ref, tol.atol, tol.rtol, name)
        if not mismatch.ok:
            raise Rejected("wrong", f"{where}: {mismatch.text(name)}")


def run_case(runner: Runner, spec: OpSpec, dtype: str, sizes: dict[str, int], seed: int,
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
        try:
            check_after_run(spec, dtype, sizes, buffers, inputs, refs, where)
        except Rejected as rejected:
            raise guards.explained(rejected, runner, calls, buffers, timeout_s) from None
    except Rejected as rejected:
        rejected.sizes = rejected.sizes or dict(sizes)
        raise


def validate(runner: Runner, spec: OpSpec, dtype: str, sizes_list: tuple[dict[str, int], ...],
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
