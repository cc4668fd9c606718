"""`make bench`: two tables on the local GPU.

The gemm table: the reference naive kernel, the builtin author's best after a fixed budget, cuBLAS
and (where installed) Triton, at gemm's bench sizes. The ops table (benchmarks/ops_table.py):
every shipped op at each of its bench sizes, naive / builtin best / torch eager / torch.compile with
their share of the roofline.

Every kernel of ours is validated and timed by the same sandboxed worker as any candidate (cuBLAS
and torch eager are timed interleaved with it); Triton and torch.compile are timed the same way in
processes of their own.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import click

from benchmarks import ops_table
from kgen.arch import Arch, local_gpu, parse_arch
from kgen.author.space import templates_for
from kgen.author.tf32x3 import LABEL as TF32X3_LABEL
from kgen.compile import compile_source
from kgen.gpu.evaluate import EvalOptions, evaluate
from kgen.loop.candidate import parse_contract
from kgen.loop.session import Run, RunConfig
from kgen.loop.task import Task
from kgen.models.builtin import BuiltinModel
from kgen.ops import load_op
from kgen.verdict import Evaluation

NAIVE = {"float32": "01_naive.cu", "float16": "01_naive_f16.cu", "bfloat16": "01_naive_bf16.cu"}


def bench_source(source: str, task: Task, budget_s: float) -> Evaluation:
    """Compile for the local arch, then validate and time at every bench size."""
    contract, problems = parse_contract(source, task.spec)
    compiled = compile_source(source, task.arch)
    if contract is None or not compiled.ok:
        return Evaluation("launch_error", (compiled.summary or str(problems))[:300])
    result = evaluate(compiled, contract, task.spec, task.arch,
                      options=EvalOptions(bench_budget_s=budget_s, profile=False))
    return result or Evaluation("crash", "no GPU")


def builtin_best(task: Task, rounds: int, out: Path, only: tuple[str, ...] = ()
                 ) -> tuple[str | None, str, str]:
    """Run the generate loop with the builtin author (limited to the gemm templates `only` names,
    when it names any); (best source, its choices, an account)."""
    assert task.spec is not None
    config = RunConfig("generate", task.arch.name, op=task.spec.name, dtype=task.dtype,
                       rounds=rounds, patience=3)
    run = Run.start(config, out, BuiltinModel(only))
    summary = run.execute()
    best_source = Path(summary.best).read_text() if summary.best and summary.validated else None
    choices = ""
    if best_source:
        choices = next((ln.split("choices", 1)[1].strip() for ln in best_source.splitlines()
                        if ln.startswith("// kgen: choices")), "")
    account = (f"{summary.attempts} attempts, best: {choices}" if best_source
               else f"{summary.attempts} attempts, none passed")
    return best_source, choices, account + f"; run: {run.run_dir.path}"


def triton_times(dtype: str, sizes: list[dict[str, int]]) -> dict[str, float]:
    if importlib.util.find_spec("triton") is None:
        return {}
    dims = [str(s[k]) for s in sizes for k in ("M", "N", "K")]
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("triton_matmul.py")),
                           dtype, *dims],
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        click.echo(f"triton matmul failed: {done.stderr.strip()[-300:]}", err=True)
        return {}
    return json.loads(done.stdout.strip().splitlines()[-1])


def rows_for(dtype: str, spec, naive: Evaluation, best: Evaluation | None,
             triton: dict[str, float], config: str = "") -> list[dict]:
    """A row per bench size and implementation; `dtype` may name the target (float16 sm_90a)."""
    rows = []
    for i, sizes in enumerate(spec.bench_sizes):
        key = "x".join(str(sizes[k]) for k in ("M", "N", "K"))
        flops = spec.flop_count(sizes)
        ref = best if best is not None and best.passed else naive
        cublas = ref.timings[i].baseline_ms if ref.passed and i < len(ref.timings) else None
        entries = {"reference naive": _ms(naive, i), "builtin best": _ms(best, i),
                   "cuBLAS": cublas, "Triton": triton.get(key)}
        for name, ms in entries.items():
            rows.append({"dtype": dtype, "size": key, "impl": name, "ms": ms,
                         "tflops": flops / (ms * 1e-3) / 1e12 if ms else None,
                         "vs_cublas": cublas / ms if ms and cublas else None,
                         "config": config if name == "builtin best" else ""})
    return rows


def _ms(result: Evaluation | None, i: int) -> float | None:
    if result is None or not result.passed or i >= len(result.timings):
        return None
    return result.timings[i].ms


IMPLS = ("reference naive", "builtin best", "cuBLAS", "Triton")


def targets(local, dtype: str) -> list[tuple[Arch, tuple[str, ...]]]:
    """(arch, gemm templates the search may use; all when empty) per searched row: the local
    arch; on Hopper also sm_90a for the 16-bit dtypes (the wgmma template); and where float32 has
    the 3xTF32 template, a SIMT-only search too, the float32 target's measure."""
    found: list[tuple[Arch, tuple[str, ...]]] = [(local, ())]
    if local.major_minor == 90 and not local.suffix and dtype in ("float16", "bfloat16"):
        found.append((parse_arch("sm_90a"), ()))
    if "tf32x3" in templates_for(local, dtype):
        found.append((local, ("simt",)))
    return found


def row_label(dtype: str, target, local, only: tuple[str, ...], config: str) -> str:
    """`float32`, `float16 sm_90a`, `float32 SIMT`, or `float32 3xTF32` when that is the best."""
    label = dtype if target == local else f"{dtype} {target.name}"
    if only:
        return f"{label} {'+'.join(t.upper() for t in only)}"
    return f"{label} 3xTF32" if f"precision={TF32X3_LABEL}" in config else label


def table(rows: list[dict]) -> str:
    """Side by side: one line per dtype and size, TFLOP/s (ratio to cuBLAS) per implementation."""
    lines = ["| dtype | M x N x K | " + " | ".join(IMPLS) + " | builtin configuration |",
             "| --- | --- | " + " | ".join("---:" for _ in IMPLS) + " | --- |"]
    cells: dict[tuple[str, str], dict[str, str]] = {}
    for r in rows:
        text = "-"
        if r["ms"]:
            text = f"{r['tflops']:.1f} TFLOP/s, {r['ms']:.3f} ms"
            if r["vs_cublas"] and r["impl"] != "cuBLAS":
                text += f" ({r['vs_cublas']:.2f}x)"
        by_impl = cells.setdefault((r["dtype"], r["size"]), {})
        by_impl[r["impl"]] = text
        if r.get("config"):
            by_impl["config"] = r["config"]
    for (dtype, size), by_impl in cells.items():
        lines.append(f"| {dtype} | {size} | " + " | ".join(by_impl.get(i, "-") for i in IMPLS)
                     + f" | {by_impl.get('config', '-')} |")
    return "\n".join(lines)


def gemm_table(arch, dtypes: str, rounds: int, budget: float, out: Path, stamp: str,
               with_triton: bool = True) -> tuple[list[dict], list[str], dict[str, Evaluation]]:
    """The gemm rows and notes; the builtin best per dtype (the ops table reuses float32's)."""
    spec = load_op("gemm")
    rows, notes, bests = [], [], {}
    for dtype in dtypes.split(","):
        task = Task("generate", arch, spec, dtype)
        naive = bench_source((spec.folder / NAIVE[dtype]).read_text(), task, budget)
        triton = triton_times(dtype, list(spec.bench_sizes)) if with_triton else {}
        for target, only in targets(arch, dtype):
            task = Task("generate", target, spec, dtype)
            folder = f"bench-{stamp}-{dtype}-{target.name}" + "".join(f"-{t}" for t in only)
            source, config, account = builtin_best(task, rounds, out / folder, only)
            label = row_label(dtype, target, arch, only, config)
            best = bench_source(source, task, budget) if source else None
            if best is not None and target == arch and not only:
                bests[dtype] = best
            notes.append(f"{label}: builtin {account}; naive {naive.verdict}"
                         + (f"; best {best.verdict} {best.message[:200]}" if best else ""))
            rows += rows_for(label, spec, naive, best, triton, config)
    return rows, notes, bests


def ops_builtin(gemm_bests: dict[str, Evaluation], rounds: int, budget: float, out: Path,
                stamp: str) -> ops_table.Builtin:
    """The builtin author's best for an op of the ops table: gemm's from the gemm table when it
    ran, else a short generate loop, its best timed like the naive kernel."""
    def best(task: Task) -> Evaluation | None:
        assert task.spec is not None and task.dtype is not None
        if task.spec.name == "gemm" and task.dtype in gemm_bests:
            return gemm_bests[task.dtype]
        source, _, _ = builtin_best(task, rounds, out / f"bench-{stamp}-{task.spec.name}")
        return ops_table.run_kernel(source, task, budget) if source else None
    return best


@click.command()
@click.option("--dtypes", default="float32,float16,bfloat16", show_default=True,
              help="gemm table dtypes (empty: no gemm table).")
@click.option("--rounds", default=6, show_default=True, help="Builtin author's budget per dtype.")
@click.option("--budget", default=1.5, show_default=True, help="Timing seconds per size.")
@click.option("--ops", default="all", show_default=True,
              help="Ops table: comma-separated shipped ops, `all`, or empty for none.")
@click.option("--ops-dtype", default="float32", show_default=True)
@click.option("--ops-budget", default=0.3, show_default=True, help="Ops table timing seconds.")
@click.option("--ops-rounds", default=4, show_default=True,
              help="Builtin author's budget per op it can write (gemm reuses the gemm table).")
@click.option("--triton/--no-triton", default=True, show_default=True,
              help="Time Triton's matmul in the gemm table (where Triton is installed).")
@click.option("--out", type=click.Path(path_type=Path), default=Path("runs"), show_default=True)
def main(dtypes: str, rounds: int, budget: float, ops: str, ops_dtype: str, ops_budget: float,
         ops_rounds: int, triton: bool, out: Path) -> None:
    """Print the gemm table and the ops table (and save them as JSON under --out)."""
    gpu = local_gpu()
    if gpu is None:
        click.echo("kgen bench table: no CUDA GPU here; run `make bench` on a GPU machine",
                   err=True)
        sys.exit(3)
    name, local = gpu
    arch = parse_arch(local.name)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    rows, notes, bests = (gemm_table(arch, dtypes, rounds, budget, out, stamp, triton)
                          if dtypes else ([], [], {}))
    out.mkdir(parents=True, exist_ok=True)
    saved = out / f"bench-{stamp}.json"

    def save(op_rows: list[dict], op_notes: list[str]) -> None:
        saved.write_text(json.dumps({"gpu": name, "rows": rows, "notes": notes,
                                     "ops_rows": op_rows, "ops_notes": op_notes}, indent=2))

    def progress(op_rows: list[dict], op_notes: list[str]) -> None:
        save(op_rows, op_notes)
        last = [r for r in op_rows if r["op"] == op_rows[-1]["op"]]  # the op just measured
        done = len({r["op"] for r in op_rows})
        for line in ops_table.table(last).splitlines()[2:]:
            click.echo(f"ops {done}/{len(names)}: {line}", err=True)

    save([], [])
    op_rows: list[dict] = []
    op_notes: list[str] = []
    names = ops_table.all_ops(ops) if ops else []
    if names:
        op_rows, op_notes = ops_table.measure_ops(
            arch, ops_dtype, names, ops_budget,
            ops_builtin(bests, ops_rounds, ops_budget, out, stamp), on_row=progress)
    if "gemm" in names and any(r["dtype"] == f"{ops_dtype} {TF32X3_LABEL}" for r in rows):
        op_notes.append(f"gemm builtin best: the gemm table's {ops_dtype} {TF32X3_LABEL} kernel "
                        "(three TF32 products per term on the tensor cores; it passed the spec's "
                        f"{ops_dtype} tolerance)")
    save(op_rows, op_notes)
    click.echo(f"\n{name} ({local.name}), {stamp}; median of timed launches, L2 flushed")
    if rows:
        click.echo("\ngemm\n" + "\n".join(notes))
        click.echo(table(rows))
    if op_rows:
        click.echo(f"\nops ({ops_dtype}, every bench size; in brackets: share of the roofline, "
                   "from the measured copy bandwidth or cuBLAS's matmul rate)")
        click.echo("\n".join(op_notes))
        click.echo(ops_table.table(op_rows))


if __name__ == "__main__":
    main()
