"""One attempt in the history: the candidate, what nvcc and the GPU said, the feedback sent back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgen.compile import CompileResult, Diagnostic, summarize
from kgen.verdict import Evaluation, Timing, overall


@dataclass(frozen=True)
class Attempt:
    number: int  # 1-based over the whole run
    round: int
    source: str | None  # None when the reply held no code block
    choices: str = ""  # the author's key choices (contract `choices` line), for the history table
    notes: str = ""  # the author's stated reasons (builtin) or nothing
    problems: tuple[Diagnostic, ...] = ()  # launch-contract problems, sent back like compile errors
    compile: CompileResult | None = None
    evaluation: Evaluation | None = None  # what the GPU found, where one could run it

    @property
    def status(self) -> str:
        """no code | contract error | compile error | compiled | a run verdict."""
        if self.source is None:
            return "no code"
        if self.compile is not None and not self.compile.ok:
            return "compile error"
        if self.problems:
            return "contract error"
        if self.compile is None:
            return "not compiled"
        return self.evaluation.verdict if self.evaluation else "compiled"

    @property
    def passed(self) -> bool:
        return self.evaluation is not None and self.evaluation.passed

    @property
    def timing(self) -> Timing | None:
        """What the candidate's speed is judged by, when it passed and was timed: its timing at
        the one bench size, or the geometric mean over several (kgen.verdict.overall)."""
        if not self.passed or self.evaluation is None:
            return None
        return overall(self.evaluation.timings)

    @property
    def best_ms(self) -> float | None:
        """The candidate's time (`timing`'s median), when it passed and was timed."""
        timing = self.timing
        return timing.ms if timing is not None else None

    def feedback(self, budget: int = 3000) -> str:
        """The structured records the model gets back for this attempt (never a raw log)."""
        if self.source is None:
            return ("No kernel found in your reply. Reply with the complete .cu file in one "
                    "```cuda fenced block, with the // kgen: contract lines at the top.")
        parts = []
        if self.compile is not None:
            parts.append(self.compile.summary or ("compiled" if self.compile.ok else "failed"))
        if self.problems:
            parts.append(summarize(self.problems, self.source, budget=budget // 2))
        if self.evaluation is not None:
            parts.append(self.evaluation.describe(self.source or ""))
        elif self.compile is not None and self.compile.ok and not self.problems:
            parts.append("compiled; not validated or timed (no GPU available to kgen here)")
        return "\n".join(p for p in parts if p)[:budget]

    @property
    def findings(self) -> str:
        """The history/report cell for the extra checks: the profile's bottleneck, or what the
        sanitizer found; "-" when neither ran."""
        ran = self.evaluation
        if ran is not None and ran.profile is not None:
            return ran.profile.short()
        if ran is not None and ran.sanitizer is not None:
            return ran.sanitizer.short()
        return "-"

    def to_json(self) -> dict[str, Any]:
        """The results.jsonl record (the source itself lives in attempts/NNN/kernel.cu)."""
        comp = self.compile
        return {"attempt": self.number, "round": self.round, "status": self.status,
                "choices": self.choices, "notes": self.notes,
                "compile": None if comp is None else {k: v for k, v in comp.to_json().items()},
                "problems": [p.to_json() for p in self.problems],
                "evaluation": None if self.evaluation is None else self.evaluation.to_json()}


def _timing(a: Attempt) -> Timing:
    assert a.timing is not None
    return a.timing


def best_attempt(attempts: list[Attempt] | tuple[Attempt, ...]) -> Attempt | None:
    """Fastest passing attempt, where a later attempt displaces the best only when it is faster
    beyond the timing noise (Timing.beats); else the last that passed; else the last that compiled
    cleanly."""
    best = None
    for a in attempts:
        if a.best_ms is None:
            continue
        if best is None or _timing(a).beats(_timing(best)):
            best = a
    if best is not None:
        return best
    passed = [a for a in attempts if a.passed]
    if passed:
        return passed[-1]
    clean = [a for a in attempts if a.status == "compiled"]
    return clean[-1] if clean else None
