"""The include policy for untrusted source: only CUDA/system headers and the source's own folder.

Checked before nvcc runs, on the text the preprocessor sees: backslash-newlines joined, comments
blanked, and the `%:` digraph read as `#`, so `#/**/include`, `#inc\\<newline>lude` and
`%:include` cannot slip a path past it. Bubblewrap (when usable) is the second wall.
"""

from __future__ import annotations

import re
from pathlib import Path

from kgen.compile.records import Diagnostic

_DIRECTIVE = re.compile(r"^\s*(?:#|%:|\?\?=)\s*(?P<kind>include_next|include|import|embed)\b"
                        r"(?P<target>.*)$")
_COMMENT_OR_LITERAL = re.compile(r'//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:\\.|[^"\\\n])*"|'
                                 r"'(?:\\.|[^'\\\n])*'", re.DOTALL)


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first physical line, text) of each logical line, as translation phases 2-3 see it."""
    chars: list[str] = []
    origin: list[int] = []
    line, i = 1, 0
    text = text.replace("\r\n", "\n")
    while i < len(text):
        if text[i] == "\\" and text[i + 1:i + 2] == "\n":  # a spliced line continues
            line, i = line + 1, i + 2
            continue
        chars.append(text[i])
        origin.append(line)
        line += text[i] == "\n"
        i += 1
    joined = "".join(chars)

    def blank(m: re.Match[str]) -> str:
        if m.group(0)[0] in "\"'":
            return m.group(0)
        return " " * len(m.group(0))  # a comment is whitespace, even across lines

    cleaned = _COMMENT_OR_LITERAL.sub(blank, joined)
    out, start = [], 0
    for piece in cleaned.split("\n"):
        out.append((origin[start] if start < len(origin) else line, piece))
        start += len(piece) + 1
    return out


def check_includes(text: str, include_dir: Path | None) -> tuple[Diagnostic, ...]:
    """Refuse includes outside the CUDA/system headers and the source's own folder, before nvcc."""
    refused = []
    physical = text.splitlines()
    for number, line in logical_lines(text):
        m = _DIRECTIVE.match(line)
        if not m:
            continue
        reason = (f"#{m.group('kind')} is not allowed" if m.group("kind") in ("import", "embed")
                  else _include_problem(m.group("target").strip(), include_dir))
        if reason:
            source = physical[number - 1] if number <= len(physical) else line
            column = max(source.find("#"), source.find("%:"), 0) + 1
            refused.append(Diagnostic("error", number, column, None,
                                      f"include refused: {reason}", source, category="policy"))
    return tuple(refused)


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


def local_headers(text: str, include_dir: Path | None, limit: int = 64) -> list[Path]:
    """Files of `include_dir` that the source includes, directly or through each other."""
    if include_dir is None:
        return []
    found: list[Path] = []
    todo = [text]
    while todo and len(found) < limit:
        for _, line in logical_lines(todo.pop()):
            m = _DIRECTIVE.match(line)
            target = m.group("target").strip() if m else ""
            if len(target) < 2 or _include_problem(target, include_dir):
                continue
            path = include_dir / target[1:-1]
            if path.is_file() and path not in found:
                found.append(path)
                todo.append(path.read_text(errors="replace"))
    return found
