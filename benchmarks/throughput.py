"""Candidates per minute, before and after the warm workers: the builtin search and a scripted
model each write N gemm float32 candidates on the local GPU in three modes: `fresh` (a new
sandboxed worker per candidate, one candidate per round: the path before the pool, still
`--fresh-workers`), `warm` (the pool, one candidate per round) and `warm-k2` (the pool, rounds of 2
candidates asked, compiled and judged concurrently). Prints one row per model and mode:

    model, mode, K, cands, wall s, cands/min, compile s, check s, worker s,
    beyond timing s, profile s

Under each row, the worker's phases (the Evaluation's `phases_s`: the module loaded, validation,
the peaks, and summed over the bench sizes the inputs drawn, the buffers and first run, the
reference, the checks, the baseline's set-up and the timed loop).

Medians per candidate. `check s`: from handing a compiled candidate to the workers to its verdict,
the profile included; `worker s`: the worker's part (a fresh worker's whole life, or one request
to a warm one); `beyond timing`: that less the timing budget (0.5 s at each bench size in
loop rounds), for which the issue's target is < 1.5 s; `profile s`: the Nsight Compute run's
own time (its wait for another candidate's profile, `profile_wait_s` in the JSON, apart). Each
(model, mode) compiles into a cache of its own, so both pay the same compiles. On an H200 the
builtin's three modes alone took about 170 s with the defaults; the scripted model's come after
them:

    python -m benchmarks.throughput [--candidates 4] [--out throughput.json]
        [--models builtin,scripted] [--modes fresh,warm,warm-k2]
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import click

from kgen.arch import local_gpu
from kgen.gpu.evaluate import EvalOptions
from kgen.loop.session import Run, RunConfig
from kgen.models.builtin import BuiltinModel
from kgen.models.scripted import ScriptedModel
from kgen.ops import load_op

SPEC = load_op("gemm")
BUDGET_S = EvalOptions.quick(SPEC).bench_budget_s * len(SPEC.bench_sizes)


def scripted(count: int) -> ScriptedModel:
    """Replies carrying the shipped float32 reference kernels of gemm, in turn."""
    sources = [p.read_text() for p in SPEC.reference_kernels() if "dtype=float32" in
               p.read_text().splitlines()[0]]
    return ScriptedModel([f"A reference kernel.\n\n```cuda\n{sources[i % len(sources)]}```\n"
                          for i in range(count)])


MODES = (("fresh", True, 1), ("warm", False, 1), ("warm-k2", False, 2))


def measure(model_name: str, mode: str, count: int, arch: str, base: Path) -> dict:
    """One run of `count` candidates in this mode; what it took per candidate. (With K=2 the
    builtin search picks its candidates with less feedback, so its kernels may differ.)"""
    _, fresh, per_round = next(m for m in MODES if m[0] == mode)
    rounds = -(-count // per_round)
    model = BuiltinModel() if model_name == "builtin" else scripted(rounds * per_round)
    config = RunConfig("generate", arch, op="gemm", dtype="float32",
                       rounds=rounds, candidates=per_round, patience=10_000,
                       fresh_workers=fresh)
    os.environ["KGEN_CACHE_DIR"] = str(base / f"cache-{model_name}-{mode}")
    run = Run.start(config, base / f"run-{model_name}-{mode}", model)
    busy = run.owned
    started = time.monotonic()
    summary = run.execute()
    wall = time.monotonic() - started
    attempts = [json.loads(x) for x in (run.run_dir.path / "results.jsonl").read_text()
                .splitlines()]
    evaluations = [a["evaluation"] for a in attempts if a["evaluation"]]
    # A check is the worker's part (a fresh worker's whole life, or one request to a warm one)
    # and then, for a passing candidate, one Nsight Compute launch in a process of its own.
    worker = [e["extra"]["wall_s"] for e in evaluations if "wall_s" in e.get("extra", {})]
    profile = [e["profile"]["seconds"] for e in evaluations if e.get("profile")]
    profile_wait = [e["profile"].get("waited_s", 0.0) for e in evaluations if e.get("profile")]
    phases = [e["extra"]["phases_s"] for e in evaluations if "phases_s" in e.get("extra", {})]
    return {"model": model_name, "mode": mode, "k": per_round, "candidates": len(attempts),
            "verdicts": [a["status"] for a in attempts],
            "wall_s": round(wall, 2), "per_minute": round(60 * len(attempts) / wall, 1),
            "compile_s": _median([a["compile"]["seconds"] for a in attempts if a["compile"]]),
            "check_s": _median([e["seconds"] for e in evaluations]),
            "worker_s": _median(worker), "profile_s": _median(profile),
            "profile_wait_s": _median(profile_wait),
            "beyond_timing_s": _median([w - BUDGET_S for w in worker]),
            "phases_s": {name: _median([p.get(name, 0.0) for p in phases])
                         for name in dict.fromkeys(k for p in phases for k in p)},
            "workers": busy.busy() if busy is not None else [],
            "stop_reason": summary.stop_reason}


def _pick(given: str, known: tuple[str, ...], option: str) -> list[str]:
    names = [x.strip() for x in given.split(",") if x.strip()]
    unknown = [x for x in names if x not in known]
    if unknown or not names:
        raise click.BadParameter(f"{', '.join(unknown) or 'nothing given'}: choose from "
                                 f"{', '.join(known)}", param_hint=option)
    return names


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


@click.command()
@click.option("--candidates", default=4, show_default=True, type=click.IntRange(2, 100))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the rows as JSON here.")
@click.option("--models", default="builtin,scripted", show_default=True,
              help="Comma-separated: which models write the candidates.")
@click.option("--modes", default=",".join(m[0] for m in MODES), show_default=True,
              help="Comma-separated: which modes to run, in the order given.")
def main(candidates: int, out: Path | None, models: str, modes: str) -> None:
    model_names = _pick(models, ("builtin", "scripted"), "--models")
    mode_names = _pick(modes, tuple(m[0] for m in MODES), "--modes")
    found = local_gpu()
    if found is None:
        raise click.ClickException("no GPU here: this measures the GPU check path")
    click.echo(f"{found[0]}, {found[1].name}; gemm float32; timing budget {BUDGET_S:g} s per "
               "candidate; medians per candidate")
    click.echo(f"{'model':9} {'mode':8} {'K':>2} {'cands':>5} {'wall s':>7} {'cands/min':>9} "
               f"{'compile s':>9} {'check s':>7} {'worker s':>8} {'beyond timing s':>15} "
               f"{'profile s':>9}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="kgen-throughput-") as tmp:
        for model_name in model_names:
            for mode in mode_names:
                r = measure(model_name, mode, candidates, found[1].name, Path(tmp))
                rows.append(r)
                # Each row as it finishes, and the JSON rewritten: a cut-off run keeps its rows.
                click.echo(f"{r['model']:9} {r['mode']:8} {r['k']:>2} {r['candidates']:>5} "
                           f"{r['wall_s']:>7} {r['per_minute']:>9} {r['compile_s']!s:>9} "
                           f"{r['check_s']!s:>7} {r['worker_s']!s:>8} "
                           f"{r['beyond_timing_s']!s:>15} {r['profile_s']!s:>9}  {r['verdicts']}")
                click.echo("    worker phases, median s: " + ", ".join(
                    f"{name} {s}" for name, s in r["phases_s"].items()))
                for w in r["workers"]:  # a warm worker replaced mid-run costs a start-up
                    if w["restarts"]:
                        click.echo(f"    {w['worker']} restarted {w['restarts']}x: "
                                   f"{w.get('restarted_for', {})}")
                if out is not None:
                    out.write_text(json.dumps({"gpu": found[0], "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
