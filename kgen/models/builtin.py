"""The builtin model: a rule-based kernel author (templates for gemm and the memory-bound ops, and
a search over their parameters) and a rule-based fixer. Offline and deterministic; not a language
model, and it says so."""

from __future__ import annotations

import time

from kgen.arch import Arch
from kgen.author import fixer
from kgen.author.families import GEMM, GemmFamily, family_for, why_not
from kgen.author.sample import propose_random
from kgen.author.search import Proposal, propose
from kgen.loop.attempt import Attempt
from kgen.loop.task import Task
from kgen.models.base import Reply, Request
from kgen.spec import OpSpec

ADVICE = "use an LLM endpoint: --model NAME --base-url URL"


class BuiltinModel:
    """Writes kernels from its own templates, choosing each next one from the history; `only`
    limits gemm to some of its templates (`make bench`'s SIMT row of float32)."""

    name = "builtin"
    is_language_model = False

    def __init__(self, only: tuple[str, ...] = ()):
        self.only = only

    def describe(self) -> str:
        return "builtin: a rule-based kernel author (templates + search), not a language model"

    def complete(self, request: Request) -> Reply:
        """Reads request.task and request.history (never the messages); may give up."""
        started = time.monotonic()
        if request.task.mode == "fix":
            text, give_up = fix_reply(request.task, request.history)
        else:
            text, give_up = author_reply(request.task, request.history, only=self.only)
        return Reply(text, self.name, latency_s=time.monotonic() - started, give_up=give_up)


class RandomAuthorModel:
    """`builtin-random`: the builtin templates, each next configuration drawn at random (seeded)
    from the whole valid space, ignoring the feedback: what the search is compared against."""

    is_language_model = False

    def __init__(self, seed: int = 0):
        self.seed = seed
        self.name = "builtin-random"

    def describe(self) -> str:
        return (f"builtin-random: the builtin templates sampled uniformly at random (seed "
                f"{self.seed}), not a language model and not the search")

    def complete(self, request: Request) -> Reply:
        started = time.monotonic()
        text, give_up = author_reply(request.task, request.history,
                                     lambda arch, dtype, history, family:
                                     propose_random(arch, dtype, history, self.seed, family))
        return Reply(text, self.name, latency_s=time.monotonic() - started, give_up=give_up)


def can_write(spec: OpSpec | None, dtype: str, arch: Arch) -> bool:
    """Whether the builtin author has a template for this op, dtype and arch (author_reply and
    `make bench`'s ops table ask the same question)."""
    family = family_for(spec)
    return family is not None and bool(family.templates(arch, dtype))


def author_reply(task: Task, history: tuple[Attempt, ...], strategy=propose,
                 only: tuple[str, ...] = ()) -> tuple[str, str | None]:
    """The next candidate with its reason, or a give-up message; `strategy(arch, dtype, history,
    family) -> Proposal` picks the configuration (the search, or random sampling); `only` names
    the gemm templates it may use (all when empty)."""
    dtype = task.dtype or "float32"
    family = family_for(task.spec)
    if only and family is GEMM:
        family = GemmFamily(only)
    if family is None:
        return "", f"{why_not(task.spec)}; {ADVICE}"
    if not family.templates(task.arch, dtype):
        assert task.spec is not None
        return "", (f"the builtin author has no {task.spec.name} template for {dtype} on "
                    f"{task.arch.name}; {ADVICE}")
    proposal: Proposal = strategy(task.arch, dtype, history, family)
    if proposal.params is None:
        return "", f"{proposal.reason}; {ADVICE} to search further"
    source = family.render(proposal.params, dtype, task.arch)
    how = "search" if strategy is propose else "random sampling"
    text = (f"builtin author (rule-based templates + {how}, not a language model): "
            f"{proposal.params.template} template for {dtype} on {task.arch.name}.\n\n"
            f"Reason: {proposal.reason}\n\n```cuda\n{source}```\n")
    return text, None


def fix_reply(task: Task, history: tuple[Attempt, ...]) -> tuple[str, str | None]:
    """The mended file with the list of edits, or why the builtin fixer cannot mend it."""
    last = history[-1] if history else None
    source = last.source if last is not None and last.source else task.source
    if source is None:
        return "", f"there is no file to fix; {ADVICE}"
    diagnostics = _diagnostics(task, last, source)
    if not any(d.severity == "error" for d in diagnostics):
        return "", ("the builtin fixer found no compile error to mend (launch-contract or "
                    f"runtime problems are beyond it); {ADVICE}")
    outcome = fixer.mend(source, diagnostics)
    if outcome.source is None:
        return "", outcome.give_up
    if any(a.source == outcome.source for a in history):
        return "", (f"the builtin fixer's edits lead back to a file already tried; this file is "
                    f"beyond it ({'; '.join(outcome.left[:2]) or 'same errors again'}); {ADVICE}")
    edits = "\n".join(f"- {e}" for e in outcome.edits)
    rest = ("\n\nNot mended by these rules (may be a consequence of the above): "
            + "; ".join(outcome.left[:3])) if outcome.left else ""
    text = (f"builtin fixer (rule-based, not a language model). Edits:\n{edits}{rest}\n\n"
            f"```cuda\n{outcome.source.rstrip()}\n```\n")
    return text, None


def _diagnostics(task: Task, last: Attempt | None, source: str):
    """The last attempt's compile errors and contract problems; compile the file if none exist."""
    if last is not None and last.compile is not None:
        return tuple(last.compile.diagnostics) + tuple(last.problems)
    from kgen.compile import compile_source

    include_dir = task.path.resolve().parent if task.path else None
    return compile_source(source, task.arch, include_dir=include_dir).diagnostics
