"""The `kgen` command: parse arguments, call one stage or the loop, print. Nothing else."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from kgen import __version__
from kgen.errors import KgenError

EXIT_CODES = """\b
Exit codes:
  0    did its job (compiled; a candidate passed; the file was fixed)
  1    ran, but the result is a failure (compile errors; no candidate passed)
  2    bad usage: unknown option or arch, missing file, invalid spec or contract
  3    environment: no nvcc, no GPU for a GPU command, sandbox unusable
  4    model endpoint fatal: authentication, unknown model, retries exhausted
  130  interrupted (the run directory stays consistent; --resume continues it)"""


class KgenGroup(click.Group):
    """Turns every KgenError (and OSError) into one clear line and its exit code."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except KgenError as exc:
            click.echo(f"kgen: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("kgen: interrupted", err=True)
            sys.exit(130)
        except OSError as exc:  # an unreadable input or unwritable output path
            where = f": {exc.filename}" if exc.filename else ""
            click.echo(f"kgen: error: {exc.strerror or exc}{where}", err=True)
            sys.exit(2)


@click.group(cls=KgenGroup, epilog=EXIT_CODES)
@click.version_option(__version__, prog_name="kgen")
def main() -> None:
    """kgen writes CUDA C++ kernels with a model in the loop and proves them: every candidate is
    compiled with nvcc for an explicit architecture, its diagnostics are summarized and fed back,
    and every build that compiles is validated and timed on the local GPU (when there is one)."""


@main.command(epilog=EXIT_CODES)
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--arch", required=True,
              help="Target, e.g. sm_89, sm_90a (see `nvcc --list-gpu-code`).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the stable JSON record instead of text.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the cubin here.")
@click.option("--flag", "flags", multiple=True, metavar="NVCC_FLAG",
              help="Extra nvcc flag (repeatable), e.g. --flag=-maxrregcount=64.")
@click.option("--no-cache", is_flag=True, help="Always run nvcc, ignoring the compile cache.")
def compile(file: Path, arch: str, as_json: bool, output: Path | None, flags: tuple[str, ...],
            no_cache: bool) -> None:
    """Compile FILE for one architecture; print the summarized diagnostics and resources."""
    from kgen.arch import parse_arch
    from kgen.errors import UsageError
    from kgen.nvcc import compile_source

    target = parse_arch(arch)
    if not file.is_file():
        raise UsageError(f"no such file: {file}")
    result = compile_source(file.read_bytes(), target, flags=flags,
                            include_dir=file.resolve().parent, use_cache=not no_cache)
    if output is not None and result.cubin is not None:
        output.write_bytes(result.cubin)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        status = "ok" if result.ok else "failed"
        cached = ", cached" if result.cached else ""
        click.echo(f"{file}: {status} for {result.arch} ({result.seconds:.2f} s{cached}, "
                   f"isolation: {result.isolation})", err=True)
        if result.summary:
            click.echo(result.summary)
    sys.exit(0 if result.ok else 1)


def _register_gpu_commands() -> None:
    from kgen.commands_gpu import bench, doctor

    for command in (bench, doctor):
        command.epilog = EXIT_CODES
        main.add_command(command)


_register_gpu_commands()


def _model_options(func):
    """--model/--base-url/--backend/--prompt-set, shared by generate and fix."""
    options = [
        click.option("--model", "model_name", metavar="NAME",
                     help="`builtin` (offline rule-based author, the default when no endpoint is "
                          "configured) or a model name at the endpoint (env KGEN_MODEL)."),
        click.option("--base-url", metavar="URL",
                     help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 (vLLM, "
                          "SGLang, Ollama, llama.cpp). Env: KGEN_BASE_URL or OPENAI_BASE_URL; key: "
                          "OPENAI_API_KEY or KGEN_API_KEY."),
        click.option("--backend", metavar="NAME",
                     help="Model backend: builtin, openai, or one registered by a plugin."),
        click.option("--prompt-set", default="default", show_default=True,
                     help="Prompt templates to use (a folder/prefix under prompts/)."),
        click.option("--out", type=click.Path(file_okay=False, path_type=Path),
                     help="Run directory (default runs/<UTC time>-<op>-<arch>/)."),
        click.option("--resume", type=click.Path(file_okay=False, path_type=Path),
                     help="Continue the run in this directory with its saved settings; only "
                          "--model/--base-url/--backend given now replace the saved ones."),
        click.option("--no-gpu", is_flag=True, help="Compile only, even if a GPU is present."),
        click.option("--unsafe-no-sandbox", is_flag=True,
                     help="Run candidates without bubblewrap isolation (not recommended)."),
        click.option("--json", "as_json", is_flag=True,
                     help="Print one JSON summary on stdout (ok, best, attempts, validated, "
                          "run_dir)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@main.command(epilog=EXIT_CODES)
@click.option("--op", default="gemm", show_default=True,
              help="Shipped op (see reference_kernels/).")
@click.option("--op-file", type=click.Path(dir_okay=False, path_type=Path),
              help="Your own op spec (spec.yaml), instead of --op.")
@click.option("--arch", help="Target, e.g. sm_89 or sm_90a; default: the local GPU's.")
@click.option("--dtype", help="float32, float16 or bfloat16 (default: the spec's first).")
@click.option("--rounds", default=8, show_default=True, type=click.IntRange(1, 1000),
              help="Most rounds (model calls per candidate slot).")
@click.option("--candidates", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Candidates per round, all from the same prompt.")
@click.option("--patience", default=3, show_default=True, type=click.IntRange(0, 1000),
              help="Stop after this many attempts without improvement once one passed.")
@click.option("--time-budget", type=float, metavar="SECONDS", help="Stop after this wall time.")
@click.option("--token-budget", type=int, metavar="N", help="Stop after this many model tokens.")
@_model_options
def generate(op, op_file, arch, dtype, rounds, candidates, patience, time_budget, token_budget,
             **common) -> None:
    """Write a kernel for an op: ask the model, compile, feed back errors (and, on a GPU,
    correctness and speed against the library baseline), repeat. Keeps every attempt, a report
    and best.cu in the run directory."""
    from kgen.jobs import JobConfig

    config = JobConfig("generate", arch, op=None if op_file else op,
                       op_file=str(op_file) if op_file else None, dtype=dtype, rounds=rounds,
                       candidates=candidates, patience=patience, wall_seconds=time_budget,
                       tokens=token_budget)
    _run_job(config, **common)


@main.command(epilog=EXIT_CODES)
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--arch", help="Target, e.g. sm_89; default: the local GPU's.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the fixed file (default: FILE with .fixed.cu).")
@click.option("--in-place", is_flag=True, help="Overwrite FILE (a backup FILE.orig is kept).")
@click.option("--max-attempts", default=4, show_default=True, type=click.IntRange(1, 100),
              help="Most model replies to try.")
@_model_options
def fix(file, arch, output, in_place, max_attempts, **common) -> None:
    """Make FILE compile (and, when its contract names a known op and a GPU is here, pass
    validation). Never overwrites FILE unless --in-place; prints what changed. With --resume DIR,
    FILE may be left out (the run directory knows it)."""
    from kgen.errors import UsageError
    from kgen.fixout import write_fixed
    from kgen.jobs import JobConfig

    if file is None and common["resume"] is None:
        raise UsageError("kgen fix needs FILE (or --resume DIR); see kgen fix --help")
    config = JobConfig("fix", arch, input_path=str(file) if file else None, rounds=max_attempts,
                       patience=0)
    summary, config = _run_job(config, exit_after=False, **common)
    written = write_fixed(Path(str(config.input_path)), summary, output, in_place,
                          echo=lambda s: click.echo(s, err=True))
    if common["as_json"]:
        click.echo(json.dumps(summary.to_json() | {"written": written}))
    sys.exit(0 if summary.ok else 1)


def _run_job(config, model_name, base_url, backend, prompt_set, out, resume, no_gpu,
             unsafe_no_sandbox, as_json, exit_after=True):
    """Start or resume a run, drive the loop with progress on stderr, print the summary."""
    import dataclasses

    from kgen import jobs
    from kgen.loop import run_loop
    from kgen.progress import Progress

    progress = Progress()
    config = dataclasses.replace(config, backend=backend, model=model_name, base_url=base_url,
                                 prompt_set=prompt_set, no_gpu=no_gpu,
                                 unsafe_no_sandbox=unsafe_no_sandbox)
    config, model, task, checker, run_dir, history = jobs.prepare(config, out, resume)
    if resume is not None:
        progress.say(f"resuming {run_dir.path} after {len(history)} finished attempt(s)")
    if config.unsafe_no_sandbox:
        progress.say("[bold red]UNSAFE: --unsafe-no-sandbox: candidates run on the GPU without "
                     "bubblewrap isolation[/bold red]")
    progress.say(f"kgen {task.label} with {model.describe()}", markup=False)
    progress.say(f"run directory: {run_dir.path}   GPU: {checker.gpu_note}")
    for attempt in history:
        progress.attempt(attempt, jobs.Outcome(history))
    progress.working(len(history) + 1)
    try:
        outcome = run_loop(task, model, checker, run_dir, config.budget(), history,
                           config.prompt_set, progress.attempt)
    except KeyboardInterrupt:
        progress.status.stop()
        jobs.close_early(task, checker, run_dir, model, "interrupted")
        click.echo(f"kgen: interrupted; continue with: kgen {task.mode} --resume {run_dir.path}",
                   err=True)
        sys.exit(130)
    except KgenError as exc:
        progress.status.stop()
        jobs.close_early(task, checker, run_dir, model, f"stopped: {exc}")
        click.echo(f"kgen: the run directory {run_dir.path} keeps every finished attempt; "
                   f"continue with: kgen {task.mode} --resume {run_dir.path}", err=True)
        raise
    finally:
        progress.status.stop()
    summary = jobs.finish(task, checker, run_dir, outcome, model)
    _print_summary(progress, summary)
    if exit_after:
        if as_json:
            click.echo(json.dumps(summary.to_json()))
        sys.exit(0 if summary.ok else 1)
    return summary, config


def _print_summary(progress, summary) -> None:
    status = "[green]ok[/green]" if summary.ok else "[red]no candidate succeeded[/red]"
    progress.say(f"{status}: {summary.attempts} attempt(s); stopped: {summary.stop_reason}")
    if summary.best:
        extra = f" ({summary.best_ms:.3f} ms" if summary.best_ms else ""
        if summary.speedup:
            extra += f", {summary.speedup:.2f}x of baseline"
        extra += ")" if extra else ""
        validated = "validated" if summary.validated else "compiled, not validated or timed"
        progress.say(f"best: {summary.best}{extra} [{validated}]")
    progress.say(f"report: {summary.run_dir}/report.md")
