"""The experiment folder and one cell's run in it.

    EXP/experiment.json   the grid file's text, its cells, and each session (workers' busy time)
    EXP/cells.jsonl       one line per cell outcome (finished, error, stopped); the last one counts
    EXP/cells/<id>/       the cell's ordinary run directory (run.json, attempts/, report.md, ...)
    EXP/report.md, report.json, plots/*.png   (kgen experiment report)

Resuming is running again into the same folder: finished cells are skipped, a cell whose run
directory exists is continued with Run.resume, the rest start. A cell that failed for a reason of
its own (an op this kgen does not have) is recorded as `error` and tried again next time.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kgen import models
from kgen.errors import UsageError
from kgen.experiment.cells import Cell, Listed, ModelEntry
from kgen.experiment.grid import Grid
from kgen.gpu.client import Workers
from kgen.loop.attempt import Attempt
from kgen.loop.loop import Trajectory
from kgen.loop.rundir import RunDir, append_line, write_atomic
from kgen.loop.session import ResumeOptions, Run
from kgen.models.base import Model
from kgen.models.gate import Gated
from kgen.models.scripted import ScriptedModel, load_script

OnAttempt = Callable[[Listed, Attempt, Trajectory], None]


class ExperimentDir:
    """One experiment's folder; safe to record cells from several threads."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()

    @classmethod
    def open(cls, path: Path, grid: Grid | None = None) -> ExperimentDir:
        """The folder (created for a grid); UsageError if it holds something else."""
        folder = cls(path)
        meta = path / "experiment.json"
        if grid is None:
            if not meta.is_file():
                raise UsageError(f"{path} is not a kgen experiment folder (no experiment.json)")
            return folder
        if path.exists() and any(path.iterdir()) and not meta.is_file():
            raise UsageError(f"{path} exists, is not empty and is not an experiment folder; "
                             "pick another --out")
        (path / "cells").mkdir(parents=True, exist_ok=True)
        if not meta.is_file():
            folder.write_meta({"name": grid.name, "file": str(grid.path),
                               "created": dt.datetime.now(dt.UTC).isoformat(), "sessions": []})
        return folder

    def meta(self) -> dict[str, Any]:
        return json.loads((self.path / "experiment.json").read_text())

    def write_meta(self, meta: dict[str, Any]) -> None:
        write_atomic(self.path / "experiment.json", json.dumps(meta, indent=2, default=str))

    def add_session(self, session: dict[str, Any]) -> None:
        """How this session went (cells run, workers' busy time)."""
        with self._lock:
            meta = self.meta()
            meta["sessions"] = [*meta.get("sessions", []), session]
            self.write_meta(meta)

    def cell_dir(self, cell_id: str) -> Path:
        return self.path / "cells" / cell_id

    def record(self, record: dict[str, Any]) -> None:
        with self._lock:
            append_line(self.path / "cells.jsonl", record)

    def records(self) -> dict[str, dict[str, Any]]:
        """The last record of each cell (a torn last line is ignored)."""
        found: dict[str, dict[str, Any]] = {}
        path = self.path / "cells.jsonl"
        for line in path.read_text().splitlines() if path.exists() else []:
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                break
            found[data["id"]] = data
        return found

    def finished(self) -> set[str]:
        return {i for i, r in self.records().items() if r["status"] == "finished"}


def labels(listed: Listed) -> dict[str, Any]:
    cell = listed.cell
    return {"prompt_set": cell.prompt_label, "model": cell.model.name, "op": cell.op.label,
            "dtype": cell.dtype, "arch": cell.arch, "sample": cell.sample, "seed": cell.seed}


def run_cell(listed: Listed, folder: Path, grid: Grid, *, workers: Workers | None,
             gate: threading.Semaphore | None,
             on_attempt: OnAttempt = lambda c, a, t: None) -> dict[str, Any]:
    """Start or continue the cell's run in `folder`; its record. A problem of the cell's own
    (UsageError) is an `error` record; Ctrl-C, a failed GPU or a fatal endpoint raise, after the
    run directory was closed (resumable)."""
    base = {"id": listed.id, **labels(listed)}
    started = time.monotonic()
    try:
        run = _open_run(listed, folder, grid, workers, gate)
        summary = run.execute(lambda a, t: on_attempt(listed, a, t))
    except UsageError as exc:
        return {**base, "status": "error", "message": str(exc),
                "wall_s": round(time.monotonic() - started, 3)}
    return {**base, "status": "finished", "summary": summary.to_json(),
            "wall_s": round(time.monotonic() - started, 3)}


def _open_run(listed: Listed, folder: Path, grid: Grid, workers: Workers | None,
              gate: threading.Semaphore | None) -> Run:
    cell = listed.cell
    config = cell.config(grid.budget, grid.gpu)  # UsageError for an op this kgen cannot run
    if (folder / "run.json").is_file():
        done = len(RunDir.open(folder).finished_records())
        # The grid file names the prompt set and op file (the cell's run.json cannot: see
        # kgen.loop.config.resumed_config).
        return Run.resume(folder, ResumeOptions(prompt_set=config.prompt_set,
                                                op_file=config.op_file,
                                                kernelbench=config.kernelbench),
                          model=build_model(cell.model, cell, done, gate), workers=workers)
    if folder.exists():
        shutil.rmtree(folder)  # killed before run.json was written: nothing to keep
    return Run.start(config, folder, build_model(cell.model, cell, 0, gate), workers=workers)


def build_model(entry: ModelEntry, cell: Cell, done: int,
                gate: threading.Semaphore | None) -> Model:
    """The cell's model; a scripted one skips the replies its finished attempts used."""
    params = dict(entry.parameters)
    if entry.backend == "scripted":
        model: Model = ScriptedModel(_script(params["script"], cell.op.label)[done:])
    else:
        if entry.backend == "builtin-random":
            params["seed"] = cell.seed
        model = models.get_model(entry.backend, model=entry.model, base_url=entry.base_url,
                                 **params)
    return Gated(model, gate) if gate is not None else model


def _script(script: str | dict[str, Any], op: str) -> list[str]:
    """The replies for this op: from one script for every op, or the op's own."""
    chosen: Any = script
    if isinstance(script, dict):
        if op not in script:
            raise UsageError(f"the scripted model has no replies for op {op}")
        chosen = script[op]
    if isinstance(chosen, list):
        return [str(x) for x in chosen]
    return load_script(Path(str(chosen)))
