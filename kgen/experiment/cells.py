"""The cells of an experiment: one run each (a prompt set, a model, an op source, a dtype, an arch
and a seed), with an id that stays the same however the file is reordered, and the RunConfig
that runs it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgen.errors import UsageError
from kgen.loop.loop import Budget
from kgen.loop.session import RunConfig
from kgen.ops import available_ops


@dataclass(frozen=True)
class OpSource:
    """Where a cell's op comes from: a shipped op's name, a spec file, or a KernelBench file."""

    kind: str  # op | file | kernelbench
    value: str  # the name, or an absolute path

    @property
    def label(self) -> str:
        if self.kind == "op":
            return self.value
        path = Path(self.value)
        return path.parent.name if path.name == "spec.yaml" else path.stem

    def problem(self) -> str | None:
        """Why cells of this op cannot run with this kgen (shown by --dry-run), or None."""
        if self.kind == "op" and self.value not in available_ops():
            return f"unknown op {self.value!r} (shipped: {', '.join(available_ops())})"
        if self.kind != "op" and not Path(self.value).is_file():
            return f"no such file: {self.value}"
        if self.kind == "kernelbench" and "kernelbench" not in _config_fields():
            return "KernelBench problems are not supported by this kgen yet"
        return None


@dataclass(frozen=True)
class ModelEntry:
    name: str  # the label in reports and cell ids
    backend: str
    model: str | None = None
    base_url: str | None = None
    parameters: tuple[tuple[str, Any], ...] = ()
    price: tuple[float, float] | None = None  # USD per million prompt / completion tokens
    concurrency: int = 4  # requests in flight to this endpoint at once, over all cells

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        if self.price is None:
            return None
        return (prompt_tokens * self.price[0] + completion_tokens * self.price[1]) / 1e6


@dataclass(frozen=True)
class Cell:
    prompt_set: str
    model: ModelEntry
    op: OpSource
    dtype: str | None
    arch: str | None
    sample: int
    seed: int

    @property
    def prompt_label(self) -> str:
        return Path(self.prompt_set).name if "/" in self.prompt_set else self.prompt_set

    @property
    def unit(self) -> tuple[str, str, str]:
        """What two prompt sets (or models) are compared on: the op, dtype and arch."""
        return self.op.label, self.dtype or "-", self.arch or "-"

    def key(self, budget: Budget, gpu: bool) -> dict[str, Any]:
        return {"prompt_set": self.prompt_set, "model": dataclasses.asdict(self.model),
                "op": dataclasses.asdict(self.op), "dtype": self.dtype, "arch": self.arch,
                "seed": self.seed, "budget": dataclasses.asdict(budget), "gpu": gpu}

    def ident(self, budget: Budget, gpu: bool) -> str:
        """Readable and stable: the labels, then a hash of everything that decides the run."""
        digest = hashlib.sha256(json.dumps(self.key(budget, gpu), sort_keys=True,
                                           default=str).encode()).hexdigest()[:8]
        text = "-".join((self.op.label, self.dtype or "first", self.arch or "local",
                         self.prompt_label, self.model.name, f"s{self.sample}", digest))
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)

    def config(self, budget: Budget, gpu: bool) -> RunConfig:
        """The run this cell is; UsageError when its op source is not supported here."""
        problem = self.op.problem()
        if problem:
            raise UsageError(problem)
        source: dict[str, Any] = {"op": self.op.value} if self.op.kind == "op" else (
            {"op_file": self.op.value} if self.op.kind == "file" else
            {"kernelbench": self.op.value})
        return RunConfig("generate", self.arch, dtype=self.dtype, backend=self.model.backend,
                         model=self.model.model, base_url=self.model.base_url,
                         prompt_set=self.prompt_set, rounds=budget.rounds,
                         candidates=budget.candidates, patience=budget.patience,
                         wall_seconds=budget.wall_seconds, tokens=budget.tokens, no_gpu=not gpu,
                         **source)


@dataclass(frozen=True)
class Listed:
    """A cell as the experiment lists it: its id, and why it cannot run, if it cannot."""

    id: str
    cell: Cell
    problem: str | None = None


def _config_fields() -> set[str]:
    return {f.name for f in dataclasses.fields(RunConfig)}
