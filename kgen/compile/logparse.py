"""Read what nvcc, cudafe, ptxas, nvlink and fatbinary print into raw records and resources."""

from __future__ import annotations

import re

from kgen.compile import scan
from kgen.compile.records import RawRecord, ResourceUsage

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
    if m.group("file") is None or scan.is_compiled_file(m.group("file")):
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
    if scan.is_compiled_file(note.file):
        same = note.line == owner.line and scan.is_compiled_file(owner.file)
        return note.message if same else f"{note.message} at line {note.line}"
    return f"{note.message} ({_short(note.file or '?')}:{note.line})"[:240]


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
