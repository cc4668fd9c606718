"""Host-only code in device code: nvcc reports a pair of errors ("calling a __host__ function ...
is not allowed", "identifier ... is undefined in device code") for every member a host library
type drags in, on every line that touches it. They collapse into one record per cause: a std
facility (what to use instead), a C library function, or a helper in this file declared without
__device__ (its declaration line and signature)."""

from __future__ import annotations

import re
from dataclasses import replace

from kgen.compile import scan
from kgen.compile.cudaknow import (
    CLIB_INSTEAD,
    HOST_ONLY_ALIASES,
    HOST_ONLY_HELPERS,
    HOST_ONLY_INSTEAD,
    STD_INSTEAD,
)
from kgen.compile.records import Diagnostic
from kgen.compile.related import declarations, signature_at

_HOST_CALL = re.compile(r'^calling a (?:constexpr )?__host__ function\("(?P<callee>.*)"\) from a '
                        r'__\w+__ function\("(?P<caller>.*)"\) is not allowed')
_UNDEFINED = re.compile(r'^identifier "(?P<name>.*)" is undefined in device code$')
_STD = re.compile(r"\bstd::(?:__cxx11::)?(\w+)")

Cause = tuple[str, str]  # (kind, name): ("std", "vector"), ("clib", "rand"), ("user", "clamp01")


def collapse(records: list[Diagnostic], source: str) -> list[Diagnostic]:
    """One record per host-only cause in place of its scattered error pairs; others unchanged."""
    causes = [_cause(d, source) for d in records]
    _adopt_helpers(records, causes)
    groups: dict[Cause, list[Diagnostic]] = {}
    for d, cause in zip(records, causes, strict=True):
        if cause is not None:
            groups.setdefault(cause, []).append(d)
    out: list[Diagnostic] = []
    done: set[Cause] = set()
    for d, cause in zip(records, causes, strict=True):
        if cause is None:
            out.append(d)
        elif cause not in done:
            done.add(cause)
            out.append(_record(cause, groups[cause], source))
    return out


def _cause(d: Diagnostic, source: str) -> Cause | None:
    """What a host-only error is about; None for other errors (and for helpers, for now)."""
    if d.severity != "error":
        return None
    if m := _HOST_CALL.match(d.message):
        text, plain = f"{m.group('callee')} {m.group('caller')}", _plain(m.group("callee"))
    elif m := _UNDEFINED.match(d.message):
        text, plain = m.group("name"), _plain(m.group("name"))
    else:
        return None
    found = [HOST_ONLY_ALIASES.get(n, n) for n in _STD.findall(text)]
    spelled = [n for n in found if n not in HOST_ONLY_HELPERS and _spelled(source, n)]
    public = spelled or [n for n in found if n not in HOST_ONLY_HELPERS]
    if public:
        return ("std", public[0])
    if found:
        return ("helper", found[0])
    if re.search(rf"\bstd::{re.escape(plain)}\b", "\n".join(scan.code_lines(source))):
        return ("std", HOST_ONLY_ALIASES.get(plain, plain))  # a constexpr std::max, say
    return ("user" if declarations(source, plain, None, None) else "clib", plain)


def _plain(callee: str) -> str:
    """`clamp01(float)` -> clamp01; `void  ::std::sort<float *> (T1, T1)` -> sort."""
    head = re.sub(r"<.*?>|\(.*", "", callee).strip().split()
    return (head[-1] if head else callee).split("::")[-1]


def _spelled(source: str, name: str) -> bool:
    canonical = {name} | {k for k, v in HOST_ONLY_ALIASES.items() if v == name}
    code = "\n".join(scan.code_lines(source))
    return any(re.search(rf"\bstd::{re.escape(n)}\b", code) for n in canonical)


def _adopt_helpers(records: list[Diagnostic], causes: list[Cause | None]) -> None:
    """A helper's error (std::allocator, say) joins the library type reported on its line."""
    for i, cause in enumerate(causes):
        if cause is None or cause[0] != "helper":
            continue
        owner = next((c for d, c in zip(records, causes, strict=True) if c is not None
                      and c[0] != "helper" and d.line == records[i].line), None)
        causes[i] = owner or ("std", cause[1])


def _record(cause: Cause, group: list[Diagnostic], source: str) -> Diagnostic:
    kind, name = cause
    lines = sorted({d.line for d in group if d.line})
    first = group[0]
    line = _root_line(source, kind, name, lines) if kind != "user" else first.line
    notes: list[str] = []
    if kind == "user":
        message = next((d.message for d in group if _HOST_CALL.match(d.message)), first.message)
        for decl in declarations(source, name, None, None)[:1]:
            notes.append(f"{name} is declared at line {decl} without __device__: "
                         f"{signature_at(source, decl, name)}")
    elif kind == "std":
        message = f"std::{name} is host-only: it cannot be used in device code"
        notes.append(f"use instead: {HOST_ONLY_INSTEAD.get(name, STD_INSTEAD)}")
    else:
        message = f"{name} is a host-only C library function: it cannot be called from device code"
        notes.append(f"use instead: {HOST_ONLY_INSTEAD.get(name, CLIB_INSTEAD)}")
    rest = [n for n in lines if n != line]
    if rest:
        notes.append(f"also at line{'s' * (len(rest) > 1)} {', '.join(map(str, rest))}")
    if len(group) > 1:
        notes.append(f"{len(group)} nvcc errors from this one cause collapsed")
    return replace(first, line=line, column=None if line != first.line else first.column,
                   message=message, source=scan.line_text(source, line),
                   notes=tuple(notes) + tuple(n for n in first.notes if n not in notes))


def _root_line(source: str, kind: str, name: str, lines: list[int]) -> int | None:
    """Where the cause is spelled in the function of the first error (a std::map's errors are
    reported at the closing brace, where its destructor runs)."""
    if not lines:
        return None
    start = _function_start(source, lines[0])
    names = {name} | {k for k, v in HOST_ONLY_ALIASES.items() if v == name}
    spelled = (rf"\bstd::(?:{'|'.join(map(re.escape, names))})\b" if kind == "std"
               else rf"\b{re.escape(name)}\s*\(")
    code = scan.code_lines(source)
    for n in range(start, lines[-1] + 1):
        if re.search(spelled, code[n - 1]):
            return n
    return lines[0]


def _function_start(source: str, line: int) -> int:
    """The first line of the top-level definition that `line` sits in (brace depth 0 before)."""
    depths = scan.brace_depths(source)
    n = min(line, len(depths))
    while n > 1 and depths[n - 2] > 0:
        n -= 1
    return n
