"""An experiment file (`prompts/experiments/NAME.yaml`): prompt sets x models x ops x dtypes x
archs x samples, and the budget of every run. Loaded and checked here; a bad field is one error
naming it. Paths in the file are relative to the file's folder.

    name: compare-prompt-sets
    prompt_sets: [default, compact]
    models:
      - {name: local, backend: openai, model: qwen3-coder, base_url: http://localhost:8000/v1,
         parameters: {temperature: 0.2}, price_per_mtok: {prompt: 0.1, completion: 0.4},
         concurrency: 4}
    ops: [gemm, softmax, {file: my_op/spec.yaml}, {kernelbench: problems/19_ReLU.py}]
    dtypes: [float32]          # optional: each op's first dtype
    archs: [sm_90]             # optional: the local GPU's
    samples: 2                 # or seeds: [0, 7]
    budget: {rounds: 4, candidates: 1, patience: 2, wall_seconds: 900, tokens: 200000}
    gpu: true                  # false: compile only
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kgen.errors import KgenError, UsageError
from kgen.experiment.cells import Cell, Listed, ModelEntry, OpSource
from kgen.loop.loop import Budget
from kgen.ops import load_op
from kgen.paths import data_dir

BACKENDS_WITHOUT_ENDPOINT = ("builtin", "builtin-random", "scripted")
_TOP = {"name", "description", "prompt_sets", "models", "ops", "dtypes", "archs", "samples",
        "seeds", "budget", "gpu"}
_MODEL = {"name", "backend", "model", "base_url", "parameters", "price_per_mtok", "concurrency"}
# Model parameters each backend takes (a plugin backend takes any).
_PARAMETERS = {"openai": {"temperature", "max_tokens", "timeout", "max_retries", "reasoning"},
               "builtin": set(), "builtin-random": set(), "scripted": {"script"}}
_BUDGET = {"rounds": False, "candidates": False, "patience": False, "wall_seconds": True,
           "tokens": False}  # field -> may be fractional


@dataclass(frozen=True)
class Grid:
    name: str
    description: str
    path: Path
    prompt_sets: tuple[str, ...]
    models: tuple[ModelEntry, ...]
    ops: tuple[OpSource, ...]
    dtypes: tuple[str | None, ...]  # (None,): each op's first dtype
    archs: tuple[str | None, ...]  # (None,): the local GPU's
    seeds: tuple[int, ...]
    budget: Budget
    gpu: bool


def experiments_dir() -> Path:
    return data_dir("prompts") / "experiments"


def find(name_or_path: str) -> Path:
    """A file path, or the name of a shipped experiment (prompts/experiments/NAME.yaml)."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    shipped = experiments_dir() / f"{name_or_path}.yaml"
    if shipped.is_file():
        return shipped
    known = sorted(p.stem for p in experiments_dir().glob("*.yaml"))
    raise UsageError(f"no experiment file {name_or_path!r} (shipped: {', '.join(known)})")


def load(name_or_path: str) -> Grid:
    """Read and check an experiment file; UsageError names the file and the field."""
    path = find(name_or_path)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise UsageError(f"{path} is not valid YAML: {exc}") from exc
    try:
        return _build(data, path.resolve())
    except (TypeError, ValueError, KeyError) as exc:
        raise UsageError(f"{path}: {exc.args[0] if exc.args else exc}") from exc


def _build(data: Any, path: Path) -> Grid:
    if not isinstance(data, dict):
        raise TypeError("the file should hold a mapping of fields")
    _known(data, _TOP, "")
    base = path.parent
    name = str(data.get("name") or path.stem)
    if "samples" in data and "seeds" in data:
        raise ValueError("field 'seeds': give samples or seeds, not both")
    seeds = tuple(_ints(data["seeds"], "seeds")) if "seeds" in data else tuple(
        range(_positive(data.get("samples", 1), "samples")))
    return Grid(name, str(data.get("description", "")), path,
                tuple(_prompt_set(s, base) for s in _list(data, "prompt_sets", ["default"])),
                _models(_list(data, "models", None), base),
                tuple(_op(op, base, i) for i, op in enumerate(_list(data, "ops", None))),
                tuple(str(d) for d in _list(data, "dtypes", [None])) if data.get("dtypes")
                else (None,),
                tuple(str(a) for a in _list(data, "archs", [None])) if data.get("archs")
                else (None,),
                seeds, _budget(data.get("budget") or {}), bool(data.get("gpu", True)))


def _known(data: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise KeyError(f"unknown field '{where}{unknown[0]}' (known: {', '.join(sorted(allowed))})")


def _list(data: dict, key: str, default: list | None) -> list:
    value = data.get(key, default)
    if value is None:
        raise KeyError(f"missing field '{key}'")
    if isinstance(value, (str, dict)):
        value = [value]
    if not isinstance(value, list) or not value:
        raise TypeError(f"field '{key}' should be a non-empty list")
    return value


def _positive(value: Any, key: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"field '{key}' should be a whole number >= 1, not {value!r}")
    return value


def _ints(value: Any, key: str) -> list[int]:
    if not isinstance(value, list) or not value or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise TypeError(f"field '{key}' should be a non-empty list of whole numbers")
    return value


def _prompt_set(value: Any, base: Path) -> str:
    """A shipped set's name as is; a folder path made absolute (checked when a cell starts)."""
    text = str(value)
    if "/" in text or text.startswith("."):
        return str((base / text).resolve())
    return text


def _parameters(params: Any, backend: str, where: str, base: Path) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise TypeError(f"field '{where}parameters' should be a mapping")
    allowed = _PARAMETERS.get(backend)
    if allowed is not None and set(params) - allowed:
        raise KeyError(f"unknown field '{where}parameters.{sorted(set(params) - allowed)[0]}' "
                       f"for backend {backend} (it takes: {', '.join(sorted(allowed)) or 'none'})")
    if backend == "scripted":  # replies: a JSON list or folder, or one of those per op
        script = params.get("script")
        if not isinstance(script, (str, dict)):
            raise ValueError(f"field '{where}parameters.script' should be a path, or a mapping "
                             "of op name to a path or a list of replies")
        params = {"script": str((base / script).resolve()) if isinstance(script, str) else {
            op: str((base / v).resolve()) if isinstance(v, str) else v
            for op, v in script.items()}}
    return params


def _models(items: list, base: Path) -> tuple[ModelEntry, ...]:
    out = []
    for i, item in enumerate(items):
        where = f"models[{i}]."
        if not isinstance(item, dict):
            raise TypeError(f"field 'models[{i}]' should be a mapping (backend, model, ...)")
        _known(item, _MODEL, where)
        backend = str(item.get("backend") or ("openai" if item.get("base_url") else "builtin"))
        if backend not in BACKENDS_WITHOUT_ENDPOINT and not item.get("model") and not item.get(
                "base_url"):
            raise ValueError(f"field '{where}model': backend {backend} needs a model or base_url")
        params = _parameters(item.get("parameters") or {}, backend, where, base)
        out.append(ModelEntry(str(item.get("name") or item.get("model") or backend), backend,
                              item.get("model"), item.get("base_url"),
                              tuple(sorted(params.items())), _price(item, where),
                              _positive(item.get("concurrency", 4), where + "concurrency")))
    names = [m.name for m in out]
    if len(set(names)) != len(names):
        raise ValueError("field 'models': two models share a name; give each a `name:`")
    return tuple(out)


def _price(item: dict, where: str) -> tuple[float, float] | None:
    price = item.get("price_per_mtok")
    if price is None:
        return None
    if not isinstance(price, dict) or set(price) - {"prompt", "completion"} or not all(
            isinstance(v, (int, float)) and v >= 0 for v in price.values()):
        raise ValueError(f"field '{where}price_per_mtok' should be {{prompt: USD, completion: "
                         "USD}} per million tokens")
    return float(price.get("prompt", 0)), float(price.get("completion", 0))


def _op(item: Any, base: Path, i: int) -> OpSource:
    if isinstance(item, str):
        return OpSource("op", item)
    if isinstance(item, dict) and len(item) == 1:
        kind, value = next(iter(item.items()))
        if kind in ("file", "kernelbench"):
            return OpSource(kind, str((base / str(value)).resolve()))
    raise ValueError(f"field 'ops[{i}]' should be a shipped op name, {{file: spec.yaml}} or "
                     "{kernelbench: problem.py}")


def _budget(data: Any) -> Budget:
    if not isinstance(data, dict):
        raise TypeError("field 'budget' should be a mapping")
    _known(data, set(_BUDGET), "budget.")
    for key, value in data.items():
        kinds = (int, float) if _BUDGET[key] else (int,)
        least = 0 if key == "patience" else 1
        if not isinstance(value, kinds) or isinstance(value, bool) or value < least:
            raise ValueError(f"field 'budget.{key}' should be a positive number, not {value!r}")
    defaults = Budget(rounds=4, candidates=1, patience=2)
    return Budget(data.get("rounds", defaults.rounds), data.get("candidates", defaults.candidates),
                  data.get("patience", defaults.patience), data.get("wall_seconds"),
                  data.get("tokens"))


def list_cells(grid: Grid) -> tuple[list[Listed], list[str]]:
    """Every cell of the grid in a fixed order, and the combinations left out (an op without that
    dtype). Cells of ops that do not load stay in, with their problem: they fail clearly."""
    cells, skipped = [], []
    for op in grid.ops:
        problem = op.problem()
        dtypes = _dtypes_of(op) if problem is None else None
        for dtype in grid.dtypes:
            if dtype is not None and dtypes is not None and dtype not in dtypes:
                skipped.append(f"{op.label} {dtype}: the op has no such dtype "
                               f"(it has {', '.join(dtypes)})")
                continue
            for arch in grid.archs:
                for prompt_set in grid.prompt_sets:
                    for model in grid.models:
                        for sample, seed in enumerate(grid.seeds):
                            cell = Cell(prompt_set, model, op, dtype, arch, sample, seed)
                            cells.append(Listed(cell.ident(grid.budget, grid.gpu), cell,
                                                problem))
    return cells, skipped


def _dtypes_of(op: OpSource) -> list[str] | None:
    if op.kind == "kernelbench":
        return None  # known once the file is read
    try:
        return list(load_op(op.value if op.kind == "op" else None,
                            Path(op.value) if op.kind == "file" else None).dtypes)
    except KgenError:
        return None
