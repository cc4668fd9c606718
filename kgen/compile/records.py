"""The compile stage's records: one Diagnostic per thing to fix, ptxas resources, and the raw
record as a log states it before the rules move it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Diagnostic:
    """One thing a person (or model) should fix; `line` is the line to edit (None: no line)."""

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
        """Exactly the record schema of `kgen compile --json` (README, stable interface)."""
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


@dataclass
class RawRecord:
    """One record as the log states it, before the rules move it (mutable while reading)."""

    severity: str
    tool: str  # "front" (cudafe/EDG), "ptxas", "nvcc", "nvlink", "fatbinary"
    message: str
    file: str | None = None
    line: int | None = None
    code: str | None = None
    echo: str | None = None  # the source line as the compiler printed it
    caret: int | None = None  # 0-based index of '^' under `echo`
    notes: list[str] = field(default_factory=list)
    instantiated_at: list[int] = field(default_factory=list)  # compiled-file lines, inner first
    end_of_source: bool = False
    ptx_line: int | None = None
    column: int | None = None  # only the host preprocessor states it outright


@dataclass(frozen=True)
class CompileResult:
    """What nvcc made of one source for one arch; `cubin` is None when it failed."""

    arch: str
    cubin: bytes | None
    diagnostics: tuple[Diagnostic, ...] = ()
    resources: Mapping[str, ResourceUsage] = field(default_factory=dict)
    seconds: float = 0.0
    log: str = ""  # the log (secrets redacted, host paths shortened), for the run directory only
    ptx: str | None = None
    summary: str = ""
    cached: bool = False
    isolation: str = ""
    headers: tuple[str, ...] = ()  # local headers the preprocessor read, relative to the folder

    @property
    def ok(self) -> bool:
        return self.cubin is not None

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity == "error")

    def to_json(self) -> dict[str, Any]:
        """The stable `kgen compile --json` schema (README)."""
        return {"ok": self.ok, "arch": self.arch, "seconds": round(self.seconds, 3),
                "diagnostics": [d.to_json() for d in self.diagnostics],
                "resources": {k: r.to_json() for k, r in self.resources.items()},
                "summary": self.summary}
