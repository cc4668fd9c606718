"""`kgen experiment run FILE` and `kgen experiment report DIR`: parse, call kgen.experiment, print
(progress on stderr: cells done, ETA, tokens, best so far per op)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from kgen.errors import KgenError


@click.group()
def experiment() -> None:
    """Prompt experiments: a grid of prompt sets x models x ops x dtypes x archs x samples
    (prompts/experiments/NAME.yaml), every cell an ordinary run directory in one experiment
    folder; suite metrics (compile rate, correctness, fast_p, geomean speedup), paired
    comparisons and plots."""


@experiment.command("run")
@click.argument("file")
@click.option("--dry-run", is_flag=True, help="List the cells and exit.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Experiment folder (default runs/experiments/NAME); running again into it "
                   "continues: finished cells are skipped, unfinished ones resumed.")
@click.option("--ray", metavar="ADDRESS|auto",
              help="Run the cells as Ray tasks (one GPU each) on this cluster; `auto` starts a "
                   "local one (pip install 'kgen[ray]').")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 16),
              help="Warm GPU workers per visible GPU (more than 1 shares a GPU: timings are "
                   "disturbed; for showing the scheduler).")
@click.option("--jobs", type=click.IntRange(1, 256),
              help="Cells run at once (default: twice the GPU workers, or 2).")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report on stdout.")
def run_experiment(file: str, dry_run: bool, out: Path | None, ray: str | None, workers: int,
                   jobs: int | None, as_json: bool) -> None:
    """Run every cell of FILE (a path, or the name of a shipped experiment) not finished yet,
    then write report.md, report.json and plots/ in the experiment folder."""
    from kgen.experiment import driver
    from kgen.experiment.progress import Tally

    how = driver.plan(file, out, need_arch=not dry_run)
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    if dry_run:
        _list(how, console)
        return
    tally = Tally(len(how.cells))
    printer = _Printer(console, tally)
    console.print(f"experiment {escape(how.grid.name)}: {len(how.cells)} cells -> "
                  f"{escape(str(how.out))}")
    try:
        data = driver.run(how, per_gpu=workers, jobs=jobs, ray=ray, on_event=printer.event)
    except (KeyboardInterrupt, KgenError):
        printer.stop()
        click.echo(f"kgen: the experiment folder keeps every finished cell; continue with: "
                   f"kgen experiment run {file} --out {how.out}", err=True)
        raise
    printer.stop()
    _summary(data, how.out, console)
    if as_json:
        click.echo(json.dumps(data, default=str))
    done = all(c["status"] == "finished" for c in data["cells"])
    sys.exit(0 if done else 1)


@experiment.command("report")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report on stdout.")
def report_experiment(folder: Path, as_json: bool) -> None:
    """Write FOLDER/report.md, report.json and plots/ from the cells' run directories."""
    from kgen.experiment import driver

    data = driver.write_report(folder)
    _summary(data, folder, Console(stderr=True, highlight=False, soft_wrap=True))
    if as_json:
        click.echo(json.dumps(data, default=str))


def _list(how, console: Console) -> None:
    for listed in how.cells:
        cell = listed.cell
        problem = f"  [red]will fail: {escape(listed.problem)}[/red]" if listed.problem else ""
        console.print(f"{escape(listed.id)}  [dim]{escape(cell.prompt_label)} / "
                      f"{escape(cell.model.name)}, seed {cell.seed}[/dim]{problem}")
    for text in how.skipped:
        console.print(f"[dim]left out: {escape(text)}[/dim]")
    budget = how.grid.budget
    console.print(f"{len(how.cells)} cells; budget per run: {budget.rounds} rounds x "
                  f"{budget.candidates} candidates, patience {budget.patience}"
                  + ("" if how.grid.gpu else "; compile only"))


class _Printer:
    """One line per finished cell; the tally (cells, ETA, tokens, best per op) as a status."""

    def __init__(self, console: Console, tally) -> None:
        self.console = console
        self.tally = tally
        self.status = console.status(tally.line())
        self.status.start()

    def event(self, kind: str, listed, detail) -> None:
        if kind == "skipped":
            self.tally.cell_done("finished", earlier=True)
        elif kind == "attempt":
            self.tally.attempt(listed, *detail)
        elif kind == "done":
            self.tally.cell_done(detail["status"])
            summary = detail.get("summary") or {}
            what = (f"{summary.get('attempts')} attempts, {summary.get('stop_reason')}"
                    if summary else detail.get("message", ""))
            color = "green" if summary.get("ok") else ("yellow" if summary else "red")
            self.console.print(f"[{color}]{detail['status']}[/{color}] {escape(listed.id)}: "
                               f"{escape(str(what))}")
        self.status.update(escape(self.tally.line()))

    def stop(self) -> None:
        self.status.stop()


def _summary(data: dict, folder: Path, console: Console) -> None:
    for g in data["groups"]:
        correct = "-" if g["correct"] is None else f"{g['correct']:.0%}"
        fast1 = "-" if not g["fast_p"] else f"{g['fast_p']['1']:.0%}"
        console.print(f"{escape(g['prompt_set'])} / {escape(g['model'])}: {g['cells']} cells, "
                      f"compiled {g['compile_any']:.0%}, correct {correct}, fast_1 {fast1}")
    if data.get("plots_skipped"):
        console.print(f"plots skipped: {escape(data['plots_skipped'])}")
    console.print(f"report: {escape(str(folder))}/report.md")
