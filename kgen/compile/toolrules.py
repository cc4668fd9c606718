"""Rules for records that ptxas, nvlink and nvcc print without a .cu line: find the line."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from kgen.compile import scan
from kgen.compile.records import Diagnostic, RawRecord, ResourceUsage

# PTX instructions that need a newer or arch-specific target than the one compiled for.
_NEEDS = (("wgmma", "sm_90a"), ("setmaxnreg", "sm_90a"), ("tcgen05", "sm_100a"),
          ("cp.async.bulk", "sm_90"), ("multimem", "sm_90"), ("cp.async", "sm_80"),
          ("ldmatrix", "sm_75"), ("redux", "sm_80"))


def finish(d: Diagnostic, source: str) -> Diagnostic:
    """Fill in the line's text and, for records still marked syntax, the category."""
    return replace(d, source=scan.line_text(source, d.line), category=category(d.message)
                   if d.category == "syntax" else d.category)


def category(message: str) -> str:
    """resource | arch | link | syntax, from the message alone."""
    low = message.lower()
    if re.search(r"too much (shared|local) data|spill|registers|__launch_bounds__|minnctapersm|"
                 r"maxntid|too many resources", low):
        return "resource"
    if re.search(r"requires \.target|not supported on \.target|unsupported gpu architecture|"
                 r"not supported on this architecture|requires sm_|"
                 r"for option 'gpu-(architecture|name)'", low):
        return "arch"
    if re.search(r"unresolved extern|undefined reference|undefined symbol", low):
        return "link"
    return "syntax"


def ptxas_located(r: RawRecord, source: str, ptx: str | None) -> Diagnostic:
    """ptxas names a PTX line; the `.loc` before it names the .cu line (needs -lineinfo)."""
    line = scan.ptx_to_source_line(ptx, r.ptx_line or 0) if ptx else None
    notes = [f"ptxas names PTX line {r.ptx_line}" + (" (mapped through .loc)" if line else "")]
    message = _arch_hint(r.message, ptx)
    return finish(Diagnostic(r.severity, line, None, None, message, notes=tuple(notes),
                              category=category(message)), source)


def _arch_hint(message: str, ptx: str | None) -> str:
    """Say which arch an instruction needs when ptxas only says the target lacks it."""
    if not re.search(r"requires \.target|not supported on \.target", message):
        return message
    target = re.search(r"^\s*\.target\s+(\w+)", ptx or "", re.MULTILINE)
    built = f" (this build targets {target.group(1)})" if target else ""
    name = re.search(r"'([\w.]+)'", message)
    needed = next((arch for prefix, arch in _NEEDS if name and name.group(1).startswith(prefix)),
                  None)
    if needed is None:
        return message + built
    return f"{message}: needs {needed}{' (arch-specific target)' * needed.endswith('a')}{built}"


def tool_level(r: RawRecord, source: str, ptx: str | None) -> Diagnostic:
    """ptxas/nvlink/nvcc records without a location: find the line from what they name."""
    message, line, notes = r.message, None, []
    if m := re.search(r"(?:Unresolved extern function|Undefined reference to) '([^']+)'", message):
        name = scan.demangle(m.group(1))
        sites = scan.call_sites(source, name)
        line = sites[0] if sites else None
        message = f"unresolved extern function '{name}': it is declared but never defined"
        notes.append("define it in this file (kernels are compiled whole, without -rdc)")
        notes += [f"also called at line {n}" for n in sites[1:4]]
    elif m := re.search(r"Entry function '([^']+)' uses too much (shared|local) data "
                        r"\((0x[0-9a-f]+) bytes, (0x[0-9a-f]+) max\)", message):
        kernel, used, cap = m.group(1), int(m.group(3), 16), int(m.group(4), 16)
        decls = scan.shared_declarations(source, kernel) if m.group(2) == "shared" else []
        line = decls[0] if decls else scan.launch_bounds_line(source, kernel)
        message = (f"kernel {kernel} uses too much {m.group(2)} data: {used} bytes, "
                   f"{cap} max")
        if decls:
            notes.append(f"__shared__ declarations of {kernel}: lines "
                         + ", ".join(map(str, decls)))
        if m.group(2) == "shared":
            notes.append("static __shared__ is capped at 48 KiB; use smaller tiles or "
                         "extern __shared__ with a launch smem= above 48 KiB")
    elif m := re.search(r"entry '?(\w+)'?|function '(\w+)'", message):
        kernel = m.group(1) or m.group(2)
        line = scan.launch_bounds_line(source, kernel)
    elif "nvcc" == r.tool and "Unsupported gpu architecture" in message:
        notes.append("pick one of `nvcc --list-gpu-code`")
    message = _arch_hint(message, ptx)
    kind = category(message)
    return finish(Diagnostic(r.severity, line, None, None, message, notes=tuple(notes),
                             category="toolchain" if kind == "syntax" else kind), source)


def spill_warnings(records: list[Diagnostic], source: str,
                    resources: Mapping[str, ResourceUsage]) -> list[Diagnostic]:
    """Spills are a resource warning at the kernel (or its __launch_bounds__) line."""
    out = []
    for kernel, r in resources.items():
        if not (r.spill_stores or r.spill_loads):
            continue
        if any("spill" in d.message and kernel in d.message for d in records):
            continue
        line = scan.launch_bounds_line(source, kernel)
        bounded = "__launch_bounds__" in scan.line_text(source, line)
        why = ("__launch_bounds__ here caps the registers per thread; " if bounded else "")
        message = (f"kernel {kernel} spills registers to local memory: {r.spill_stores} bytes "
                   f"spill stores, {r.spill_loads} bytes spill loads at {r.registers} registers")
        notes = (why + "use fewer live values (smaller tiles/unrolling) or relax the bound",)
        out.append(finish(Diagnostic("warning", line, None, None, message, notes=notes,
                                      category="resource"), source))
    return out
