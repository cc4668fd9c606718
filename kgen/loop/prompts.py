"""Render the prompts in `prompts/` (Jinja2, StrictUndefined); nothing else builds prompt text.

A prompt set is a folder of templates chosen by name (`--prompt-set NAME`): `default` is the
top-level `prompts/` folder, `NAME` a subfolder of it, or any folder path a user points at. A set
only needs the files it changes; the rest come from the default set.

The conversation is re-rendered each turn (system + one user message holding the history table and
the last attempt's feedback), so tokens stay bounded and earlier replies, with any reasoning text
in them, are never sent back.
"""

from __future__ import annotations

import functools
import threading
import time
from pathlib import Path
from typing import Any

import jinja2
import jinja2.sandbox

from kgen.dtypes import DTYPES, ctypes
from kgen.errors import UsageError
from kgen.loop.attempt import Attempt, best_attempt
from kgen.loop.task import Task
from kgen.models.base import Message
from kgen.paths import data_dir
from kgen.spec import CHECKS, OpSpec

DEFAULT_SET = "default"
# A prompt set of the user's own may loop or multiply without end: the sandbox bounds each
# range() but not loops inside loops. Rendering stops past these (shipped sets take ~1 ms, 10 kB).
RENDER_SECONDS = 10.0
RENDER_CHARS = 4_000_000
HISTORY_ROWS = 12  # the table shows the last rows and always the best attempt
OK_STATUSES = ("compiled", "pass")


def prompts_root() -> Path:
    """The default set's folder: kgen/prompts/ in a wheel, prompts/ beside kgen/ in a checkout."""
    return data_dir("prompts")


def list_prompt_sets() -> list[str]:
    """`default` plus every subfolder of prompts/ that holds templates."""
    root = prompts_root()
    subsets = sorted(p.name for p in root.iterdir()
                     if p.is_dir() and not p.name.startswith(("_", ".")) and any(p.glob("*.j2")))
    return [DEFAULT_SET, *subsets]


def _set_dir(prompt_set: str) -> Path | None:
    """The folder of a prompt set (None for default); UsageError for an unknown one."""
    if prompt_set == DEFAULT_SET:
        return None
    if prompt_set in list_prompt_sets():
        return prompts_root() / prompt_set
    path = Path(prompt_set).expanduser()
    if path.is_dir() and any(path.glob("*.j2")):
        return path
    raise UsageError(f"unknown prompt set {prompt_set!r}; known: {', '.join(list_prompt_sets())} "
                     "(or a folder holding *.j2 templates)")


def environment(prompt_set: str = DEFAULT_SET) -> jinja2.Environment:
    """A Jinja2 environment whose loader looks in the set first, then in the default set."""
    folders = tuple(str(d) for d in (_set_dir(prompt_set), prompts_root()) if d is not None)
    return _environment(folders)


class _Unbounded(Exception):
    """A template that went past RENDER_SECONDS or RENDER_CHARS."""


_RENDERING = threading.local()  # this thread's render deadline (candidates render in threads)


def _tick() -> None:
    if time.monotonic() > getattr(_RENDERING, "deadline", float("inf")):
        raise _Unbounded(f"still rendering after {RENDER_SECONDS:g} s")


class _BoundedEnvironment(jinja2.sandbox.SandboxedEnvironment):
    """The sandbox, with the clock checked at every call and `*`/`**`, and sizes bounded there."""

    intercepted_binops = frozenset({"*", "**"})

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        _tick()
        return super().call(__context, __obj, *args, **kwargs)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _tick()
        if operator == "**" and isinstance(right, int) and abs(right) > 1024:
            raise _Unbounded(f"an exponent of {right}")
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(times, int) \
                        and len(seq) * times > RENDER_CHARS:
                    raise _Unbounded(f"a repetition of {len(seq)} x {times}")
        return super().call_binop(context, operator, left, right)


@functools.lru_cache(maxsize=16)
def _environment(folders: tuple[str, ...]) -> jinja2.Environment:
    # Cached so templates compile once; the loader still reloads a file whose mtime changed.
    # Sandboxed: a template is data (a prompt set may come from anywhere), so it can read the
    # values it is given but never reach Python's internals (no `__class__.__mro__` escapes).
    env = _BoundedEnvironment(
        loader=jinja2.FileSystemLoader(list(folders)), undefined=jinja2.StrictUndefined,
        autoescape=False, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["numbered"] = numbered
    env.filters["kib"] = lambda n: f"{n / 1024:g} KiB"
    env.globals["ctypes"] = ctypes()
    return env


def render(name: str, prompt_set: str = DEFAULT_SET, **context: Any) -> str:
    """Render template `name` (e.g. "generate.md.j2") of a prompt set; a missing variable raises."""
    env = environment(prompt_set)
    try:
        template = env.get_template(name)
    except jinja2.TemplateNotFound as exc:
        raise UsageError(f"prompt set {prompt_set!r} has no template {exc.name!r}") from exc
    except jinja2.TemplateSyntaxError as exc:
        raise UsageError(f"prompt set {prompt_set!r}, template {exc.name or name!r} line "
                         f"{exc.lineno}: {exc.message}") from exc
    _RENDERING.deadline = time.monotonic() + RENDER_SECONDS
    try:
        return _bounded_text(template.generate(**context)).strip() + "\n"
    except jinja2.TemplateError as exc:  # a user's prompt set with a typo: one clear line
        raise UsageError(f"prompt set {prompt_set!r}, template {name!r}: {exc}") from exc
    except _Unbounded as exc:
        raise UsageError(f"prompt set {prompt_set!r}, template {name!r}: {exc} (prompts are "
                         f"bounded to {RENDER_SECONDS:g} s and {RENDER_CHARS:,} characters)") \
            from exc
    except (RecursionError, OverflowError, MemoryError) as exc:  # a template that never ends
        raise UsageError(f"prompt set {prompt_set!r}, template {name!r}: "
                         f"{type(exc).__name__}") from exc
    finally:
        _RENDERING.deadline = float("inf")


def _bounded_text(chunks: Any) -> str:
    """The rendered chunks joined, the clock and the size checked as they come."""
    out, size = [], 0
    for chunk in chunks:
        size += len(chunk)
        if size > RENDER_CHARS:
            raise _Unbounded(f"more than {RENDER_CHARS:,} characters")
        _tick()
        out.append(chunk)
    return "".join(out)


def numbered(source: str) -> str:
    """The source with right-aligned line numbers, as the diagnostics quote them."""
    lines = source.rstrip("\n").splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{i:>{width}} | {text}" for i, text in enumerate(lines, start=1))


def build_messages(task: Task, history: tuple[Attempt, ...] | list[Attempt],
                   prompt_set: str = DEFAULT_SET) -> tuple[Message, ...]:
    """The system message and one user message for this turn, re-rendered from the history."""
    context = turn_context(task, tuple(history))
    system = render("system.md.j2", prompt_set, **context)
    user = render(choose_template(task, tuple(history)), prompt_set, **context)
    return ({"role": "system", "content": system}, {"role": "user", "content": user})


def choose_template(task: Task, history: tuple[Attempt, ...]) -> str:
    """fix for `kgen fix` and for repairing a broken candidate; optimize once one is good."""
    if task.mode == "fix":
        return "fix.md.j2"
    if not history:
        return "generate.md.j2"
    last = history[-1]
    if last.source is not None and last.status not in OK_STATUSES:
        return "fix.md.j2"
    if best_attempt(history) is not None:
        return "optimize.md.j2"
    return "generate.md.j2"


def turn_context(task: Task, history: tuple[Attempt, ...]) -> dict[str, Any]:
    """Every variable the templates may use; templates pick what they show."""
    last = history[-1] if history else None
    current = next((a for a in reversed(history) if a.source is not None), None)
    best = best_attempt(history)
    shown = list(history[-HISTORY_ROWS:])
    if best is not None and best not in shown:
        shown.insert(0, best)
    spec = task.spec
    return {
        "task": task, "mode": task.mode, "arch": task.arch, "facts": task.arch.facts,
        "spec": spec, "dtype": task.dtype or "",
        "ctype": DTYPES[task.dtype].ctype if task.dtype in DTYPES else "",
        "tolerance": spec.dtypes.get(task.dtype or "") if spec else None,
        "history": tuple(shown), "omitted": len(history) - len(shown),
        "attempt_count": len(history), "last": last, "current": current, "best": best,
        "feedback": last.feedback() if last is not None else "",
        "current_feedback": current.feedback() if current is not None else "",
        # The file to mend: the latest candidate with code, else the user's own file.
        "source": current.source if current is not None else (task.source or ""),
        "file_name": task.path.name if task.path else "kernel.cu",
        **signature(spec, task.dtype or ""),
    }


def signature(spec: OpSpec | None, dtype: str) -> dict[str, Any]:
    """The kernel's parameters as the contract example writes them: tensors (in their dtypes,
    inputs and weights const), sizes (int), parameters (their C types); and a kernel name."""
    if spec is None or dtype not in DTYPES:
        return {"tensor_ctypes": {}, "kernel_params": [], "arg_names": [], "kernel_name": "",
                "checks": {}}
    ctypes_of = {t.name: DTYPES[spec.tensor_dtype(t, dtype)].ctype for t in spec.tensors}
    params = [f"{'const ' if t.role != 'output' else ''}{ctypes_of[t.name]}* __restrict__ {t.name}"
              for t in spec.tensors]
    params += [f"int {s}" for s in spec.sizes]
    params += [f"{DTYPES[p.dtype].ctype} {p.name}" for p in spec.params]
    names = [t.name for t in spec.tensors] + list(spec.sizes) + [p.name for p in spec.params]
    name = f"{spec.name}_{DTYPES[dtype].short}"
    return {"tensor_ctypes": ctypes_of, "kernel_params": params, "arg_names": names,
            "kernel_name": name if name[0].isalpha() else f"k{name}",
            "checks": {c: CHECKS[c] for c in spec.checks}}
