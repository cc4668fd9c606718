"""The sanitizer check: a candidate that came back `wrong`, `crash` or `launch_error` runs once
more, at its smallest failing size, under compute-sanitizer; the findings, mapped to source lines
(kgen builds with -lineinfo) and to the buffer a bad address is in, go on its Evaluation.

Tools, first finding wins: memcheck (out of bounds, misaligned); for `wrong` then racecheck (only
when the PTX uses shared memory) and initcheck (uninitialized global and shared reads). Each run
is inside the worker's bubblewrap sandbox with a time bound; a missing tool is said, never fatal.
"""

from __future__ import annotations

import functools
import re
import subprocess
import time
from collections.abc import Mapping
from dataclasses import replace

from kgen import toolkit
from kgen.findings import SanitizerReport
from kgen.gpu import sanlog, wrapped
from kgen.wire import EvalRequest

# Tool flags: the first group is always given; the second is left out on a retry, in case this
# compute-sanitizer refuses one of them.
_COMMON = ("--print-limit", "100")
_OPTIONAL = ("--show-backtrace", "no", "--log-file", "{log}")
_TOOL_OPTIONAL = {"memcheck": ("--padding", "256"), "racecheck": (), "initcheck": ()}
# Given only to a compute-sanitizer that has it (SHARED_INITCHECK and later).
_SHARED_SPACE = ("--initcheck-address-space", "all")
SANITIZED = ("wrong", "crash", "launch_error")


# The first compute-sanitizer whose initcheck takes --initcheck-address-space (shared memory):
# CUDA 13.1's. CUDA 13.0 ships 2025.3; KGEN_COMPUTE_SANITIZER can name a newer one.
SHARED_INITCHECK = (2025, 4)


def tool_version() -> tuple[int, int] | None:
    """(year, release) of the compute-sanitizer kgen would run ("Version 2025.3.1.0"), or None."""
    exe = toolkit.tool("compute-sanitizer")
    return None if exe is None else _version(str(exe))


@functools.cache
def _version(exe: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"Version (\d{4})\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def tools_for(verdict: str, ptx: str | None) -> tuple[str, ...]:
    """Which tools, in order, can explain this verdict."""
    if verdict != "wrong":
        return ("memcheck",)
    shared = ptx is None or re.search(r"\.shared\b", ptx) is not None
    return ("memcheck", "racecheck", "initcheck") if shared else ("memcheck", "initcheck")


def failing_request(request: EvalRequest, sizes: dict[str, int] | None) -> tuple[EvalRequest, str]:
    """The request for one launch at the failing size (the smallest test size when the worker
    could not say), and a note when it is a guess."""
    if sizes:
        return replace(request, test_sizes=(dict(sizes),)), ""
    smallest = min(request.spec.test_sizes, key=request.spec.flop_count)
    return (replace(request, test_sizes=(dict(smallest),)),
            "the failing size is unknown (the worker died): checked at the smallest test size")


def command(exe: str, tool: str, optional: bool = True, shared: bool = False) -> list[str]:
    """The tool's command line; `shared` asks initcheck to look at shared memory too."""
    extra = (*_OPTIONAL, *_TOOL_OPTIONAL[tool]) if optional else ()
    space = _SHARED_SPACE if shared and tool == "initcheck" else ()
    return [exe, "--tool", tool, *_COMMON, *extra, *space]


def check(request: EvalRequest, binary: bytes, verdict: str, sizes: dict[str, int] | None,
          ptx: str | None = None, *, timeout_s: float = 120.0, budget_s: float = 300.0,
          unsafe: bool = False, env: Mapping[str, str] | None = None) -> SanitizerReport:
    """Run the tools for this verdict until one finds something; a report either way. `env`:
    added to the worker's environment (wrapped.run)."""
    started = time.monotonic()
    exe = toolkit.tool("compute-sanitizer")
    if exe is None:
        return SanitizerReport(error=toolkit.missing("compute-sanitizer"))
    one, note = failing_request(request, sizes)
    report = SanitizerReport(sizes=dict(one.test_sizes[0]), note=note)
    for tool in tools_for(verdict, ptx):
        if time.monotonic() - started > budget_s:
            report = replace(report, note=_join(report.note, f"stopped before {tool}: the "
                                                f"{budget_s:g} s budget was spent"))
            break
        found, error, dropped = run_tool(str(exe), tool, one, binary, timeout_s, unsafe, env)
        blind = "shared memory" if tool == "initcheck" and dropped else report.blind_to
        report = replace(report, tools=report.tools + (tool,), findings=tuple(found),
                         error=error, note=_join(report.note, dropped), blind_to=blind)
        if found:
            break
    return replace(report, seconds=round(time.monotonic() - started, 3))


def run_tool(exe: str, tool: str, request: EvalRequest, binary: bytes, timeout_s: float,
             unsafe: bool, env: Mapping[str, str] | None = None) -> tuple[list, str, str]:
    """(findings, error, note) of one tool; retried once without the optional flags when the
    tool itself refused to start, and the note then says what that run could not see."""
    version = _version(exe)
    shared = version is None or version >= SHARED_INITCHECK  # unknown: try, the retry covers it
    note = dropped_note(tool) if tool == "initcheck" and not shared else ""
    run = wrapped.run(command(exe, tool, shared=shared), request, binary, "sanitize",
                      timeout_s=timeout_s, unsafe=unsafe, env=env)
    if not run.probe and not run.timed_out:  # the worker never ran: the tool refused its flags?
        run = wrapped.run(command(exe, tool, optional=False), request, binary, "sanitize",
                          timeout_s=timeout_s, unsafe=unsafe, env=env)
        if run.probe:
            note = dropped_note(tool)
    found = sanlog.findings(run.text, tool, run.probe.get("buffers", {}))
    if run.timed_out:
        return found, f"{tool} did not finish within {timeout_s:g} s", note
    if not run.probe:
        tail = run.text.strip().splitlines()[-1:] or ["no output"]
        return found, f"{tool} did not run the worker: {tail[0][:300]}", note
    if not found and run.probe.get("error") and not run.probe.get("launched"):
        return found, f"the launch under {tool} failed: {str(run.probe['error'])[:300]}", note
    return found, "", note


def dropped_note(tool: str) -> str:
    """What a run without the optional flags (or without the shared space) misses."""
    if tool == "initcheck":
        return ("this compute-sanitizer's initcheck has no --initcheck-address-space (2025.4 and "
                "later; KGEN_COMPUTE_SANITIZER can name one): it looked at global memory "
                "only, so an uninitialized __shared__ read goes unseen")
    return f"{tool} ran without {' '.join(_TOOL_OPTIONAL[tool] + _OPTIONAL[:2])}"


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)
