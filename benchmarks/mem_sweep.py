"""Every configuration of a memory-bound template (or a filtered part of its space), judged on the
local GPU exactly as a loop round judges a candidate (warm worker, full validation, every bench
size timed with the L2 flushed and judged by their geometric mean, torch eager interleaved): what
the space can reach, so the search's result can be read against it. Prints a row per
configuration as it finishes and the best few at the end; `--json` keeps them all, with each
bench size's time and share. The time is the geometric mean over the bench sizes (the loop's
objective); the share of the copy bandwidth is given per size and as the worst of them, which is
what the target (>= 90% at every bench size) is about.

    python -m benchmarks.mem_sweep --op sum --where vec=4 [--dtype float32] [--json FILE]
    python -m benchmarks.mem_sweep --op problem.py --where "vec=1 unroll=8,16"

`--where` keeps the configurations whose fields have those values (`vec=4 cache=4,8`).
`--repeat N` judges the whole list N times, each pass in a new worker process (new allocations,
a new CUDA context), and prints each configuration's spread across passes: on the H200 the same
rowwise kernel ran 0.067 ms in one process and 0.103 ms in another, far beyond the in-process
p20-p80, so one pass cannot rank configurations closer than that.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click

from kgen.arch import local_gpu
from kgen.author.families import family_for
from kgen.compile import compile_source
from kgen.gpu.evaluate import EvalOptions, evaluate
from kgen.gpu.pool import WorkerPool
from kgen.loop.candidate import parse_contract
from kgen.ops import spec_from
from kgen.verdict import Timing, overall


def _keep(p: object, where: dict[str, str]) -> bool:
    return all(str(getattr(p, k, None)) in v.split(",") for k, v in where.items())


@click.command(help=__doc__)
@click.option("--op", "ops", multiple=True, required=True, metavar="SOURCE",
              help="a shipped memory-bound op, a spec.yaml or a KernelBench problem file")
@click.option("--dtype", default="float32", show_default=True)
@click.option("--where", default="", help="field=value[,value] ... that a configuration must have")
@click.option("--limit", type=int, default=200, show_default=True, help="at most this many")
@click.option("--repeat", type=click.IntRange(1, 20), default=1, show_default=True,
              help="passes over the list, each in a new worker process")
@click.option("--json", "json_path", type=click.Path(path_type=Path))
def main(ops: tuple[str, ...], dtype: str, where: str, limit: int, repeat: int,
         json_path: Path | None) -> None:
    found = local_gpu()
    if found is None:
        raise SystemExit("no GPU here")
    target = found[1]
    wanted = dict(pair.split("=", 1) for pair in where.split())
    rows: list[dict] = []
    for op in ops:
        spec = spec_from(op)
        family = family_for(spec)
        if family is None:
            raise SystemExit(f"{op}: no builtin template")
        configs = [p for t in family.templates(target, dtype)
                   for p in family.space(target, dtype, t) if _keep(p, wanted)][:limit]
        click.echo(f"{op}: {len(configs)} configurations, {repeat} pass(es)", err=True)
        sources = [family.render(p, dtype, target) for p in configs]
        with ThreadPoolExecutor(8) as compiling:
            builds = list(compiling.map(lambda s: compile_source(s, target), sources))
        options = EvalOptions.quick(spec, profile=False, sanitize=False)
        for rep in range(repeat):
            with WorkerPool.local() as pool:  # a new worker process per pass
                for p, source, build in zip(configs, sources, builds, strict=True):
                    contract, _ = parse_contract(source, spec)
                    started = time.monotonic()
                    result = evaluate(build, contract, spec, target, options=options,
                                      workers=pool)
                    row = {"op": op, "dtype": dtype, "pass": rep, "choices": p.choices,
                           "verdict": result.verdict if result else "not run",
                           "seconds": round(time.monotonic() - started, 2)}
                    t = overall(result.timings) if result else None  # the loop's objective
                    if result and t:
                        row.update(ms=t.ms, p20_ms=t.p20_ms, p80_ms=t.p80_ms,
                                   baseline_ms=t.baseline_ms, fraction=t.roofline_fraction,
                                   per_size=[_size_row(s) for s in result.timings])
                    rows.append(row)
                    each = _shares([s["fraction"] for s in row.get("per_size", ())])
                    click.echo(f"{op} pass {rep} {row['verdict']:<6} {row.get('ms') or 0:.4f} ms "
                               f"worst {row.get('fraction') or 0:6.1%} ({each})  eager "
                               f"{row.get('baseline_ms') or 0:.4f}  {p.choices}")
                    if json_path:
                        json_path.write_text(json.dumps(rows, indent=1))
        _summary(op, [r for r in rows if r["op"] == op and r.get("ms")])


def _size_row(t: Timing) -> dict:
    return {"sizes": t.sizes, "ms": t.ms, "baseline_ms": t.baseline_ms,
            "fraction": t.roofline_fraction}


def _shares(fractions: Sequence[float | None]) -> str:
    """Each bench size's share of the copy bandwidth, in the spec's size order: "94.1/88.9/93.8"."""
    return "/".join(f"{100 * f:.1f}" if f else "-" for f in fractions)


def summarize(op: str, timed: list[dict]) -> list[str]:
    """The best few by median time over passes, with the range across passes and each size's
    median share over passes."""
    by_choice: dict[str, list[dict]] = {}
    for r in timed:
        by_choice.setdefault(r["choices"], []).append(r)
    ranked = sorted(by_choice.items(), key=lambda kv: statistics.median(r["ms"] for r in kv[1]))
    lines = []
    for choices, runs in ranked[:5]:
        ms = sorted(r["ms"] for r in runs)
        eager = statistics.median(r["baseline_ms"] for r in runs)
        spread = f", passes {ms[0]:.4f}-{ms[-1]:.4f}" if len(ms) > 1 else ""
        sizes = len(runs[0].get("per_size", ()))
        median = [statistics.median(r["per_size"][i]["fraction"] or 0 for r in runs)
                  for i in range(sizes)]
        shares = f", shares {_shares(median)}" if sizes else ""
        lines.append(f"best {op}: {statistics.median(ms):.4f} ms (median of {len(ms)}{spread})"
                     f"{shares}, eager {eager:.4f}: {choices}")
    return lines


def _summary(op: str, timed: list[dict]) -> None:
    for line in summarize(op, timed):
        click.echo(line)


if __name__ == "__main__":
    main()
