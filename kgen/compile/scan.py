"""Source and PTX scanning that diagnostics needs: `.loc` -> .cu line, kernel bodies, declarations.

Everything here works on text only (no compiler), so a log can be re-read long after the compile.
"""

from __future__ import annotations

import re
from functools import lru_cache

SOURCE_NAME = "kernel.cu"

_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)")
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                                re.DOTALL)


def is_compiled_file(path: str | None) -> bool:
    """Whether a path a tool names is the compiled source itself (not a header)."""
    return path is not None and path.replace("\\", "/").rsplit("/", 1)[-1] == SOURCE_NAME


def ptx_to_source_line(ptx: str, ptx_line: int, source_name: str = SOURCE_NAME) -> int | None:
    """The .cu line of the last `.loc` (in the compiled file) at or before `ptx_line` (1-based)."""
    table = _loc_table(ptx, source_name)
    return table[min(ptx_line, len(table)) - 1] if ptx_line > 0 and table else None


@lru_cache(maxsize=8)
def _loc_table(ptx: str, source_name: str) -> tuple[int | None, ...]:
    """For each PTX line, the compiled-file line its last `.loc` names (one pass, cached)."""
    lines = ptx.splitlines()
    files = {m.group(1) for ln in lines if (m := _FILE.match(ln))
             and m.group(2).replace("\\", "/").rsplit("/", 1)[-1] == source_name}
    table: list[int | None] = []
    current: int | None = None
    for text in lines:
        m = _LOC.match(text)
        if m and m.group(1) in files and int(m.group(2)) > 0:
            current = int(m.group(2))
        table.append(current)
    return tuple(table)


@lru_cache(maxsize=32)
def code_lines(source: str) -> tuple[str, ...]:
    """Source lines with comments and string literals blanked (same lengths), for scanning."""
    def blank(m: re.Match[str]) -> str:
        quote = m.group(0)[0] if m.group(0)[0] in "\"'" else ""
        body = re.sub(r"[^\n]", " ", m.group(0)[len(quote):len(m.group(0)) - len(quote)])
        return quote + body + quote
    return tuple(_COMMENT_OR_STRING.sub(blank, source).splitlines())


def line_text(source: str, line: int | None) -> str:
    """The text of 1-based `line`, or "" when there is none."""
    lines = source_lines(source)
    return lines[line - 1] if line is not None and 0 < line <= len(lines) else ""


@lru_cache(maxsize=8)
def source_lines(source: str) -> tuple[str, ...]:
    """source.splitlines(), split once per source however many records ask (a big source and
    many records would otherwise cost their product)."""
    return tuple(source.splitlines())


def previous_statement_line(source: str, line: int) -> int | None:
    """The last non-blank, non-comment line before `line` (where a missing ';' belongs)."""
    code = code_lines(source)
    for n in range(min(line - 1, len(code)), 0, -1):
        if code[n - 1].strip():
            return n
    return None


def last_code_line(source: str) -> int | None:
    """The last line with code on it."""
    return previous_statement_line(source, len(code_lines(source)) + 1)


def brace_depths(source: str) -> list[int]:
    """Brace depth after each line (index 0 is line 1); negative once a '}' has no '{'."""
    depth, out = 0, []
    for text in code_lines(source):
        depth += text.count("{") - text.count("}")
        out.append(depth)
    return out


def early_close_line(source: str, before: int) -> int | None:
    """The last line before `before` whose '}' left file scope (closed a function too early)."""
    depths, prev, found = brace_depths(source), 0, None
    for n, depth in enumerate(depths[:before], start=1):
        if depth < 0 or (prev > 0 and depth <= 0):
            found = n
        prev = depth
    return found


def identifiers(source: str) -> set[str]:
    """Every identifier spelled in the code (not in comments or strings)."""
    return {m.group(0) for text in code_lines(source) for m in _IDENT.finditer(text)}


def kernel_span(source: str, name: str) -> tuple[int, int] | None:
    """(first, last) line of the definition of function `name`, found by brace matching."""
    code = code_lines(source)
    pattern = re.compile(rf"\b{re.escape(name)}\s*\(")
    for start, text in enumerate(code, start=1):
        if not pattern.search(text):
            continue
        depth, opened = 0, False
        for end in range(start, len(code) + 1):
            segment = code[end - 1]
            if not opened and ";" in segment and "{" not in segment:
                break  # a declaration or a call, not the definition
            depth += segment.count("{") - segment.count("}")
            opened = opened or "{" in segment
            if opened and depth <= 0:
                return start, end
    return None


def shared_declarations(source: str, kernel: str | None = None) -> list[int]:
    """Lines declaring `__shared__` arrays, inside `kernel` when its body can be found."""
    code = code_lines(source)
    span = kernel_span(source, kernel) if kernel else None
    first, last = span if span else (1, len(code))
    return [n for n in range(first, last + 1) if "__shared__" in code[n - 1]] or (
        [n for n, text in enumerate(code, start=1) if "__shared__" in text] if span else [])


def launch_bounds_line(source: str, kernel: str) -> int | None:
    """The line of `__launch_bounds__` for `kernel` (it may sit on the line before the name)."""
    span = kernel_span(source, kernel)
    if span is None:
        return None
    code = code_lines(source)
    for n in range(span[0], max(span[0] - 3, 0), -1):
        if "__launch_bounds__" in code[n - 1]:
            return n
    return span[0]


def call_sites(source: str, name: str) -> list[int]:
    """Lines that call `name(...)` rather than declare or define it."""
    pattern = re.compile(rf"\b{re.escape(name)}\s*\(")
    declaration = re.compile(rf"(\b(extern|__device__|__host__|__global__|static|inline)\b.*|"
                             rf"^\s*[\w:<>]+[\s*&]+){re.escape(name)}\s*\(")
    return [n for n, text in enumerate(code_lines(source), start=1)
            if pattern.search(text) and not declaration.search(text)]


def demangle(symbol: str) -> str:
    """The plain name inside an Itanium-mangled symbol (`_Z6helperf` -> `helper`), else itself."""
    m = re.match(r"_ZN?(\d+)(\w+)", symbol)
    if m and len(m.group(2)) >= int(m.group(1)):
        return m.group(2)[:int(m.group(1))]
    return symbol
