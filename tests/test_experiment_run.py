"""`kgen experiment run` end to end with the scripted model, compile only (no GPU): a run killed
with SIGKILL mid-cell continues where it stopped; the report and plots are written (and without
matplotlib the report says the plots were skipped); the same cells as Ray tasks on a local Ray."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import fenced, kernel

from kgen.cli import main
from kgen.experiment import plots

pytestmark = pytest.mark.nvcc

GOOD = kernel("gemm_naive_f32.cu")
BROKEN = GOOD.replace("acc += A", "acc += AA")
GRID = """\
name: kill-and-resume
prompt_sets: [default, compact]
models: [{name: script, backend: scripted, parameters: {script: {gemm: replies.json}}}]
ops: [gemm]
dtypes: [float32]
archs: [sm_89]
samples: 2
budget: {rounds: 3}
gpu: false
"""
KILLER = """\
import os, signal, sys
from pathlib import Path
from kgen.experiment import driver

seen = []
def hook(kind, listed, detail):
    if kind == "attempt":
        seen.append(listed.id)
        if len(seen) == 3:  # cell 1 took two attempts; die right after cell 2's first
            os.kill(os.getpid(), signal.SIGKILL)

driver.run(driver.plan(sys.argv[1], Path(sys.argv[2])), jobs=1, on_event=hook)
"""
TERMINATOR = KILLER.replace("signal.SIGKILL", "signal.SIGTERM").replace(
    "driver.run(", "try:\n    driver.run(") + """\
except KeyboardInterrupt as exc:
    print(type(exc).__name__)
"""


def experiment(tmp_path: Path, grid: str = GRID) -> Path:
    (tmp_path / "replies.json").write_text(json.dumps([fenced(BROKEN), fenced(GOOD)]))
    path = tmp_path / "exp.yaml"
    path.write_text(grid)
    return path


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_a_killed_experiment_continues_where_it_stopped(tmp_path):
    path, out = experiment(tmp_path), tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    killed = subprocess.run([sys.executable, "-c", KILLER, str(path), str(out)], env=env,
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr
    records = lines(out / "cells.jsonl")
    assert [r["status"] for r in records] == ["finished"]
    first = out / "cells" / records[0]["id"]
    cut = [p for p in (out / "cells").iterdir() if p != first]
    assert len(cut) == 1 and len(lines(cut[0] / "results.jsonl")) == 1  # one attempt saved
    before = (first / "transcript.jsonl").read_text()

    result = CliRunner().invoke(main, ["experiment", "run", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    final = {r["id"]: r for r in lines(out / "cells.jsonl")}
    assert len(final) == 4 and all(r["status"] == "finished" for r in final.values())
    assert (first / "transcript.jsonl").read_text() == before  # a finished cell is not rerun
    resumed = cut[0]
    assert [r["attempt"] for r in lines(resumed / "results.jsonl")] == [1, 2]
    assert [r["status"] for r in lines(resumed / "results.jsonl")] == ["compile error",
                                                                        "compiled"]
    assert (resumed / "attempts" / "002" / "kernel.cu").read_text() == GOOD
    assert len(lines(resumed / "transcript.jsonl")) == 2  # the scripted model went on, not over

    report = json.loads((out / "report.json").read_text())
    assert report["validated"] is False
    assert [(g["prompt_set"], g["cells"], g["compile_first"], g["compile_any"], g["correct"])
            for g in report["groups"]] == [("default", 2, 0.0, 1.0, None),
                                           ("compact", 2, 0.0, 1.0, None)]
    (comparison,) = report["comparisons"]
    assert comparison["metric"] == "solved" and comparison["mean_diff"] == 0.0
    text = (out / "report.md").read_text()
    assert "# Experiment kill-and-resume" in text and "compile only" in text
    assert "| default | script | 2 | 0% | 100% |" in text
    assert len(json.loads((out / "experiment.json").read_text())["sessions"]) == 1


def test_sigterm_stops_an_experiment_as_ctrl_c_does(tmp_path):
    """The cell in flight is closed (resumable) and recorded as stopped; the session and the
    report are written; the stop is told as a signal."""
    path, out = experiment(tmp_path), tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    stopped = subprocess.run([sys.executable, "-c", TERMINATOR, str(path), str(out)], env=env,
                             capture_output=True, text=True, timeout=300)
    assert stopped.returncode == 0 and stopped.stdout.strip() == "Signalled", stopped.stderr
    assert [r["status"] for r in lines(out / "cells.jsonl")] == ["finished", "stopped"]
    assert len(json.loads((out / "experiment.json").read_text())["sessions"]) == 1
    assert "| default | script |" in (out / "report.md").read_text()
    result = CliRunner().invoke(main, ["experiment", "run", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert all(r["status"] == "finished" for r in {r["id"]: r for r in lines(
        out / "cells.jsonl")}.values())


def test_report_and_plots_and_without_matplotlib(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    path, out = experiment(tmp_path), tmp_path / "out"
    grid = GRID.replace("samples: 2", "samples: 1").replace("ops: [gemm]", "ops: [gemm, nosuch]")
    path.write_text(grid)
    result = CliRunner().invoke(main, ["experiment", "run", str(path), "--out", str(out),
                                       "--json"])
    assert result.exit_code == 1, result.output  # the nosuch cells did not finish
    data = json.loads(result.stdout)
    assert data["plots"] == ["plots/solved_vs_attempts.png"]
    png = out / "plots" / "solved_vs_attempts.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "error: unknown op 'nosuch'" in (out / "report.md").read_text()
    assert "![plots/solved_vs_attempts.png](plots/solved_vs_attempts.png)" in (
        out / "report.md").read_text()
    monkeypatch.setattr(plots, "missing", lambda: "matplotlib is not installed (pip install "
                                                  "'kgen[plots]')")
    png.unlink()
    again = CliRunner().invoke(main, ["experiment", "report", str(out)])
    assert again.exit_code == 0, again.output
    assert "Plots skipped: matplotlib is not installed" in (out / "report.md").read_text()
    assert not png.exists() and "plots skipped" in again.output


def test_the_report_of_a_folder_that_is_not_an_experiment_is_one_line(tmp_path):
    result = CliRunner().invoke(main, ["experiment", "report", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.strip() == f"kgen: error: {tmp_path} is not a kgen experiment folder " \
                                    "(no experiment.json)"


def test_cells_as_ray_tasks_on_a_local_ray(tmp_path):
    pytest.importorskip("ray")
    path, out = experiment(tmp_path), tmp_path / "out"
    path.write_text(GRID.replace("samples: 2", "samples: 1").replace("ops: [gemm]",
                                                                     "ops: [gemm, nosuch]"))
    start = time.monotonic()
    result = CliRunner().invoke(main, ["experiment", "run", str(path), "--out", str(out),
                                       "--ray", "auto"])
    took = time.monotonic() - start
    assert result.exit_code == 1, result.output  # two cells of an unknown op
    records = {r["id"]: r for r in lines(out / "cells.jsonl")}
    finished = [r for r in records.values() if r["status"] == "finished"]
    assert len(records) == 4 and len(finished) == 2
    for record in finished:  # the run directory came back into the experiment folder
        folder = out / "cells" / record["id"]
        assert record["summary"]["run_dir"] == str(folder)
        assert [r["status"] for r in lines(folder / "results.jsonl")] == ["compile error",
                                                                          "compiled"]
        assert (folder / "best.cu").read_text() == GOOD
    assert json.loads((out / "experiment.json").read_text())["sessions"][0]["where"] == \
        "ray auto"
    assert (out / "report.md").is_file()
    print(f"ray experiment took {took:.1f} s")


def test_ray_missing_is_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    path = experiment(tmp_path)
    result = CliRunner().invoke(main, ["experiment", "run", str(path), "--out",
                                       str(tmp_path / "out"), "--ray", "auto"])
    assert result.exit_code == 3
    assert "kgen: error: --ray needs Ray: pip install 'kgen[ray]'" in result.output
    assert "Traceback" not in result.output


def test_a_cell_with_a_prompt_set_of_your_own_resumes(tmp_path):
    """The grid names the folder; the cell's run.json alone may not (kgen.loop.config), so the
    experiment passes the grid's prompt set when it resumes the cell."""
    mine = tmp_path / "mine"
    mine.mkdir()
    for template in (Path(__file__).parent.parent / "prompts" / "compact").glob("*.j2"):
        (mine / template.name).write_text(template.read_text())
    grid = GRID.replace("[default, compact]", f"['{mine}']").replace("samples: 2", "samples: 1")
    path, out = experiment(tmp_path, grid), tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    killer = KILLER.replace("len(seen) == 3", "len(seen) == 1")
    killed = subprocess.run([sys.executable, "-c", killer, str(path), str(out)], env=env,
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr
    result = CliRunner().invoke(main, ["experiment", "run", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    (record,) = lines(out / "cells.jsonl")
    assert record["status"] == "finished", record
    assert [r["status"] for r in lines(out / "cells" / record["id"] / "results.jsonl")] == [
        "compile error", "compiled"]
