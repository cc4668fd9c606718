"""The other lines a fix touches, named in a record's notes: the declaration of the called function
(its signature), the `const` declaration that makes a write illegal, the earlier declaration in a
redeclaration conflict. Host-only code in a kernel (std::vector, std::sort, rand, a host helper)
collapses from nvcc's pairs of errors on many lines into one record per cause (hostonly.py)."""

from __future__ import annotations

import re
from dataclasses import replace

from kgen.compile import scan
from kgen.compile.records import Diagnostic

_IDENT = re.compile(r"[A-Za-z_]\w*")
_ARG_COUNT = re.compile(r"^too (?:few|many) arguments in function call$")
_INCOMPATIBLE = re.compile(r'^argument of type "(?P<arg>[^"]*)" is incompatible with parameter '
                           r'of type "(?P<param>[^"]*)"')
_CONST_INIT = re.compile(r'^a value of type "const [^"]*" cannot be used to initialize')
_EARLIER = re.compile(r"\((?:previous definition|declared) at line (?P<line>\d+)\)")
_KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "static_cast", "reinterpret_cast",
             "const_cast", "decltype", "else", "do", "case", "new", "delete"}


def annotate(d: Diagnostic, source: str) -> Diagnostic:
    """Add notes naming the declaration lines this error is about (nothing when none is found)."""
    if d.severity != "error" or d.line is None:
        return d
    notes: list[str] = []
    if _ARG_COUNT.match(d.message) or _INCOMPATIBLE.match(d.message):
        notes += _callee_notes(d, source)
    if "modifiable lvalue" in d.message or _CONST_INIT.match(d.message) or (
            (m := _INCOMPATIBLE.match(d.message)) and "const" in m.group("arg")
            and "const" not in m.group("param")):
        notes += _const_notes(d, source)
    if "distinguished by return type alone" in d.message or "already been defined" in d.message \
            or "incompatible with previous" in d.message:
        notes += _earlier_notes(d, source)
    fresh = tuple(n for n in notes if n not in d.notes)
    return replace(d, notes=d.notes + fresh) if fresh else d


def _callee_notes(d: Diagnostic, source: str) -> list[str]:
    """`axpy is declared at line 3: __device__ float axpy(float a, float x, float y)` (and how
    many parameters it takes against the arguments this call passes)."""
    text = scan.code_lines(source)[d.line - 1] if d.line else ""
    call = enclosing_call(text, (d.column or len(text) + 1) - 1)
    if call is None:
        return []
    name, open_at = call
    decls = declarations(source, name, before=None, skip=d.line)
    notes = []
    passed = count_arguments(text, open_at)
    for line in decls[:2]:
        signature = signature_at(source, line, name)
        params = count_arguments(signature, signature.find("("))
        counts = (f" ({params} parameter{'s' * (params != 1)}; this call passes {passed})"
                  if _ARG_COUNT.match(d.message) and params is not None and passed is not None
                  else "")
        notes.append(f"{name} is declared at line {line}: {signature}{counts}")
    return notes


def _const_notes(d: Diagnostic, source: str) -> list[str]:
    """The `const` declaration of the name the error is about, searched back from its line."""
    text = scan.code_lines(source)[d.line - 1] if d.line else ""
    name = _name_at(text, (d.column or 1) - 1)
    if name is None:
        return []
    # `const float* x`, `const float* __restrict__ x`, `float const* x`, `const int k = 3`; a
    # comma or parenthesis ends one declarator, so `const float* A, float* C` leaves C alone.
    pattern = re.compile(rf"\bconst\b[^;{{}}=,()]*?[\s*&]{re.escape(name)}\b")
    code = scan.code_lines(source)
    for line in range(d.line or 0, 0, -1):
        if m := pattern.search(code[line - 1]):
            decl = _clip(" ".join(source.splitlines()[line - 1].split()), 120)
            if "*" not in m.group(0):
                why = "a const variable cannot be assigned"
            elif "modifiable lvalue" in d.message:
                why = "read-only: write the output pointer, or drop this const"
            else:
                why = "a pointer to const stays one: make the receiving side const too"
            return [f"`{name}` is declared const at line {line}: {decl} ({why})"]
    return []


def _earlier_notes(d: Diagnostic, source: str) -> list[str]:
    """The earlier declaration a redeclaration conflicts with, with its text."""
    quoted = re.search(r'"(\w+)"', d.message)
    if m := _EARLIER.search(d.message):
        line = int(m.group("line"))
        text = signature_at(source, line, quoted.group(1)) if quoted else _clip(
            scan.line_text(source, line).strip())
        return [f"earlier declaration at line {line}: {text}"]
    text = scan.code_lines(source)[d.line - 1] if d.line else ""
    name = _name_at(text, (d.column or 1) - 1)
    if name is None:
        return []
    here = signature_at(source, d.line or 0, name)
    arity = count_arguments(here, here.find("("))
    earlier = [n for n in declarations(source, name, before=d.line, skip=d.line)
               if count_arguments(sig := signature_at(source, n, name), sig.find("(")) == arity]
    return [f"earlier declaration at line {n}: {signature_at(source, n, name)}"
            for n in earlier[:2]]


def enclosing_call(text: str, column: int) -> tuple[str, int] | None:
    """(function name, index of its '(') of the innermost call around 0-based `column`."""
    depth = 0
    for i in range(min(column, len(text)) - 1, -1, -1):
        char = text[i]
        if char == ")":
            depth += 1
        elif char == "(":
            if depth:
                depth -= 1
                continue
            head = re.search(r"([A-Za-z_]\w*)\s*(?:<[^<>()]*>)?\s*$", text[:i])
            if head and head.group(1) not in _KEYWORDS:
                return head.group(1), i
    return None


def count_arguments(text: str, open_at: int) -> int | None:
    """Top-level arguments of the parenthesis opened at `open_at`; None if it does not close."""
    if open_at < 0 or open_at >= len(text) or text[open_at] != "(":
        return None
    depth, count, empty = 0, 1, True
    for char in text[open_at:]:
        if char in "([{<" and char != "<":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return 0 if empty else count
        elif char == "," and depth == 1:
            count += 1
        elif not char.isspace() and depth >= 1:
            empty = False
    return None


def declarations(source: str, name: str, before: int | None, skip: int | None) -> list[int]:
    """Lines that declare or define function/variable `name` (not calls), in order."""
    code = scan.code_lines(source)
    use = re.compile(rf"\b{re.escape(name)}\s*[(=;\[]")
    found = []
    for n, text in enumerate(code, start=1):
        if n == skip or (before is not None and n >= before):
            continue
        for m in use.finditer(text):
            # A declaration has a type word right before the name: `float axpy(`, `int* p =`;
            # a call or a use has an operator, `return`, `.` or `->` there.
            head = text[:m.start()]
            word = re.search(r"([A-Za-z_][\w:<>,]*)[\s*&]+$", head)
            if word and word.group(1) not in _KEYWORDS | {"throw", "goto"} \
                    and not head.rstrip().endswith((".", "->")) and "=" not in head:
                found.append(n)
                break
    return found


def signature_at(source: str, line: int, name: str) -> str:
    """The declaration of `name` starting at `line`, up to its closing ')' (several lines
    joined), without the body: `__device__ float axpy(float a, float x, float y)`."""
    lines = source.splitlines()
    text = " ".join(" ".join(lines[n].split()) for n in range(line - 1, min(line + 5, len(lines))))
    start = text.find(name)
    open_at = text.find("(", start)
    stops = [i for i in (text.find(";", start), text.find("=", start)) if i >= 0]
    if start < 0 or open_at < 0 or (stops and min(stops) < open_at):  # a variable, not a function
        return _clip(" ".join(lines[line - 1].split()))
    depth = 0
    for i in range(open_at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return _clip(text[:i + 1])
    return _clip(text)


def _name_at(text: str, column: int) -> str | None:
    """The identifier at or just after 0-based `column`, skipping `*`, `(`, `&` and spaces."""
    m = re.compile(r"[\s*(&]*([A-Za-z_]\w*)").match(text, max(column, 0))
    return m.group(1) if m else None


def _clip(text: str, width: int = 160) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."
