"""What `kgen experiment run` and `report` do: load the grid, list its cells, run the pending
ones (here or on Ray) into the experiment folder, record the session, write the report."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgen.arch import local_gpu
from kgen.errors import UsageError
from kgen.experiment import grid as grids
from kgen.experiment import report
from kgen.experiment.cells import Listed
from kgen.experiment.grid import Grid, list_cells
from kgen.experiment.runner import ExperimentDir, labels
from kgen.experiment.schedule import Event, Local
from kgen.gpu.evaluate import missing_stack
from kgen.gpu.pool import WorkerPool
from kgen.loop.signals import signals_as_interrupts, signals_held


@dataclass(frozen=True)
class Plan:
    grid: Grid
    cells: list[Listed]
    skipped: list[str]  # combinations left out (an op without that dtype)
    out: Path


def plan(file: str, out: Path | None = None, need_arch: bool = True) -> Plan:
    """The grid with its archs resolved (the local GPU's when the file names none) and its cells;
    without a GPU and without `archs:`, a listing (need_arch=False) keeps them as `local`."""
    grid = grids.load(file)
    if grid.archs == (None,):
        found = local_gpu()
        if found is None and not need_arch:
            return Plan(grid, *list_cells(grid), out or Path("runs") / "experiments" / grid.name)
        if found is None:
            raise UsageError(f"{grid.path}: no GPU here to take the architecture from; set "
                             "`archs:` (e.g. archs: [sm_90])")
        grid = dataclasses.replace(grid, archs=(found[1].name,))
    cells, skipped = list_cells(grid)
    return Plan(grid, cells, skipped, out or Path("runs") / "experiments" / grid.name)


def run(how: Plan, *, per_gpu: int = 1, jobs: int | None = None, ray: str | None = None,
        on_event: Event = lambda kind, cell, detail: None,
        on_pool: Callable[[WorkerPool | None], None] = lambda pool: None) -> dict[str, Any]:
    """Run the cells not finished yet; the report (also written when Ctrl-C or a fatal error
    stops it, which is then raised)."""
    exp = ExperimentDir.open(how.out, how.grid)
    finished = exp.finished()
    pending = [c for c in how.cells if c.id not in finished]
    for listed in how.cells:
        if listed.id in finished:
            on_event("skipped", listed, None)
    _describe(exp, how)
    failure: BaseException | None = None
    # SIGTERM and SIGHUP stop it as Ctrl-C does: cells closed, the session and the report written.
    with signals_as_interrupts():
        if ray is not None:
            from kgen.experiment import raycells

            session, failure = raycells.run(exp, how.grid, pending, address=ray,
                                            on_event=on_event)
        else:
            pool = _pool(how.grid, per_gpu)
            on_pool(pool)
            local = Local(jobs or (2 * len(pool.slots) if pool else 2), pool, on_event)
            try:
                session = local.run(exp, how.grid, pending)
            finally:
                if pool is not None:
                    pool.close()
            failure = local.failure
    with signals_held():
        exp.add_session(session)
        data = report.write(exp)
    if failure is not None:
        raise failure
    return data


def _pool(grid: Grid, per_gpu: int) -> WorkerPool | None:
    """Warm workers on every visible GPU when the cells are judged on one here."""
    if not grid.gpu or local_gpu() is None or missing_stack():
        return None
    pool = WorkerPool.local(per_gpu)
    pool.warm()  # torch imports in the workers while the first cells ask and compile
    return pool


def _describe(exp: ExperimentDir, how: Plan) -> None:
    """The cells with their labels and the models' prices, for reports written later."""
    meta = exp.meta()
    meta["cells"] = [{"id": c.id, **labels(c)} for c in how.cells]
    meta["prices"] = {m.name: m.price for m in how.grid.models if m.price is not None}
    meta["grid_text"] = how.grid.path.read_text()
    exp.write_meta(meta)


def write_report(folder: Path) -> dict[str, Any]:
    return report.write(ExperimentDir.open(folder))
