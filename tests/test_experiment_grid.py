"""Experiment files: the shipped ones load; every bad field is one error naming it; cell ids are
stable; `kgen experiment run --dry-run` lists the cells, the ones that will fail and why."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgen.cli import main
from kgen.errors import UsageError
from kgen.experiment import grid as grids
from kgen.experiment.grid import list_cells

GOOD = """\
name: t
prompt_sets: [default, compact]
models:
  - {name: a, backend: builtin}
  - {name: b, backend: openai, model: m, base_url: http://127.0.0.1:9/v1,
     parameters: {temperature: 0.5}, price_per_mtok: {prompt: 1.0, completion: 2.0}}
ops: [gemm, nosuchop]
dtypes: [float32, int32]
archs: [sm_89]
samples: 2
budget: {rounds: 3, patience: 1}
gpu: false
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    return path


def test_the_shipped_experiments_load():
    prompts = grids.load("compare-prompt-sets")
    assert prompts.prompt_sets == ("default", "compact") and len(prompts.models) == 1
    assert "gemm" in [op.value for op in prompts.ops] and len(prompts.ops) >= 6
    versus = grids.load("builtin-vs-random")
    assert [m.backend for m in versus.models] == ["builtin", "builtin-random"]
    assert versus.seeds == (1, 2, 3, 4, 5) and versus.budget.rounds == 12


def test_a_good_file_and_its_cells(tmp_path):
    grid = grids.load(str(write(tmp_path, GOOD)))
    assert grid.budget.rounds == 3 and grid.budget.patience == 1 and grid.budget.candidates == 1
    assert grid.models[1].price == (1.0, 2.0) and grid.models[1].cost(1_000_000, 500_000) == 2.0
    cells, skipped = list_cells(grid)
    # gemm float32 only (gemm has no int32): 2 sets x 2 models x 2 samples; nosuchop: both dtypes
    assert len(cells) == 8 + 16
    assert skipped == ["gemm int32: the op has no such dtype (it has float32, float16, bfloat16)"]
    unknown = [c for c in cells if c.cell.op.value == "nosuchop"]
    assert all(c.problem and "unknown op 'nosuchop'" in c.problem for c in unknown)
    assert len({c.id for c in cells}) == len(cells)
    first = cells[0].id
    assert first.startswith("gemm-float32-sm_89-default-a-s0-")


def test_cell_ids_are_stable_and_depend_on_what_decides_the_run(tmp_path):
    grid = grids.load(str(write(tmp_path, GOOD)))
    ids = {c.id for c in list_cells(grid)[0]}
    swapped = dataclasses.replace(grid, models=grid.models[::-1], ops=grid.ops[::-1])
    assert {c.id for c in list_cells(swapped)[0]} == ids
    longer = dataclasses.replace(grid, budget=dataclasses.replace(grid.budget, rounds=4))
    assert not ids & {c.id for c in list_cells(longer)[0]}


@pytest.mark.parametrize("change, message", [
    ("nme: x\n", "unknown field 'nme'"),
    ("budget: {rounds: 0}\n", "field 'budget.rounds' should be a positive number"),
    ("budget: {round: 3}\n", "unknown field 'budget.round'"),
    ("seeds: [1, 2]\n", "give samples or seeds, not both"),
    ("samples: 0\n", "field 'samples' should be a whole number >= 1"),
    ("ops: [{spec: x.yaml}]\n", "field 'ops[0]' should be a shipped op name"),
    ("models: [{backend: openai}]\n", "field 'models[0].model': backend openai needs a model"),
    ("models: [{backend: openai, model: m, parameters: {temprature: 1}}]\n",
     "unknown field 'models[0].parameters.temprature' for backend openai"),
    ("models: [{backend: builtin}, {backend: builtin}]\n", "two models share a name"),
    ("models: [{backend: openai, model: m, price_per_mtok: 3}]\n",
     "field 'models[0].price_per_mtok' should be {prompt: USD, completion: USD}"),
    ("models: [{name: s, backend: scripted}]\n", "field 'models[0].parameters.script'"),
    ("models: []\n", "field 'models' should be a non-empty list"),
])
def test_each_bad_field_is_one_error_naming_it(tmp_path, change, message):
    key = change.split(":")[0]
    lines = [ln for ln in GOOD.splitlines(keepends=True) if not ln.startswith(key + ":")]
    if key == "models":  # drop the old list's continuation lines too
        lines = [ln for ln in lines if not ln.startswith("  ")]
    path = write(tmp_path, "".join(lines) + change)
    with pytest.raises(UsageError) as err:
        grids.load(str(path))
    assert message in str(err.value) and str(path) in str(err.value)


def test_missing_and_invalid_files(tmp_path):
    with pytest.raises(UsageError, match="no experiment file 'nope' .shipped: builtin-vs-random"):
        grids.load("nope")
    with pytest.raises(UsageError, match="is not valid YAML"):
        grids.load(str(write(tmp_path, "name: [unclosed\n")))
    with pytest.raises(UsageError, match="missing field 'ops'"):
        grids.load(str(write(tmp_path, "models: [{backend: builtin}]\n")))


def test_dry_run_lists_the_cells_and_what_will_fail(tmp_path):
    path = write(tmp_path, GOOD)
    result = CliRunner().invoke(main, ["experiment", "run", str(path), "--dry-run"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert sum("gemm-float32-sm_89-" in ln for ln in lines) == 8
    assert sum("will fail: unknown op 'nosuchop'" in ln for ln in lines) == 16
    assert "left out: gemm int32" in result.output
    assert "24 cells; budget per run: 3 rounds x 1 candidates, patience 1; compile only" in \
        result.output
    assert not (tmp_path / "runs").exists()


def test_a_bad_file_is_one_line_and_exit_2(tmp_path):
    path = write(tmp_path, GOOD.replace("samples: 2", "samples: two"))
    result = CliRunner().invoke(main, ["experiment", "run", str(path), "--dry-run"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"kgen: error: {path}: field 'samples' should be a whole number >= 1, not 'two'"]
