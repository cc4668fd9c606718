"""Where NaN the kernel computed came from. The inputs are finite and their guard bands hold a NaN
pattern, so a computed NaN in the outputs usually means a read outside an input. Re-running the
same launch with the guard bands made finite (zeros), then with one band at a time NaN again,
names the bands the kernel reads.

Only the worker imports this module (it launches kernels).
"""

from __future__ import annotations

from typing import Any

from kgen.sandbox import poison as patterns
from kgen.sandbox.launch import Buffer, Call, Runner, poison, wait
from kgen.sandbox.rejected import Rejected


def computed_nonfinite(buffers: dict[str, Buffer]) -> int:
    """NaN/inf in the outputs that is neither the output poison nor a guard pattern."""
    import torch

    total = 0
    for buf in buffers.values():
        t = buf.data
        if buf.role != "output" or not t.is_floating_point():
            continue
        made = ~torch.isfinite(t) & ~patterns.holds(t, patterns.OUTPUT) \
            & ~patterns.holds(t, patterns.GUARD)
        total += int(made.sum())
    return total


def explained(rejected: Rejected, runner: Runner, calls: list[Call],
              buffers: dict[str, Buffer], timeout_s: float) -> Rejected:
    """The same rejection, its message extended with which guard band the NaN came from."""
    if rejected.verdict != "wrong" or not computed_nonfinite(buffers):
        return rejected
    try:
        text = _attribute(runner, calls, buffers, timeout_s)
    except Rejected:  # the re-run itself failed: keep the first verdict and its words
        return rejected
    return Rejected(rejected.verdict, f"{rejected.message}; {text}", rejected.sizes)


def _attribute(runner: Runner, calls: list[Call], buffers: dict[str, Buffer],
               timeout_s: float) -> str:
    """Zero every input guard band: if the NaN go, re-arm one band at a time (the others zero);
    a band whose NaN comes back is one the kernel reads. One band at a time on its own would miss
    a kernel that reads past two inputs (zeros in A's band times NaN from B's is still NaN)."""
    inputs = [b for b in buffers.values() if b.role == "input"]
    bands = [(b, side) for b in inputs for side in ("after", "before")]
    base = _rerun(runner, calls, buffers, timeout_s)
    if not base:  # NaN only on some runs: a race or uninitialized memory, not the guards
        return "the NaN did not come back on a re-run: a race or uninitialized memory"
    for buf, side in bands:
        buf.band(side).zero_()
    quiet = _rerun(runner, calls, buffers, timeout_s)
    found = []
    if quiet < base:
        for buf, side in bands:
            patterns.fill(buf.band(side), patterns.GUARD)
            if _rerun(runner, calls, buffers, timeout_s) > quiet:
                found.append(f"{'past the end' if side == 'after' else 'before the start'} "
                             f"of {buf.name}")
            buf.band(side).zero_()
    for buf in inputs:
        buf.arm()
    _rerun(runner, calls, buffers, timeout_s)  # leave the outputs as the failing run made them
    if found:
        return (f"the NaN disappear when the inputs' guard bands hold zeros instead, and come "
                f"back with the band {' / '.join(found)}: the kernel reads "
                f"{' and '.join(found)} (check the bounds of those loads)")
    return ("the NaN stay when every input guard band holds zeros: they do not come from "
            "reading past the inputs; look for uninitialized shared memory or registers")


def _rerun(runner: Runner, calls: list[Call], buffers: dict[str, Buffer],
           timeout_s: float) -> Any:
    poison(buffers)
    runner.launch(calls)
    wait("a diagnostic re-run", timeout_s)
    return computed_nonfinite(buffers)
