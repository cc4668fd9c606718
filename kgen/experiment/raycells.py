"""Cells as Ray tasks (`kgen experiment run FILE --ray ADDRESS|auto`; `pip install 'kgen[ray]'`).

Each cell is one task pinned to one GPU (num_gpus=1; num_gpus=0 when the cells only compile or
the cluster has no GPU), with a warm worker of its own on that GPU for the cell's candidates. The
task runs the cell in a temporary folder on its node and ships the whole run directory back as a
tar; the driver unpacks it into the experiment folder and records the cell, so the folder, its
format and resuming are the same as on the local path, and no shared filesystem is assumed. An
unfinished cell's run directory is shipped to its task, which continues it with Run.resume.

Nodes need kgen (same version) with its GPU extras installed; `auto` starts a local cluster whose
workers import kgen from this checkout.
"""

from __future__ import annotations

import datetime as dt
import io
import os
import shutil
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from kgen.errors import EnvironmentProblem, KgenError
from kgen.experiment.cells import Listed
from kgen.experiment.grid import Grid
from kgen.experiment.runner import ExperimentDir, labels, run_cell
from kgen.experiment.schedule import Event
from kgen.gpu.sandbox import KGEN_ROOT
from kgen.loop.signals import signals_as_interrupts


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise EnvironmentProblem("--ray needs Ray: pip install 'kgen[ray]'") from None
    return ray


def pack(folder: Path) -> bytes:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        tar.add(folder, arcname=".")
    return data.getvalue()


def unpack(data: bytes, folder: Path) -> None:
    """Replace folder with the shipped run directory."""
    staging = folder.with_name(f".{folder.name}.incoming")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(staging, filter="data")
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)


def cell_task(listed: Listed, grid: Grid, shipped: bytes | None,
              judged: bool) -> tuple[dict[str, Any], bytes, list[dict[str, Any]]]:
    """On a Ray worker: run (or continue) one cell; its record, run directory and worker time."""
    from kgen.gpu.pool import WorkerPool

    with tempfile.TemporaryDirectory(prefix="kgen-ray-cell-") as tmp:
        folder = Path(tmp) / listed.id
        if shipped is not None:
            unpack(shipped, folder)
        pool = WorkerPool.local() if judged else None  # Ray set CUDA_VISIBLE_DEVICES to its GPU
        try:
            record = run_cell(listed, folder, grid, workers=pool, gate=None)
        except KgenError as exc:  # a failed GPU or endpoint: ship what was done, stop the rest
            record = {"id": listed.id, **labels(listed), "status": "stopped",
                      "message": str(exc), "halt": True}
        finally:
            busy = pool.busy() if pool is not None else []
            if pool is not None:
                pool.close()
        text = str(folder)
        record = {k: (v.replace(text, "@CELL") if isinstance(v, str) else v)
                  for k, v in record.items()}
        if isinstance(record.get("summary"), dict):
            record["summary"] = {k: (v.replace(text, "@CELL") if isinstance(v, str) else v)
                                 for k, v in record["summary"].items()}
        return record, pack(folder) if folder.exists() else b"", busy


def _connect(ray: Any, address: str) -> bool:
    """Join the cluster at `address`, or start a local one for `auto`; True if we started it."""
    quiet = {"log_to_driver": False, "logging_level": "ERROR", "include_dashboard": False}
    if address == "auto" and not os.environ.get("RAY_ADDRESS"):
        paths = [str(KGEN_ROOT), *os.environ.get("PYTHONPATH", "").split(":")]
        ray.init(runtime_env={"env_vars": {"PYTHONPATH": ":".join(p for p in paths if p)}},
                 **quiet)
        return True
    ray.init(address=None if address == "auto" else address, **quiet)
    return False


def run(exp: ExperimentDir, grid: Grid, cells: list[Listed], *, address: str,
        on_event: Event) -> tuple[dict[str, Any], BaseException | None]:
    """Run the pending cells as Ray tasks; (the session record, what stopped it or None)."""
    ray = _ray()
    started = time.monotonic()
    ours = _connect(ray, address)
    failure: BaseException | None = None
    busy: list[dict[str, Any]] = []
    try:
        gpus = ray.cluster_resources().get("GPU", 0)
        judged = grid.gpu and gpus > 0
        task = ray.remote(num_gpus=1 if judged else 0, max_retries=0)(cell_task)
        refs = {}
        for listed in cells:
            folder = exp.cell_dir(listed.id)
            shipped = pack(folder) if (folder / "run.json").is_file() else None
            on_event("start", listed, None)
            refs[task.remote(listed, grid, shipped, judged)] = listed
        try:
            # Again after ray.init, which installs a SIGTERM handler of its own.
            with signals_as_interrupts():
                while refs:
                    ready, _ = ray.wait(list(refs), num_returns=1, timeout=0.5)
                    for ref in ready:
                        failure = _finish(ray, exp, refs.pop(ref), ref, busy, on_event) or failure
                    if failure is not None:
                        break
        except KeyboardInterrupt as exc:
            failure = exc
        for ref in refs:
            ray.cancel(ref, force=True)
    finally:
        if ours:
            ray.shutdown()
    return {"started": dt.datetime.now(dt.UTC).isoformat(), "where": f"ray {address}",
            "cells_run": len(cells), "wall_s": round(time.monotonic() - started, 3),
            "workers": busy}, failure


def _finish(ray: Any, exp: ExperimentDir, listed: Listed, ref: Any, busy: list,
            on_event: Event) -> BaseException | None:
    """Unpack one task's run directory and record the cell; an error to stop on, or None."""
    folder = exp.cell_dir(listed.id)
    try:
        record, shipped, worked = ray.get(ref)
    except Exception as exc:  # the task itself failed (a lost node, an import error there)
        record, shipped, worked = {"id": listed.id, **labels(listed), "status": "stopped",
                                   "message": f"the Ray task failed: {exc}"[:500]}, b"", []
    if shipped:
        unpack(shipped, folder)
    halt = record.pop("halt", False)
    record = {k: v.replace("@CELL", str(folder)) if isinstance(v, str) else v
              for k, v in record.items()}
    if isinstance(record.get("summary"), dict):
        record["summary"] = {k: v.replace("@CELL", str(folder)) if isinstance(v, str) else v
                             for k, v in record["summary"].items()}
    busy += [{**w, "worker": f"{listed.id[:24]}:{w['worker']}"} for w in worked]
    exp.record(record)
    on_event("done", listed, record)
    return EnvironmentProblem(record["message"]) if halt else None
