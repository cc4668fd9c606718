"""Compiler output -> structured records -> compact text for the model (never the raw log).

PLACEHOLDER: the interface below is stable; the parsing is being written (issue 2, item 5).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Diagnostic:
    """One thing a person (or model) should fix; `line` is the line to edit, None if no source line."""

    severity: str  # "error" or "warning"
    line: int | None
    column: int | None
    code: str | None  # nvcc's diagnostic number ("20" for #20-D), ptxas/nvlink have none
    message: str
    source: str = ""  # the text of `line`
    notes: tuple[str, ...] = ()
    category: str = "syntax"  # syntax | resource | arch | link | policy | toolchain | contract
    count: int = 1  # how many times the same error was reported

    def to_json(self) -> dict[str, Any]:
        """Exactly the record schema of `kgen compile --json` (design.md)."""
        notes = list(self.notes)
        if self.count > 1:
            notes.append(f"reported {self.count} times")
        return {"severity": self.severity, "line": self.line, "column": self.column,
                "code": self.code, "message": self.message, "source": self.source,
                "notes": notes}


@dataclass(frozen=True)
class ResourceUsage:
    """Per-kernel resources as ptxas reports them (-Xptxas -v)."""

    registers: int = 0
    shared_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    stack_bytes: int = 0
    extra: Mapping[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, int]:
        return {"registers": self.registers, "shared_bytes": self.shared_bytes,
                "spill_stores": self.spill_stores, "spill_loads": self.spill_loads,
                "stack_bytes": self.stack_bytes}


_NVCC_LINE = re.compile(r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+)\): (?P<sev>error|warning)"
                        r"(?: #(?P<code>\d+)-D)?: (?P<msg>.*)$")


def parse(log: str, source: str, ptx: str | None = None) -> tuple[Diagnostic, ...]:
    """Turn a combined nvcc/cudafe/ptxas/nvlink log into records, roots first."""
    lines = source.splitlines()
    records = []
    for raw in log.splitlines():
        m = _NVCC_LINE.match(raw.strip())
        if m:
            n = int(m.group("line"))
            text = lines[n - 1] if 0 < n <= len(lines) else ""
            records.append(Diagnostic(m.group("sev"), n, None, m.group("code"), m.group("msg"),
                                      text))
        elif "error" in raw and ("ptxas" in raw or "nvcc fatal" in raw or "nvlink" in raw):
            records.append(Diagnostic("error", None, None, None, raw.strip(), "",
                                      category="toolchain"))
    return tuple(records)


def summarize(diagnostics: Iterable[Diagnostic], source: str,
              resources: Mapping[str, ResourceUsage] | None = None, budget: int = 3000) -> str:
    """Compact text for the model: records with the offending lines in context, under budget."""
    out = []
    for d in diagnostics:
        where = f"line {d.line}" if d.line else "no line"
        out.append(f"{d.severity}  {where}  {d.message}")
        if d.source:
            out.append(f"  {d.line} | {d.source}")
    for name, r in (resources or {}).items():
        out.append(f"resource  kernel {name}: {r.registers} registers, "
                   f"{r.shared_bytes} bytes shared, {r.spill_stores} bytes spill stores")
    return "\n".join(out)[:budget]


_ENTRY = re.compile(r"ptxas info\s*: Compiling entry function '(?P<name>[^']+)'")
_PROPS = re.compile(r"(?P<stack>\d+) bytes stack frame, (?P<st>\d+) bytes spill stores, "
                    r"(?P<ld>\d+) bytes spill loads")
_USED = re.compile(r"ptxas info\s*: Used (?P<regs>\d+) registers(?P<rest>.*)")


def parse_resources(log: str) -> dict[str, ResourceUsage]:
    """Per-entry-function resources from `-Xptxas -v` output."""
    found: dict[str, ResourceUsage] = {}
    current: str | None = None
    props: dict[str, int] = {}
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            current, props = m.group("name"), {}
        elif current and (m := _PROPS.search(line)):
            props = {"stack": int(m.group("stack")), "st": int(m.group("st")),
                     "ld": int(m.group("ld"))}
        elif current and (m := _USED.search(line)):
            smem = re.search(r"(\d+) bytes smem", m.group("rest"))
            found[current] = ResourceUsage(int(m.group("regs")),
                                           int(smem.group(1)) if smem else 0,
                                           props.get("st", 0), props.get("ld", 0),
                                           props.get("stack", 0))
            current = None
    return found
