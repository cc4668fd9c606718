"""The rule-based fixer behind the builtin model's `fix` mode: small, explained edits for the error
classes it recognizes from nvcc's diagnostics; anything else is left for a language model.

Classes: undefined identifier with a close declared name, missing `;`, missing `}` at the end,
missing cuda_fp16.h / cuda_bf16.h / mma.h, `__shfl*` without `_sync`, a non-void `__global__`,
a host function called from device code, a write through a `const` pointer parameter.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kgen.compile import Diagnostic
from kgen.compile.cudaknow import header_for
from kgen.compile.scan import brace_depths, identifiers

ADVICE = "use an LLM endpoint: --model NAME --base-url URL"

_UNDEFINED = re.compile(r'identifier "(?P<name>[A-Za-z_]\w*)" is undefined')
_HOST_CALL = re.compile(r'calling a __host__ function\("(?P<name>[A-Za-z_][\w:]*)')
_SHFL = re.compile(r"\b__shfl(?P<kind>_down|_up|_xor)?\s*\(")
_KEYWORDS = frozenset("""if else for while do return break continue switch case default int float
double char void bool unsigned signed long short const volatile static inline extern struct class
template typename sizeof auto true false nullptr using namespace constexpr""".split())


@dataclass(frozen=True)
class FixOutcome:
    """The mended source (None when no rule applied), what was changed, and what was not."""

    source: str | None
    edits: tuple[str, ...] = ()
    left: tuple[str, ...] = ()  # errors no rule recognized

    @property
    def give_up(self) -> str | None:
        if self.source is not None:
            return None
        what = "; ".join(self.left[:2]) or "no compile errors a rule recognizes"
        return f"this file is beyond the builtin fixer ({what}); {ADVICE}"


@dataclass
class _Work:
    lines: list[str]
    includes: list[str] = field(default_factory=list)
    edits: list[str] = field(default_factory=list)
    done: set[str] = field(default_factory=set)  # rules that act once per file

    def line(self, number: int | None) -> str:
        return self.lines[number - 1] if number and 0 < number <= len(self.lines) else ""


def mend(source: str, diagnostics: Sequence[Diagnostic]) -> FixOutcome:
    """Apply every rule that recognizes an error; edits keep line numbers until includes go in."""
    # Lines as the compiler numbers them (CR, LF or CRLF); kgen fix puts the file's own line
    # ends back on the lines it does not change.
    work = _Work(re.split(r"\r\n|\r|\n", source))
    left = []
    for d in diagnostics:
        if d.severity != "error":
            continue
        if not any(rule(work, d) for rule in _RULES):
            left.append(f"line {d.line}: {d.message}" if d.line else d.message)
    if not work.edits:
        return FixOutcome(None, (), tuple(left))
    return FixOutcome(_with_includes(work), tuple(work.edits), tuple(left))


def _with_includes(work: _Work) -> str:
    lines = list(work.lines)
    if work.includes:
        # After the // kgen: contract and leading comments, so the contract stays on top.
        at = next((i for i, t in enumerate(lines) if t.strip() and not t.lstrip().startswith("//")),
                  len(lines))
        lines[at:at] = [f"#include <{h}>" for h in work.includes]
    return "\n".join(lines)


def _header(work: _Work, d: Diagnostic) -> bool:
    """Undefined __half / __nv_bfloat16 / nvcuda::wmma names: add the header that declares them."""
    m = _UNDEFINED.search(d.message)
    name = m.group("name") if m else None
    if name is None and ("namespace name" in d.message or '"::"' in d.message) \
            and re.search(r"\b(nvcuda|wmma)\b", work.line(d.line)):
        name = "nvcuda"
    header = header_for(name) if name else None
    if header is None:
        return False
    included = any(re.match(rf"\s*#\s*include\s*[<\"]{re.escape(header)}[>\"]", t)
                   for t in work.lines)
    if included:
        return False  # the header is there; the error is something else
    if header not in work.includes:
        work.includes.append(header)
        work.edits.append(f"added #include <{header}> (it declares {name}, undefined at line "
                          f"{d.line})")
    return True


def _shfl(work: _Work, d: Diagnostic) -> bool:
    """__shfl, __shfl_up/_down/_xor were removed: use the _sync form with a full-warp mask."""
    m = _UNDEFINED.search(d.message)
    if not m or not re.fullmatch(r"__shfl(_down|_up|_xor)?", m.group("name")):
        return False
    if "shfl" not in work.done:
        count = 0
        for i, text in enumerate(work.lines):
            work.lines[i], n = _SHFL.subn(lambda s: f"__shfl{s.group('kind') or ''}_sync("
                                          "0xffffffff, ", text)
            count += n
        work.done.add("shfl")
        work.edits.append(f"replaced {count} pre-Volta __shfl* call(s) with the _sync form "
                          "(mask 0xffffffff: the whole warp takes part)")
    return True


def _undefined(work: _Work, d: Diagnostic) -> bool:
    """A misspelt name: use the closest name declared in the file (difflib, or nvcc's note)."""
    m = _UNDEFINED.search(d.message)
    if not m or not d.line:
        return False
    name, text = m.group("name"), work.line(d.line)
    hinted = [h for note in d.notes for h in re.findall(r"did you mean `(\w+)`", note)]
    known = identifiers("\n".join(work.lines)) - _KEYWORDS - {name}
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
    best = next((h for h in hinted if h in known), None) or (close[0] if close else None)
    if best is None or not re.search(rf"\b{name}\b", text):
        return False
    work.lines[d.line - 1] = re.sub(rf"\b{name}\b", best, text)
    work.edits.append(f"line {d.line}: `{name}` is undefined; replaced it with the declared "
                      f"name `{best}`")
    return True


def _semicolon(work: _Work, d: Diagnostic) -> bool:
    """Append the `;` at the end of the statement (nvcc may name the line after it)."""
    if 'expected a ";"' not in d.message or not d.line:
        return False
    number = d.line
    while number > 1 and (not _code(work.line(number)) or _code(work.line(number))[-1] in ";{}"):
        number -= 1  # nvcc named the next line: walk back to the unterminated statement
    text = work.line(number)
    code = _code(text)
    if not code or code[-1] in ";{}" or code.startswith("#"):
        return False
    work.lines[number - 1] = code + ";" + text[len(code):]
    work.edits.append(f"line {number}: added the missing `;` at the end of the statement")
    return True


def _code(text: str) -> str:
    """The line without a trailing // comment or spaces."""
    return re.sub(r"\s*//.*$", "", text).rstrip()


def _brace(work: _Work, d: Diagnostic) -> bool:
    """`expected a "}"`: close the open block at the end of the file."""
    if 'expected a "}"' not in d.message:
        return False
    if "brace" not in work.done:
        opened = (brace_depths("\n".join(work.lines)) or [0])[-1]
        if opened <= 0:
            return False
        work.done.add("brace")
        while work.lines and not work.lines[-1].strip():
            work.lines.pop()
        work.lines.extend(["}"] * opened + [""])
        work.edits.append(f"added {opened} missing `}}` at the end of the file")
    return True


def _nonvoid_global(work: _Work, d: Diagnostic) -> bool:
    """A __global__ function must return void: change the type, drop the returned values."""
    if "__global__ function must have a void return type" not in d.message or not d.line:
        return False
    pattern = re.compile(r"(__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s+)?)"
                         r"([A-Za-z_][\w:<>]*(?:\s*\*+)?)(\s+[A-Za-z_]\w*\s*\()")
    text = work.line(d.line)
    if not pattern.search(text):
        return False
    work.lines[d.line - 1] = pattern.sub(r"\1void\3", text, count=1)
    returns = 0
    for i in _body(work.lines, d.line - 1):
        work.lines[i], n = re.subn(r"\breturn\s+[^;]+;", "return;", work.lines[i])
        returns += n
    work.edits.append(f"line {d.line}: a __global__ function returns void; changed its return "
                      f"type to void and {returns} `return value;` to `return;`")
    return True


def _body(lines: list[str], start: int) -> range:
    """Indexes of the lines from `start` to the brace that closes the function opened there."""
    depth, opened = 0, False
    for i in range(start, len(lines)):
        code = _code(lines[i])
        depth += code.count("{") - code.count("}")
        opened = opened or "{" in code
        if opened and depth <= 0:
            return range(start, i + 1)
    return range(start, len(lines))


def _host_call(work: _Work, d: Diagnostic) -> bool:
    """A host function called from device code: compile it for both sides."""
    m = _HOST_CALL.search(d.message)
    if not m:
        return False
    name = m.group("name").split("::")[-1]
    if f"host:{name}" in work.done:
        return True
    definition = re.compile(rf"^(\s*)((?:template\s*<[^>]*>\s*)?(?:[A-Za-z_][\w:<>]*[\s*&]+)+"
                            rf"{re.escape(name)}\s*\()")
    for i, text in enumerate(work.lines):
        m = definition.match(text)
        if not m or "__device__" in text or _code(text).endswith(";") \
                or m.group(2).split()[0] in ("return", "else", "case", "throw"):
            continue  # not a definition: a declaration, or a call that spans lines
        if re.search(r"\b__host__\b", m.group(2)):  # declared __host__ explicitly: add the other
            work.lines[i] = re.sub(r"\b__host__\b", "__host__ __device__", text, count=1)
        else:
            work.lines[i] = definition.sub(r"\1__host__ __device__ \2", text, count=1)
        work.done.add(f"host:{name}")
        work.edits.append(f"line {i + 1}: `{name}` is called from device code; declared it "
                          "__host__ __device__")
        return True
    return False


def _const_write(work: _Work, d: Diagnostic) -> bool:
    """A store through a `const T*` parameter: drop that parameter's const."""
    if "modifiable lvalue" not in d.message or not d.line:
        return False
    text = _code(work.line(d.line))
    target = re.search(r"(?:\b(\w+)\s*\[[^\]]*\]|\*\s*\(?\s*(\w+)[^=]*?)\s*[-+*/%&|^]?=(?!=)", text)
    if not target:
        return False
    name = target.group(1) or target.group(2)
    param = re.compile(rf"\bconst\s+([\w:]+\s*\*\s*(?:__restrict__\s+)?{re.escape(name)}\b)")
    for i in range(d.line - 1, -1, -1):
        if param.search(work.lines[i]):
            work.lines[i] = param.sub(r"\1", work.lines[i], count=1)
            work.edits.append(f"line {i + 1}: `{name}` is written at line {d.line} but was a "
                              "pointer to const; dropped the const")
            return True
    return False


_RULES: tuple[Callable[[_Work, Diagnostic], bool], ...] = (
    _header, _shfl, _undefined, _semicolon, _brace, _nonvoid_global, _host_call, _const_write)
