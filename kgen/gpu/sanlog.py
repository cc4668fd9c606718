"""compute-sanitizer's text output -> Findings, each mapped to a source line and to the buffer a
bad address is in. The format (memcheck, racecheck, initcheck), one record per header line, its
details indented below it, every line prefixed `========= `:

    ========= Invalid __global__ write of size 4 bytes
    =========     at gemm_oob+0x2a0 in kernel.cu:11
    =========     by thread (3,15,0) in block (0,0,0)
    =========     Address 0x7f3a00000054 is out of bounds
    =========     and is 1 bytes after the nearest allocation at 0x7f3a00000000 of size 84 bytes
    ========= Error: Race reported between Write access at gemm_race+0x1f0 in kernel.cu:13
    =========     and Read access at gemm_race+0x2a0 in kernel.cu:16 [992 hazards]
    ========= Uninitialized __shared__ memory read of size 4 bytes
    =========     at gemm_stale+0x3c0 in kernel.cu:16
    =========     by thread (1,0,0) in block (0,0,0)
    =========     Address 0x4
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kgen.compile.scan import is_compiled_file
from kgen.findings import Finding

_PREFIX = re.compile(r"^=+ ?")
_INVALID = re.compile(r"^Invalid (?P<space>__\w+__ )?(?P<op>read|write|atomic)\w* of size "
                      r"(?P<size>\d+)")
_UNINIT = re.compile(r"^Uninitialized (?P<space>__\w+__) memory read of size (?P<size>\d+)")
_RACE = re.compile(r"^(?:Error|Warning): Race reported between (?P<a>Read|Write) access at "
                   r"(?P<at>.*?)$")
_OTHER_ACCESS = re.compile(r"^and (?P<b>Read|Write) access at (?P<at>.*?)(?: \[(?P<n>[\d,]+) "
                           r"hazards?\])?$")
_HARDWARE = re.compile(r"^(?P<what>(?:Warp|Lane|Device) [A-Z][\w ]+|Out-of-range [\w ]+|"
                       r"Misaligned [\w ]+|Illegal [\w ]+)$")
_AT = re.compile(r"^at (?P<func>.+?)\+0x[0-9a-f]+(?: in (?P<file>[^\s:]+):(?P<line>\d+))?$")
_AT_OLD = re.compile(r"^at 0x[0-9a-f]+ in (?P<file>[^\s:]+):(?P<line>\d+):(?P<func>.+)$")
_THREAD = re.compile(r"^by thread \((?P<t>[\d, ]+)\) in block \((?P<b>[\d, ]+)\)")
_ADDRESS = re.compile(r"^(?:Address|Access to) (?P<addr>0x[0-9a-f]+)(?P<rest>.*)$")
_NEAREST = re.compile(r"^and is (?:(?P<n>[\d,]+) bytes? (?P<dir>after|before)|inside) the "
                      r"nearest allocation at (?P<base>0x[0-9a-f]+) of size (?P<size>[\d,]+) bytes")
_LOCATION = re.compile(r"(?P<func>\S.*?)\+0x[0-9a-f]+(?: in (?P<file>[^\s:]+):(?P<line>\d+))?")
_WRAPPED_IN = re.compile(r"^in (?P<file>[^\s:]+):(?P<line>\d+)(?: \[(?P<n>[\d,]+) hazards?\])?$")
_HAZARDS = re.compile(r"^\[(?P<n>[\d,]+) hazards?\]$")


@dataclass
class Raw:
    """One sanitizer record while it is read (mutable)."""

    tool: str
    what: str
    kernel: str = ""
    file: str = ""
    line: int | None = None
    other_line: int | None = None
    thread: str = ""
    block: str = ""
    address: int | None = None
    misaligned: bool = False
    base: int | None = None
    count: int = 1
    space: str = ""
    op: str = ""
    details: list[str] = field(default_factory=list)


def records(text: str, tool: str) -> list[Raw]:
    """Every finding record in the output, in order (summaries and host frames skipped)."""
    found: list[Raw] = []
    current: Raw | None = None
    for raw_line in text.splitlines():
        if not raw_line.startswith("="):
            continue
        body = _PREFIX.sub("", raw_line, count=1)
        if not body.strip():
            continue
        if not body.startswith(" "):  # a header: a new record, or a summary line
            current = _header(body.strip(), tool)
            if current is not None:
                found.append(current)
            continue
        if current is not None:
            _detail(current, body.strip())
    return found


def _header(text: str, tool: str) -> Raw | None:
    if m := _INVALID.match(text):
        space = (m.group("space") or "").strip()
        return Raw(tool, f"invalid {space + ' ' if space else ''}{m.group('op')} of "
                   f"{m.group('size')} bytes", space=space, op=m.group("op"))
    if m := _UNINIT.match(text):
        return Raw(tool, f"uninitialized {m.group('space')} read of {m.group('size')} bytes",
                   space=m.group("space"), op="read")
    if m := _RACE.match(text):
        raw = Raw(tool, f"shared-memory race: {m.group('a').lower()}", count=0)
        _place(raw, m.group("at"))
        return raw
    if m := _HARDWARE.match(text):
        return Raw(tool, m.group("what").strip().lower())
    return None


def _detail(raw: Raw, text: str) -> None:
    if m := (_AT.match(text) or _AT_OLD.match(text)):
        raw.kernel, raw.file = m.group("func"), m.group("file") or ""
        raw.line = int(m.group("line")) if m.group("line") else None
    elif m := _OTHER_ACCESS.match(text):
        if " vs " not in raw.what:
            raw.what += f" vs {m.group('b').lower()}"
            other = _LOCATION.match(m.group("at"))
            raw.other_line = int(other.group("line")) if other and other.group("line") else None
        raw.count += _hazards(m.group("n")) if m.group("n") else 0
    elif m := _WRAPPED_IN.match(text):  # a long location wrapped onto its own line
        if raw.line is None:
            raw.line, raw.file = int(m.group("line")), m.group("file")
        elif raw.other_line is None and " vs " in raw.what:
            raw.other_line = int(m.group("line"))
        raw.count += _hazards(m.group("n")) if m.group("n") else 0
    elif m := _HAZARDS.match(text):
        raw.count += _hazards(m.group("n"))
    elif m := _THREAD.match(text):
        raw.thread, raw.block = _dims(m.group("t")), _dims(m.group("b"))
    elif m := _ADDRESS.match(text):
        raw.address, raw.misaligned = int(m.group("addr"), 16), "misaligned" in m.group("rest")
    elif m := _NEAREST.match(text):
        raw.base = int(m.group("base"), 16)
    else:
        raw.details.append(text)


def _hazards(text: str | None) -> int:
    return int(text.replace(",", "")) if text else 1


def _place(raw: Raw, at: str) -> None:
    m = _LOCATION.match(at)
    if m:
        raw.kernel, raw.file = m.group("func"), m.group("file") or ""
        raw.line = int(m.group("line")) if m.group("line") else None


def _dims(text: str) -> str:
    return "(" + ",".join(p.strip() for p in text.split(",")) + ")"


def findings(text: str, tool: str, buffers: Mapping[str, Mapping[str, Any]]) -> list[Finding]:
    """Findings grouped by what, where and which buffer, with counts; the candidate's own source
    lines first. `buffers` is the worker's layout: name -> start, bytes, element."""
    grouped: dict[tuple, Finding] = {}
    for raw in records(text, tool):
        bucket, where = locate(raw, buffers)
        finding = Finding(tool, _what(raw), raw.line if is_compiled_file(raw.file) else None,
                          raw.file, raw.kernel, raw.thread, raw.block, where, raw.other_line,
                          max(raw.count, 1))
        key = (finding.what, finding.line, finding.other_line, bucket, finding.file)
        if key in grouped:
            grouped[key] = replace(grouped[key], count=grouped[key].count + raw.count)
        else:
            grouped[key] = finding
    return sorted(grouped.values(), key=lambda f: (f.line is None, -f.count))


def _what(raw: Raw) -> str:
    if raw.misaligned:
        return raw.what.replace("invalid", "misaligned", 1)
    if raw.what.startswith("invalid") and raw.address is not None:
        return raw.what.replace("invalid", "out-of-bounds", 1)
    return raw.what


def locate(raw: Raw, buffers: Mapping[str, Mapping[str, Any]]) -> tuple[str, str]:
    """(bucket, words): which buffer a bad address belongs to and how far outside it. Records
    in the same bucket (one buffer and side, or shared memory) are one finding."""
    address = raw.address
    if address is None:
        return "", ""
    if raw.space == "__shared__":
        return "shared", f"shared-memory offset {address:#x}"
    owner, words = _owner(raw, address, buffers)
    side = "past" if "past the end" in words else "before" if "before the start" in words else ""
    return f"{owner}:{side}", words


def _owner(raw: Raw, address: int, buffers: Mapping[str, Mapping[str, Any]]) -> tuple[str, str]:
    spans = {name: (int(b["start"]), int(b["start"]) + int(b["bytes"]), int(b["element"]))
             for name, b in buffers.items()}
    owner = next((n for n, (s, _, _) in spans.items() if raw.base is not None and s == raw.base),
                 None)
    if owner is None:  # no allocation named: the buffer the address is in or closest to
        owner = min(spans, key=lambda n: _distance(address, spans[n]), default=None)
    if owner is None:
        return "", f"address {address:#x}, outside every buffer of the kernel"
    start, end, element = spans[owner]
    count = (end - start) // max(element, 1)
    index = (address - start) // max(element, 1) if address >= start else None
    if address >= end:
        past = (address - end) // max(element, 1) + 1
        return owner, (f"{owner}[{index}], {past} element{'s' * (past > 1)} past the end of "
                       f"{owner} (which has {count})")
    if address < start:
        return owner, (f"{start - address} bytes before the start of {owner} (which has {count} "
                       "elements)")
    if raw.misaligned:
        return owner, f"byte offset {address - start} into {owner}, not aligned for this access"
    if raw.what.startswith("uninitialized"):
        return owner, f"{owner}[{index}], read before anything wrote it"
    return owner, f"inside {owner} (element {index} of {count})"


def _distance(address: int, span: tuple[int, int, int]) -> int:
    start, end, _ = span
    return 0 if start <= address < end else min(abs(address - start), abs(address - end + 1))
