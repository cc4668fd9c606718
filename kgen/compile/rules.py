"""Rules that turn log records into what a person should fix: the right line, roots not cascades."""

from __future__ import annotations

import difflib
import math
import re
import time
from collections.abc import Mapping
from dataclasses import replace

from kgen.compile import hostonly, related, scan
from kgen.compile.cudaknow import CUDA_NAMES, REMOVED_WARP_INTRINSICS, header_for, include_advice
from kgen.compile.logparse import parse_resources, read_log
from kgen.compile.records import Diagnostic, RawRecord, ResourceUsage
from kgen.compile.toolrules import finish, ptxas_located, spill_warnings, tool_level

_UNDEFINED = re.compile(r'^identifier "(?P<name>[^"]+)" is undefined$')
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
MAX_RECORDS = 500  # raw records analysed per compile
GUESS_WINDOW = 150  # lines either side of an error searched for did-you-mean names
GUESS_POOL = 2000  # names compared at most
GUESS_SECONDS = 2.0  # did-you-mean work per compile
# What to do about errors whose message alone does not say it (facts from the CUDA guide).
_HINTS = ((re.compile(r"incomplete type \"nvcuda::wmma::fragment<"),
           "wmma shapes: m16n16k16, m32n8k16, m8n32k16 for half/bf16/int8; m16n16k8 for tf32; "
           "m8n8k4 for double"),
          (re.compile(r"calling a __host__ function"),
           "declare the callee __device__ (or __host__ __device__) to call it from a kernel"),
          (re.compile(r"expression must have a constant value"),
           "a __shared__ array needs a compile-time size: a constexpr/template constant, or "
           "extern __shared__ with the size given as the launch's dynamic smem"),
          (re.compile(r"__global__ function must have a void return type"),
           "kernels return void: write results through an output pointer"),
          (re.compile(r"modifiable lvalue"),
           "if this writes through a `const T*` parameter, that buffer is read-only: write to "
           "the output pointer instead"))


def parse(log: str, source: str, ptx: str | None = None) -> tuple[Diagnostic, ...]:
    """A combined nvcc/cudafe/ptxas/nvlink log -> the records a person should act on."""
    return apply(read_log(log), source, ptx, parse_resources(log))


def apply(raws: list[RawRecord], source: str, ptx: str | None,
          resources: Mapping[str, ResourceUsage]) -> tuple[Diagnostic, ...]:
    """Place, classify and collapse raw records; add spill warnings; errors first."""
    if any(r.severity == "error" and r.message != "Ptx assembly aborted due to errors"
           for r in raws):
        raws = [r for r in raws if r.message != "Ptx assembly aborted due to errors"]
    # The work below grows with the records and the source: a flood is read up to a cap (the
    # first records hold the roots), and the rest is counted, not analysed.
    unread = len(raws) - MAX_RECORDS
    raws = raws[:MAX_RECORDS]
    records = [_place(r, source, ptx) for r in _after_restarts(raws)]
    records = _close_brace_root(records, source)
    records = _flood_root(records, source)
    records = hostonly.collapse(records, source)
    records = _merge(records)
    records = _fold_warnings(records)
    deadline = time.monotonic() + GUESS_SECONDS
    records = _fold_same_header([_guess(related.annotate(d, source), source, deadline)
                                 for d in records])
    records += spill_warnings(records, source, resources)
    if unread > 0:
        records.append(Diagnostic("warning", None, None, None, f"{unread} more compiler "
                                  f"messages were not analysed (more than {MAX_RECORDS})",
                                  category="toolchain"))
    records.sort(key=lambda d: (d.severity != "error", d.line is None, d.line or 0))
    return tuple(records)


def _after_restarts(raws: list[RawRecord]) -> list[RawRecord]:
    """Errors where EDG says "parsing restarts here" are echoes of the syntax error before it."""
    out: list[RawRecord] = []
    restart: int | None = None
    for r in raws:
        if "parsing restarts here" in r.message:
            restart = r.line
        elif restart is not None and r.line == restart and r.severity == "error" and out:
            root = next((o for o in reversed(out) if o.severity == "error"), None)
            if root is not None:
                root.notes.append(f"then at line {r.line}: {r.message}")
            else:
                out.append(r)
        else:
            restart = None if r.line != restart else restart
            out.append(r)
    return out


def _place(r: RawRecord, source: str, ptx: str | None) -> Diagnostic:
    """The line, column and category one raw record deserves."""
    if r.tool == "ptxas" and r.ptx_line is not None:
        return ptxas_located(r, source, ptx)
    if r.tool != "front" and r.tool != "host":
        return tool_level(r, source, ptx)
    line, notes = r.line, list(r.notes)
    if r.end_of_source:
        line = None
    elif not scan.is_compiled_file(r.file):
        # An error inside a CUDA header: attribute it to the line here that instantiated it.
        notes.insert(0, f"reported inside {r.file and r.file.rsplit('/', 1)[-1]} line {r.line}")
        line = r.instantiated_at[-1] if r.instantiated_at else None
    column = _column(r, source, line) if scan.is_compiled_file(r.file) else None
    d = Diagnostic(r.severity, line, column, r.code, r.message, notes=tuple(notes))
    if r.message == 'expected a ";"' and line is not None:
        d = _semicolon(d, source)
    return finish(d, source)


def _column(r: RawRecord, source: str, line: int | None) -> int | None:
    """1-based column in the real line; the echo may be preprocessed (__global__ rewritten)."""
    if r.column is not None and line == r.line:
        return r.column
    if r.echo is None or r.caret is None or line is None:
        return None
    echo, index = r.echo[2:], r.caret - 2
    text = scan.line_text(source, line)
    if index < 0 or index > len(echo):
        return None
    tail = echo[index:]
    if text == echo:
        return index + 1
    if tail and text.endswith(tail):
        return len(text) - len(tail) + 1
    token = re.match(r"\w+|\S", tail)
    found = text.find(token.group(0)) if token else -1
    return found + 1 if found >= 0 else None


def _semicolon(d: Diagnostic, source: str) -> Diagnostic:
    """nvcc names the line after a missing ';' - point at the end of the previous statement."""
    text = scan.line_text(source, d.line)
    first = len(text) - len(text.lstrip()) + 1
    if d.line is None or (d.column is not None and d.column > first):
        return d  # the ';' is missing inside this line (a for header, say)
    previous = scan.previous_statement_line(source, d.line)
    if previous is None:
        return d
    end = len(scan.line_text(source, previous).rstrip()) + 1
    return replace(d, line=previous, column=end,
                   notes=d.notes + (f"nvcc reported it at line {d.line}, where the statement "
                                    "runs on",))


def _collapse_after(records: list[Diagnostic], root: Diagnostic, start: int) -> list[Diagnostic]:
    """Keep errors before line `start`, fold the rest into `root` as one note."""
    kept = [d for d in records if d.severity != "error" or d.line is None or d.line < start]
    folded = [d for d in records if d not in kept]
    if folded:
        lines = sorted({d.line for d in folded if d.line})
        span = f"line {lines[0]}" if lines[0] == lines[-1] else f"lines {lines[0]}-{lines[-1]}"
        root = replace(root, notes=root.notes + (
            f"{len(folded)} follow-on errors collapsed ({span})",))
    return kept + [root]


def _close_brace_root(records: list[Diagnostic], source: str) -> list[Diagnostic]:
    """`At end of source: expected a "}"`: the brace belongs before the first error it caused."""
    root = next((d for d in records if d.line is None and d.message == 'expected a "}"'), None)
    if root is None:
        return records
    rest = [d for d in records if d is not root]
    opened = [int(m.group(1)) for n in root.notes if (m := re.search(r"at line (\d+)$", n))]
    line = _unclosed_end(source, opened[0] if opened else 1)
    if line is None:
        return records
    column = len(scan.line_text(source, line).rstrip()) + 1
    notes = root.notes + ("a '}' is missing at or after the end of this line",)
    placed = finish(replace(root, line=line, column=column, notes=notes), source)
    return _collapse_after(rest, placed, line)


_TOP_LEVEL = re.compile(r"^(extern|template|__global__|__device__|__host__|static|inline|struct|"
                        r"class|namespace|typedef|using|void|int|float|double|auto|const)\b")


def _unclosed_end(source: str, opened: int) -> int | None:
    """Where a '}' is missing: before the next top-level definition that starts inside the
    still-open block (unindented, at depth > 0), else at the end of the file."""
    depths, code = scan.brace_depths(source), scan.code_lines(source)
    for n in range(opened + 1, len(code) + 1):
        text = code[n - 1]
        definition = _TOP_LEVEL.match(text) and (
            ("(" in text and not text.rstrip().endswith(";"))
            or re.match(r"(template|struct|class|namespace)\b", text))
        if definition and depths[n - 2] > 0:
            return scan.previous_statement_line(source, n)
    return scan.last_code_line(source)


def _flood_root(records: list[Diagnostic], source: str) -> list[Diagnostic]:
    """A flood of `expected a declaration`: a '}' closed the function early; point at it."""
    flood = [d.line for d in records if d.message == "expected a declaration" and d.line]
    if not flood:
        return records
    line = scan.early_close_line(source, min(flood))
    if line is None:
        return records
    root = finish(Diagnostic(
        "error", line, None, None, "unbalanced braces: this '}' closes the function early, "
        "so the code after it is outside any function (expected a declaration)",
        notes=(f"nvcc first complained at line {min(flood)}",)), source)
    return _collapse_after(records, root, line)


def _merge(records: list[Diagnostic]) -> list[Diagnostic]:
    """Same error on the same line: one record with a count; later errors on a line: notes;
    the same undefined name on later lines: one record that lists them."""
    out: list[Diagnostic] = []
    for d in records:
        same = next((i for i, o in enumerate(out) if o.severity == d.severity
                     and o.line == d.line and o.message == d.message), None)
        if same is not None:
            out[same] = replace(out[same], count=out[same].count + d.count)
            continue
        if d.severity == "error" and d.line is not None:
            earlier = next((i for i, o in enumerate(out) if o.severity == "error"
                            and (o.line == d.line or (_UNDEFINED.match(d.message)
                                                      and o.message == d.message))), None)
            if earlier is not None:
                o = out[earlier]
                if o.line == d.line:
                    extra = tuple(n for n in (f"then: {d.message}",) + d.notes[:2]
                                  if n not in o.notes and not n.startswith("ptxas names"))
                    out[earlier] = replace(o, notes=o.notes + extra)
                else:
                    out[earlier] = _also(o, "also undefined at line", d.line)
                continue
        out.append(d)
    return out


def _also(d: Diagnostic, prefix: str, line: int | None) -> Diagnostic:
    """Add `line` to the record's "<prefix>(s) a, b" note, creating it when missing."""
    notes = list(d.notes)
    plural = prefix.removesuffix("line") + "lines"
    i = next((k for k, n in enumerate(notes) if n.startswith((prefix + " ", plural))), None)
    if i is None:
        notes.append(f"{prefix} {line}")
    else:
        numbers = notes[i].split(" line", 1)[1].removeprefix("s").strip()
        notes[i] = f"{plural} {numbers}, {line}"
    return replace(d, notes=tuple(notes))


def _nearby_names(source: str, line: int | None) -> set[str]:
    """Identifiers spelled within GUESS_WINDOW lines of `line` (the whole file when it is small),
    at most GUESS_POOL of them: what a did-you-mean compares against stays bounded."""
    code = scan.code_lines(source)
    if line is None or len(code) <= 2 * GUESS_WINDOW:
        lines: tuple[str, ...] | list[str] = code
    else:
        lines = code[max(0, line - 1 - GUESS_WINDOW):line + GUESS_WINDOW]
    found: set[str] = set()
    for text in lines:
        found.update(m.group(0) for m in _IDENT.finditer(text))
        if len(found) >= GUESS_POOL:
            break
    return found


def _fold_same_header(records: list[Diagnostic]) -> list[Diagnostic]:
    """Undefined names that one missing #include explains collapse into the first of them."""
    out: list[Diagnostic] = []
    for d in records:
        hint = next((n for n in d.notes if n.startswith("add #include")), None)
        first = next((i for i, o in enumerate(out) if hint and hint in o.notes), None)
        if first is None:
            out.append(d)
            continue
        name = _UNDEFINED.match(d.message)
        label = f"also undefined, same header: {name.group('name') if name else d.message} at line"
        out[first] = _also(out[first], label, d.line)
    return out


def _fold_warnings(records: list[Diagnostic]) -> list[Diagnostic]:
    """A front-end warning on a line that has an error is usually its echo: keep it as a note."""
    errors = {d.line: i for i, d in enumerate(records) if d.severity == "error" and d.line}
    out = list(records)
    for d in records:
        if d.severity == "warning" and d.line in errors and d.category == "syntax":
            i = errors[d.line]
            out[i] = replace(out[i], notes=out[i].notes + (f"also warned: {d.message}",))
            out.remove(d)
    return out


def _guess(d: Diagnostic, source: str, deadline: float = math.inf) -> Diagnostic:
    """An undefined name: the closest declared names near it, or the header that declares it."""
    m = _UNDEFINED.match(d.message)
    if not m:
        hint = next((text for pattern, text in _HINTS if pattern.search(d.message)), None)
        if any("declared const at line" in n or "without __device__" in n for n in d.notes):
            hint = None  # a note already names the declaration to change
        return replace(d, notes=d.notes + (hint,)) if hint and d.severity == "error" else d
    name, notes = m.group("name"), list(d.notes)
    header = header_for(name)
    if header:
        notes.insert(0, f"add #include {include_advice(header)}")
    elif REMOVED_WARP_INTRINSICS.match(name):
        notes.insert(0, f"{name} was removed; use {name}_sync(0xffffffff, ...) instead")
    elif time.monotonic() < deadline:
        pool = (_nearby_names(source, d.line) | set(CUDA_NAMES)) - {name}
        close = difflib.get_close_matches(name, pool, n=3, cutoff=0.7)
        if close:
            notes.insert(0, "did you mean " + ", ".join(f"`{c}`" for c in close) + "?")
    return replace(d, notes=tuple(notes))


