"""Records -> the compact text a model (or person) reads: the message, the line, the offending
lines in context, errors first, under a size budget; never the raw log."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kgen.compile.records import Diagnostic, ResourceUsage
from kgen.compile.scan import source_lines


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
    lines = source_lines(source)
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
