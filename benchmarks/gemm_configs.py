"""Named gemm configurations timed at gemm's bench sizes against cuBLAS, on the local GPU: what one
template parameter is worth at each size, without a search deciding for you.

    python -m benchmarks.gemm_configs --dtype bfloat16 --arch sm_90a \\
        --set "" --set "bn=128" --set "stages=4 epi=0" [--sizes 2432x1792x4096,...] [--json FILE]

Each `--set` changes fields of the template's default configuration for that arch and dtype (an
empty one is the default itself). Every configuration is compiled, validated at every test size
and timed at every bench size by the same worker as any candidate, cuBLAS interleaved; a row per
configuration is printed as it finishes. `--sizes MxNxK,...` times those sizes instead of gemm's
bench sizes; `--check-timed` validates at the timed sizes too (schedules that only large sizes
reach, such as stream-K's cut tiles, are then checked where they are timed).
"""

from __future__ import annotations

import dataclasses
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click

from benchmarks.bench_table import bench_source
from kgen.arch import local_gpu, parse_arch
from kgen.author import space
from kgen.compile import compile_source
from kgen.errors import KgenError
from kgen.loop.task import Task
from kgen.ops import load_op
from kgen.spec import OpSpec


def parse_sizes(text: str) -> tuple[dict[str, int], ...]:
    """`MxNxK,...` as size entries; SystemExit naming a bad one."""
    out = []
    for item in text.split(","):
        dims = item.strip().lower().split("x")
        if len(dims) != 3 or not all(d.isdigit() and int(d) > 0 for d in dims):
            raise SystemExit(f"--sizes {text!r}: {item!r} is not MxNxK with positive integers")
        out.append(dict(zip("MNK", map(int, dims), strict=True)))
    return tuple(out)


def configure(arch_name: str, dtype: str, changes: str) -> space.Params:
    """The default configuration with `field=value ...` applied; SystemExit naming a bad one."""
    try:
        arch = parse_arch(arch_name)
    except KgenError as e:
        raise SystemExit(f"--arch {arch_name}: {e}") from None
    if not space.templates_for(arch, dtype):
        raise SystemExit(f"--dtype {dtype}: no gemm template for it on {arch.name}")
    base = space.default(arch, dtype)
    fields = {f.name for f in dataclasses.fields(base)}
    values: dict[str, int] = {}
    for pair in changes.split():
        name, _, value = pair.partition("=")
        if name not in fields or not value.isdigit():
            raise SystemExit(f"--set {changes!r}: {pair!r} is not field=integer; fields of "
                             f"{type(base).__name__}: {', '.join(sorted(fields))}")
        values[name] = int(value)
    p: space.Params = dataclasses.replace(base, **values)  # type: ignore[arg-type]
    if why := space.problems(p, arch, dtype):
        raise SystemExit(f"--set {changes!r}: {'; '.join(why)}")
    return p


def gemm_spec(sizes: str, check_timed: bool) -> OpSpec:
    """gemm's spec, timed at `sizes` (MxNxK,...; empty: its bench sizes), and with `check_timed`
    validated at those sizes too."""
    spec = load_op("gemm")
    if sizes:
        spec = dataclasses.replace(spec, bench_sizes=parse_sizes(sizes))
    if check_timed:
        spec = dataclasses.replace(spec, test_sizes=spec.test_sizes + spec.bench_sizes)
    return spec


@click.command(help=__doc__)
@click.option("--dtype", default="bfloat16", show_default=True)
@click.option("--arch", "arch_name", default=None, help="target (default: the local GPU's)")
@click.option("--set", "sets", multiple=True, default=("",), help="field=value ... (repeatable)")
@click.option("--budget", default=1.0, show_default=True, help="timing seconds per size")
@click.option("--sizes", default="", help="MxNxK,... to time instead of gemm's bench sizes")
@click.option("--check-timed", is_flag=True, help="validate at the timed sizes too")
@click.option("--json", "json_path", type=click.Path(path_type=Path))
def main(dtype: str, arch_name: str | None, sets: tuple[str, ...], budget: float, sizes: str,
         check_timed: bool, json_path: Path | None) -> None:
    found = local_gpu()
    if found is None:
        raise SystemExit("no GPU here")
    arch_name = arch_name or found[1].name
    configs = [configure(arch_name, dtype, s) for s in sets]
    spec = gemm_spec(sizes, check_timed)
    task = Task("generate", parse_arch(arch_name), spec, dtype)
    sources = [space.render(p, dtype) for p in configs]
    with ThreadPoolExecutor(8) as pool:  # warm the compile cache in parallel
        list(pool.map(lambda s: compile_source(s, task.arch), sources))
    rows = []
    for p, source in zip(configs, sources, strict=True):
        result = bench_source(source, task, budget)
        ms_list = [t.ms for t in result.timings]
        base_list = [t.baseline_ms for t in result.timings]
        rows.append({"choices": p.choices, "verdict": result.verdict, "ms": ms_list,
                     "cublas_ms": base_list})
        cells = [f"{t.size_label} {t.ms:.4f} ms ({t.baseline_ms / t.ms:.2f}x)"
                 for t in result.timings if t.ms and t.baseline_ms]
        click.echo(f"{p.choices}: {result.verdict}; " + "; ".join(cells)
                   + ("" if result.passed else f" {result.message[:300]}"))
        if json_path:
            json_path.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
