"""The include policy's first, fast check: a scanner over the text the preprocessor sees.

It reads lines as translation phases 1-3 do (CR, CRLF and LF line ends, a BOM, NULs as space,
backslash-newlines joined even with spaces between, comments blanked, digit separators inside
numbers, the `%:` digraph read as `#`), so `#/**/include`, `#inc\\<newline>lude` and
`%:include` cannot slip a path past it. It is not what decides: before every compile the
preprocessor itself lists what the source reads (kgen.compile.deps), and bubblewrap, where it
works, shows the compiler only the allowed files.
"""

from __future__ import annotations

import re
from pathlib import Path

from kgen.compile.records import Diagnostic

_SPLICE = re.compile(r"\\[ \t\f\v]*\n")
_DIRECTIVE = re.compile(r"^\s*(?:#|%:|\?\?=)\s*(?P<kind>include_next|include|import|embed)\b"
                        r"(?P<target>.*)$")
# A pp-number first, so a digit separator (1'000) is not read as the start of a char literal.
_COMMENT_OR_LITERAL = re.compile(r"(?<![\w])\.?\d(?:'[0-9A-Za-z_]|[eEpP][+-]|[\w.])*|"
                                 r'//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:\\.|[^"\\\n])*"|'
                                 r"'(?:\\.|[^'\\\n])*'", re.DOTALL)
# Ways the preprocessor can be made to read or quote another file, or say whether one exists.
_LINE_FILE = re.compile(r"^\s*(?:#|%:)\s*(?:line\s+)?\d+\s*\S|^\s*(?:#|%:)\s*line\s+[^\d\s]")
_DEPENDENCY = re.compile(r"^\s*(?:#|%:)\s*pragma\b.*\bdependency\b|\b_Pragma\b.*\bdependency\b")
_HAS_INCLUDE = re.compile(r"\b__has_include(?:_next)?\b")


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first physical line, text) of each logical line, as translation phases 2-3 see it."""
    chars: list[str] = []
    origin: list[int] = []
    line, i = 1, 0
    # Phase 1 as gcc does it: any of CR, LF, CRLF ends a line; a BOM is skipped; NUL is space.
    # (A BOM anywhere is read as space: stricter than gcc, never looser.)
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", " ")
    text = text.replace("\ufeff", " ")
    while i < len(text):
        splice = _SPLICE.match(text, i) if text[i] == "\\" else None
        if splice:  # a spliced line continues (gcc allows spaces between the backslash and EOL)
            line, i = line + 1, splice.end()
            continue
        chars.append(text[i])
        origin.append(line)
        line += text[i] == "\n"
        i += 1
    joined = "".join(chars)

    def blank(m: re.Match[str]) -> str:
        if m.group(0)[0] in "\"'" or not m.group(0).startswith("/"):
            return m.group(0)
        return " " * len(m.group(0))  # a comment is whitespace, even across lines

    cleaned = _COMMENT_OR_LITERAL.sub(blank, joined)
    out, start = [], 0
    for piece in cleaned.split("\n"):
        out.append((origin[start] if start < len(origin) else line, piece))
        start += len(piece) + 1
    return out


def check_includes(text: str, include_dir: Path | None, *, candidate: bool = False,
                   sandboxed: bool = True) -> tuple[Diagnostic, ...]:
    """Refuse includes outside the CUDA/system headers and the source's own folder, before nvcc.

    For a model-written candidate the folder is never looked at here (what it may read is
    decided by the preprocessor's own list); without bubblewrap `__has_include` is refused, since
    it would answer whether a host file exists."""
    refused = []
    physical = text.splitlines()
    for number, line in logical_lines(text):
        reason = _line_problem(line, None if candidate else include_dir, sandboxed)
        if reason:
            source = physical[number - 1] if number <= len(physical) else line
            column = max(source.find("#"), source.find("%:"), 0) + 1
            refused.append(Diagnostic("error", number, column, None,
                                      f"include refused: {reason}", source, category="policy"))
    return tuple(refused)


def _line_problem(line: str, include_dir: Path | None, sandboxed: bool) -> str | None:
    m = _DIRECTIVE.match(line)
    if m:
        if m.group("kind") in ("import", "embed"):
            return f"#{m.group('kind')} is not allowed"
        return _include_problem(m.group("target").strip(), include_dir)
    if _LINE_FILE.match(line):
        return "a #line or line marker naming a file is not allowed (the compiler would quote " \
               "that file in its messages)"
    if _DEPENDENCY.search(line):
        return "a `dependency` pragma is not allowed (it makes the preprocessor look at " \
               "another file)"
    if not sandboxed and _HAS_INCLUDE.search(line):
        return "__has_include is not allowed without bubblewrap (it would say whether a host " \
               "file exists)"
    return None


def _include_problem(target: str, include_dir: Path | None) -> str | None:
    if len(target) < 2 or target[0] + target[-1] not in ('""', "<>"):
        return (f"{target or 'an empty include'} is not a plain \"file\" or <header> name "
                "(computed includes are not allowed)")
    name = target[1:-1]
    if not name or name.startswith(("/", "~", "\\")) or re.match(r"^[A-Za-z]:", name):
        return f"{name} is an absolute path; only CUDA/system headers and the source's own " \
               "folder may be included"
    if ".." in re.split(r"[/\\]", name):
        return f"{name} climbs out of the source's folder"
    # -I makes the folder visible to both "..." and <...>, so a link there is checked either way.
    candidate = include_dir / name if include_dir is not None else None
    if candidate is not None and (candidate.exists() or candidate.is_symlink()):
        resolved = candidate.resolve()
        if not resolved.is_relative_to(include_dir.resolve()):  # type: ignore[union-attr]
            return f"{name} resolves outside the source's folder (a link to {resolved})"
    return None


def directives(text: str) -> list[tuple[int, str]]:
    """(line, name) of each plain #include "name" / <name> in the source."""
    found = []
    for number, line in logical_lines(text):
        m = _DIRECTIVE.match(line)
        target = m.group("target").strip() if m else ""
        if len(target) >= 2 and target[0] + target[-1] in ('""', "<>"):
            found.append((number, target[1:-1]))
    return found
