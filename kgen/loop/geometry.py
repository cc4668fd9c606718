"""A contract's launches against the target's limits, at every test and bench size, before any
run: a negative or empty grid, a block CUDA cannot launch, dynamic shared memory below zero or
beyond the arch's opt-in limit (with ptxas's static shared memory added), or an expression that
cannot be evaluated at some size (a cdiv by zero). Each is fed back like a compile error."""

from __future__ import annotations

from collections.abc import Mapping

from kgen import expr
from kgen.arch import Arch
from kgen.compile import Diagnostic, ResourceUsage
from kgen.contract import SMS, Contract, Launch
from kgen.spec import OpSpec

MAX_GRID_X = 2**31 - 1
MAX_GRID_YZ = 65535
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS = 1024
# The multiprocessor count checks made before a run assume (an H100/H200 has 132); the worker
# uses the real one.
STATIC_SMS = 132


def launch_problems(contract: Contract, spec: OpSpec, arch: Arch,
                    resources: Mapping[str, ResourceUsage] | None = None) -> tuple[Diagnostic, ...]:
    """One diagnostic per launch that is impossible at some size (the first such size)."""
    problems = []
    sizes = (*spec.test_sizes, *spec.bench_sizes)
    for launch in contract.launches:
        static = resources[launch.kernel].shared_bytes if resources and \
            launch.kernel in resources else 0
        for entry in sizes:
            values = {**entry, SMS: STATIC_SMS}
            try:
                if not launch.runs_at(values):
                    continue  # its when= leaves this size to another launch
            except expr.ExprError as exc:
                message: str | None = str(exc)
            else:
                message = _problem(launch, values, arch, static)
            if message:
                at = ", ".join(f"{k}={v}" for k, v in entry.items())
                problems.append(Diagnostic("error", launch.line, None, None,
                                           f"launch contract: {launch.kernel} at {at}: {message}",
                                           category="contract"))
                break
    return tuple(problems)


def _problem(launch: Launch, sizes: dict[str, int], arch: Arch, static: int) -> str | None:
    try:
        grid, block, smem = launch.dims(sizes)
    except expr.ExprError as exc:
        return str(exc)
    if any(g < 1 for g in grid):
        return f"grid={grid} has a dimension below 1"
    if grid[0] > MAX_GRID_X or any(g > MAX_GRID_YZ for g in grid[1:]):
        return f"grid={grid} exceeds CUDA's limits (x <= 2^31-1, y and z <= 65535)"
    threads = 1
    for b in block:
        threads *= b
    if any(b < 1 for b in block) or threads > MAX_THREADS or any(
            b > most for b, most in zip(block, MAX_BLOCK, strict=False)):
        return (f"block={block} is not launchable (at most {MAX_THREADS} threads, x and y at "
                "most 1024, z at most 64, none below 1)")
    most = arch.facts.max_smem_per_block
    if smem < 0:
        return f"smem={smem} is negative"
    if smem + static > most:
        extra = f" + {static} static" if static else ""
        return (f"smem={smem} dynamic{extra} bytes of shared memory exceed {arch.name}'s "
                f"{most} bytes per block")
    return None
