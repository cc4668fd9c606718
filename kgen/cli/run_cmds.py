"""`kgen generate` and `kgen fix`: options into a RunConfig, a Run started or resumed, progress and
the summary printed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from kgen.errors import KgenError, UsageError
from kgen.textsafe import terminal


def with_check_options(func):
    """--profile/--no-profile and --sanitize/--no-sanitize (generate, fix, bench)."""
    for option in reversed(_check_options()):
        func = option(func)
    return func


def _check_options() -> list:
    return [
        click.option("--profile/--no-profile", default=True, show_default=True,
                     help="Profile each passing candidate once with Nsight Compute (ncu) and "
                          "feed the summary back, where ncu works."),
        click.option("--sanitize/--no-sanitize", default=True, show_default=True,
                     help="Re-run a wrong or crashing candidate under compute-sanitizer at its "
                          "smallest failing size and feed the findings back."),
    ]


def _model_options(func):
    """--model/--base-url/--backend/--prompt-set and the run options generate and fix share."""
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
        click.option("--prompt-set", metavar="NAME|DIR",
                     help="Prompt templates to use: a set shipped under prompts/ or a folder "
                          "(default: default). With --resume, only shipped sets are taken from "
                          "the run directory; name any other folder again here."),
        click.option("--out", type=click.Path(file_okay=False, path_type=Path),
                     help="Run directory (default runs/<UTC time>-<op>-<arch>/)."),
        click.option("--resume", type=click.Path(file_okay=False, path_type=Path),
                     help="Continue the run in this directory with its saved settings; "
                          "--model/--base-url/--backend/--prompt-set given now replace the "
                          "saved ones. Your API key goes only to an endpoint you name now."),
        click.option("--skip-corrupt", is_flag=True,
                     help="With --resume: set aside corrupt lines of results.jsonl (kept in "
                          "results.corrupt.jsonl) instead of refusing to resume."),
        click.option("--no-gpu", is_flag=True, help="Compile only, even if a GPU is present."),
        click.option("--unsafe-no-sandbox", is_flag=True,
                     help="Run candidates without bubblewrap isolation (not recommended)."),
        click.option("--fresh-workers", is_flag=True,
                     help="A new GPU worker for every candidate (slower; the default keeps one "
                          "warm worker per GPU serving candidate after candidate)."),
        *_check_options(),
        click.option("--compile-baseline/--no-compile-baseline", default=True,
                     show_default=True,
                     help="For a KernelBench problem: time the best kernel once more at the end "
                          "against torch.compile of Model as well as torch eager (compiling the "
                          "model takes a while)."),
        click.option("--json", "as_json", is_flag=True,
                     help="Print one JSON summary on stdout (ok, best, attempts, validated, "
                          "run_dir)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@click.command()
@click.option("--op", default="gemm", show_default=True,
              help="Shipped op (see reference_kernels/).")
@click.option("--op-file", type=click.Path(dir_okay=False, path_type=Path),
              help="Your own op spec (spec.yaml), instead of --op. With --resume, name the "
                   "run's own file again (run.json alone cannot).")
@click.option("--kernelbench", type=click.Path(dir_okay=False, path_type=Path),
              help="A KernelBench problem file (class Model, get_inputs, get_init_inputs), "
                   "instead of --op; the run also writes model_new.py. With --resume, name the "
                   "run's own file again.")
@click.option("--arch", help="Target, e.g. sm_89 or sm_90a; default: the local GPU's.")
@click.option("--dtype", help="float32, float16 or bfloat16 (default: the spec's first).")
@click.option("--rounds", default=8, show_default=True, type=click.IntRange(1, 1000),
              help="Most rounds (model calls per candidate slot).")
@click.option("--candidates", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Candidates per round, all from the same prompt; asked, compiled and "
                   "judged concurrently (one worker per GPU).")
@click.option("--patience", default=3, show_default=True, type=click.IntRange(0, 1000),
              help="Stop after this many attempts without improvement once one passed.")
@click.option("--time-budget", type=float, metavar="SECONDS", help="Stop after this wall time.")
@click.option("--token-budget", type=int, metavar="N", help="Stop after this many model tokens.")
@_model_options
def generate(op, op_file, kernelbench, arch, dtype, rounds, candidates, patience, time_budget,
             token_budget, **common) -> None:
    """Write a kernel for an op: ask the model, compile, feed back errors (and, on a GPU,
    correctness and speed against the library baseline), repeat. Keeps every attempt, a report
    and best.cu in the run directory (and model_new.py for a KernelBench problem)."""
    from kgen.loop.session import RunConfig

    if op_file and kernelbench:
        raise UsageError("give --op-file or --kernelbench, not both")
    config = RunConfig("generate", arch, op=None if op_file or kernelbench else op,
                       op_file=str(op_file) if op_file else None,
                       kernelbench=str(kernelbench) if kernelbench else None, dtype=dtype,
                       rounds=rounds,
                       candidates=candidates, patience=patience, wall_seconds=time_budget,
                       tokens=token_budget)
    summary, _ = _run(config, **common)
    if common["as_json"]:
        click.echo(json.dumps(summary.to_json()))
    sys.exit(0 if summary.ok else 1)


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--arch", help="Target, e.g. sm_89; default: the local GPU's.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the fixed file (default: FILE with .fixed.cu).")
@click.option("--in-place", is_flag=True, help="Overwrite FILE (a backup FILE.orig is kept).")
@click.option("--max-attempts", default=4, show_default=True, type=click.IntRange(1, 100),
              help="Most model replies to try.")
@click.option("--kernelbench", type=click.Path(dir_okay=False, path_type=Path),
              help="The KernelBench problem FILE is a kernel for (validated against its Model);"
                   " with --resume, the run's own file named again.")
@_model_options
def fix(file, arch, output, in_place, max_attempts, kernelbench, **common) -> None:
    """Make FILE compile (and, when its contract names a known op and a GPU is here, pass
    validation). Never overwrites FILE unless --in-place; prints what changed. With --resume DIR,
    FILE may be left out (the run directory knows it)."""
    from kgen.loop.fixout import write_fixed
    from kgen.loop.session import RunConfig

    if file is None and common["resume"] is None:
        raise UsageError("kgen fix needs FILE (or --resume DIR); see kgen fix --help")
    config = RunConfig("fix", arch, input_path=str(file) if file else None, rounds=max_attempts,
                       patience=0, kernelbench=str(kernelbench) if kernelbench else None)
    summary, run = _run(config, **common)
    written = write_fixed(Path(str(run.config.input_path)), summary, output, in_place,
                          echo=lambda s: click.echo(terminal(s), err=True))
    if common["as_json"]:
        click.echo(json.dumps(summary.to_json() | {"written": written}))
    sys.exit(0 if summary.ok else 1)


def _run(config, model_name, base_url, backend, prompt_set, out, resume, skip_corrupt, no_gpu,
         unsafe_no_sandbox, fresh_workers, as_json, profile, sanitize, compile_baseline):
    """Start or resume the run, execute it with progress on stderr, print the summary."""
    import dataclasses

    from kgen.cli.progress import Progress
    from kgen.loop.session import ResumeOptions, Run

    progress = Progress()
    if resume is not None:
        run = Run.resume(resume, ResumeOptions(backend, model_name, base_url, prompt_set,
                                               unsafe_no_sandbox, skip_corrupt, config.op_file,
                                               config.kernelbench))
        for notice in run.run_dir.notices:
            progress.say(f"note: {notice}", markup=False)
        progress.say(f"resuming {run.run_dir.path} after {len(run.history)} finished attempt(s)",
                     markup=False)
    else:
        config = dataclasses.replace(config, backend=backend, model=model_name,
                                     base_url=base_url, prompt_set=prompt_set or "default",
                                     no_gpu=no_gpu, unsafe_no_sandbox=unsafe_no_sandbox,
                                     fresh_workers=fresh_workers, profile=profile,
                                     sanitize=sanitize, compile_baseline=compile_baseline)
        run = Run.start(config, out)
    progress.header(run)
    try:
        summary = run.execute(progress.attempt)
    except (KeyboardInterrupt, KgenError):
        progress.stop()
        click.echo(terminal(f"kgen: the run directory {run.run_dir.path} keeps every finished "
                            f"attempt; continue with: {run.resume_command}"), err=True)
        raise
    progress.summary(summary)
    return summary, run
