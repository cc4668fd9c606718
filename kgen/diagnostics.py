"""Compiler output -> structured records -> compact text for the model (never the raw log).

`parse` reads what nvcc, cudafe, ptxas, nvlink and fatbinary print; `kgen.diagrules` then moves
each record to the line a person should edit and collapses cascades to their root.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kgen import ptxmap


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


_SEV = r"(?P<sev>catastrophic error|fatal error|error|warning|note|remark)"
_CODE = r"(?: #(?P<code>\d+)(?:-D)?)?"
_LOCATED = re.compile(rf"^(?P<file>[^\s(][^(]*)\((?P<line>\d+)\): {_SEV}{_CODE}: (?P<msg>.*)$")
_END = re.compile(rf"^At end of source: {_SEV}{_CODE}: (?P<msg>.*)$")
_PTXAS_AT = re.compile(r"^ptxas (?P<file>\S+), line (?P<line>\d+); (?P<sev>error|warning|fatal)"
                       r"\s*: (?P<msg>.*)$")
_TOOL = re.compile(r"^(?P<tool>ptxas|nvcc|nvlink|fatbinary|cudafe\+\+|cicc)(?:\s+\S+)?\s+"
                   r"(?P<sev>error|warning|fatal)\s*: (?P<msg>.*)$")
_HOST = re.compile(r"^(?P<file>[^\s:]+):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<sev>fatal error|error|"
                   r"warning|note): (?P<msg>.*)$")
_AT_LINE = re.compile(r"at line (?P<line>\d+)(?: of (?P<file>.+?))?\s*$")
_CARET = re.compile(r"^\s*\^\s*$")
_EXPLAIN = re.compile(r"^\s+(?P<what>(?:argument|operand|object) types? (?:are|is): .*)$")
_DROP = re.compile(r"^(\d+ errors? detected in the compilation|Error limit reached|Compilation "
                   r"terminated|Remark: The warnings can be suppressed|ptxas info|\s+\d+ bytes "
                   r"stack frame|\[\.\.\. output truncated)")


def _severity(word: str) -> str:
    return "warning" if word == "warning" else "note" if word in ("note", "remark") else "error"


def _is_compiled(path: str | None) -> bool:
    return path is not None and path.replace("\\", "/").rsplit("/", 1)[-1] == ptxmap.SOURCE_NAME


def read_log(log: str) -> list[RawRecord]:
    """Records as the log states them: headers, echoed lines, carets, notes, contexts."""
    records: list[RawRecord] = []
    current: RawRecord | None = None
    for raw in log.splitlines():
        line = raw.rstrip()
        if not line.strip() or _DROP.match(line):
            continue
        started = _start(line)
        if started is not None:
            if started.severity == "note" and records:
                records[-1].notes.append(_note_text(started, records[-1]))
                current = None  # the note's own echo is not the error's source line
            elif started.severity != "note":
                records.append(started)
                current = started
            continue
        if current is None:
            continue
        if "detected during" in line or "instantiation of" in line:
            _context(current, line)
        elif m := _EXPLAIN.match(line):
            current.notes.append(m.group("what").strip())
        elif _CARET.match(line) and current.echo is not None and current.caret is None:
            current.caret = line.index("^")
        elif current.echo is None and line.startswith("  ") and current.caret is None:
            current.echo = line
    return records


def _context(record: RawRecord, line: str) -> None:
    """`detected during instantiation of "..." at line N [of FILE]`: remember the user's line."""
    m = _AT_LINE.search(line)
    if m is None:
        return  # the bare "detected during:" that opens a list of instantiations
    what = re.search(r'instantiation of (".*?")', line)
    if m.group("file") is None or _is_compiled(m.group("file")):
        record.instantiated_at.append(int(m.group("line")))
        record.notes.append(f"instantiated at line {m.group('line')}"
                            + (f": {what.group(1)}" if what else ""))
    else:
        record.notes.append(f"instantiated in {_short(m.group('file'))}")


def _start(line: str) -> RawRecord | None:
    """A record header of any tool, or None."""
    if m := _LOCATED.match(line):
        return RawRecord(_severity(m.group("sev")), "front", m.group("msg"), m.group("file"),
                         int(m.group("line")), m.group("code"))
    if m := _END.match(line):
        return RawRecord(_severity(m.group("sev")), "front", m.group("msg"), code=m.group("code"),
                         end_of_source=True)
    if m := _PTXAS_AT.match(line):
        return RawRecord(_severity(m.group("sev")), "ptxas", m.group("msg").strip(),
                         ptx_line=int(m.group("line")))
    if m := _TOOL.match(line):
        return RawRecord(_severity(m.group("sev")), m.group("tool"), m.group("msg").strip())
    if m := _HOST.match(line):
        return RawRecord(_severity(m.group("sev")), "host", m.group("msg"), m.group("file"),
                         int(m.group("line")), column=int(m.group("col") or 0) or None)
    return None


def _short(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _note_text(note: RawRecord, owner: RawRecord) -> str:
    if _is_compiled(note.file):
        same = note.line == owner.line and _is_compiled(owner.file)
        return note.message if same else f"{note.message} at line {note.line}"
    return f"{note.message} ({_short(note.file or '?')}:{note.line})"[:240]


def parse(log: str, source: str, ptx: str | None = None) -> tuple[Diagnostic, ...]:
    """Turn a combined nvcc/cudafe/ptxas/nvlink log into records, roots first."""
    from kgen import diagrules  # the rules import this module's dataclasses

    return diagrules.apply(read_log(log), source, ptx, parse_resources(log))


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f}".removesuffix(".0") + " KiB"


def resource_line(name: str, r: ResourceUsage) -> str:
    """One line of per-kernel resources, as the model sees it."""
    parts = [f"{r.registers} registers"]
    if r.spill_stores or r.spill_loads:
        parts.append(f"{_size(r.spill_stores)} spill stores, {_size(r.spill_loads)} spill loads")
    parts.append(f"{_size(r.shared_bytes)} shared")
    if r.stack_bytes:
        parts.append(f"{_size(r.stack_bytes)} stack")
    return f"resource  kernel {name}: " + ", ".join(parts)


def _clip(text: str, width: int = 140) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def render(d: Diagnostic, source: str, context: int = 1) -> str:
    """One record: header, then `context` lines before the offending line, it, and a caret."""
    tag = d.severity if d.category in ("syntax", "contract") else f"{d.severity} [{d.category}]"
    where = f"line {d.line}" if d.line else "no source line"
    if d.line and d.column:
        where += f" col {d.column}"
    guesses = [n for n in d.notes if n.startswith("did you mean")]
    head = f"{tag}  {where}  {_clip(d.message, 300)}"
    if guesses:  # notes say "did you mean `stride`?"; the one-line form is terser
        head += "  (did you mean: " + guesses[0][13:].rstrip("?").replace("`", "") + ")"
    if d.count > 1:
        head += f"  [x{d.count}]"
    out = [head]
    out += [f"    note: {_clip(n, 200)}" for n in d.notes if not n.startswith("did you mean")]
    lines = source.splitlines()
    if d.line and 0 < d.line <= len(lines):
        width = len(str(d.line))
        for n in range(max(1, d.line - context), d.line + 1):
            out.append(f"  {n:>{width}} | {_clip(lines[n - 1].rstrip())}")
            if n == d.line and d.column and d.column <= 140:
                out.append(f"  {'':>{width}} | {' ' * (d.column - 1)}^")
    return "\n".join(out)


def summarize(diagnostics: Iterable[Diagnostic], source: str,
              resources: Mapping[str, ResourceUsage] | None = None, budget: int = 3000) -> str:
    """Compact text for the model: records with the offending lines in context, under budget."""
    records = sorted(diagnostics, key=lambda d: (d.severity != "error", d.line is None,
                                                 d.line or 0))
    tail = [resource_line(k, r) for k, r in list((resources or {}).items())[:8]]
    room = budget - sum(len(t) + 1 for t in tail) - 80  # 80: the "left out" line
    out: list[str] = []
    for i, d in enumerate(records):
        block = render(d, source)
        if len(block) + 1 > room - sum(len(b) + 1 for b in out):
            block = render(d, source, context=0)  # a tighter form before giving up
        if not out and len(block) + 1 > room:  # never drop the first root: clip it instead
            block = block[:max(room - 1, 0)].rstrip()
        if len(block) + 1 > room - sum(len(b) + 1 for b in out):
            rest = records[i:]
            errors = sum(r.severity == "error" for r in rest)
            out.append(f"... {len(rest)} more records left out ({errors} errors, "
                       f"{len(rest) - errors} warnings)")
            break
        out.append(block)
    return "\n".join(out + tail)[:budget]


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
