"""What each cell's run directory says, as values the metrics read: per attempt whether it
compiled, passed and how fast it was against the baseline; the tokens of every model call."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kgen.verdict import Timing, overall


@dataclass(frozen=True)
class AttemptFacts:
    number: int
    compiled: bool  # nvcc produced a binary
    clean: bool  # compiled with a valid launch contract (it could be run)
    judged: bool  # a GPU worker gave a verdict
    passed: bool
    ms: float | None = None  # geometric mean over the bench sizes, when it passed
    speedup: float | None = None  # baseline time / its time (both geometric means)


@dataclass(frozen=True)
class Outcome:
    """One cell: its labels, how it ended, its attempts and what it cost."""

    id: str
    prompt_set: str
    model: str
    op: str
    dtype: str | None
    arch: str | None
    sample: int
    status: str  # finished | error | stopped | pending
    message: str = ""
    attempts: tuple[AttemptFacts, ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float | None = None
    cost: float | None = None

    @property
    def unit(self) -> tuple[str, str, str]:
        return self.op, self.dtype or "-", self.arch or "-"

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def best(self) -> AttemptFacts | None:
        """The fastest passing attempt (else the first that passed)."""
        passed = [a for a in self.attempts if a.passed]
        timed = [a for a in passed if a.ms is not None]
        return min(timed, key=lambda a: a.ms or 0.0) if timed else (passed[0] if passed else None)

    def solved_at(self, judged: bool) -> int | None:
        """The first attempt that passed (compile-only experiments: compiled cleanly)."""
        return next((a.number for a in self.attempts if (a.passed if judged else a.clean)), None)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def read_attempts(run_dir: Path) -> tuple[AttemptFacts, ...]:
    path = run_dir / "results.jsonl"
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            break
        out.append(_facts(rec))
    return tuple(out)


def _facts(rec: dict[str, Any]) -> AttemptFacts:
    compiled = bool((rec.get("compile") or {}).get("ok"))
    status = rec.get("status", "")
    evaluation = rec.get("evaluation") or {}
    passed = evaluation.get("verdict") == "pass"
    timing = overall([Timing(**t) for t in evaluation.get("timings") or ()]) if passed else None
    ms = timing.ms if timing else None
    base = timing.baseline_ms if timing else None
    unusable = ("no code", "contract error", "compile error")
    return AttemptFacts(int(rec["attempt"]), compiled, compiled and status not in unusable,
                        bool(evaluation), passed, ms, base / ms if ms and base else None)


def read_tokens(run_dir: Path) -> tuple[int, int]:
    """Prompt and completion tokens of every model call in the run's transcript."""
    path = run_dir / "transcript.jsonl"
    prompt = completion = 0
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            usage = json.loads(line).get("usage") or {}
        except json.JSONDecodeError:
            break
        prompt += int(usage.get("prompt_tokens") or 0)
        completion += int(usage.get("completion_tokens") or 0)
    return prompt, completion
