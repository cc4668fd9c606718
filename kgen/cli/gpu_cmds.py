"""The GPU commands: `kgen bench FILE.cu`, `kgen profile FILE.cu` and `kgen doctor`."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import click

from kgen.cli.run_cmds import with_check_options
from kgen.errors import EnvironmentProblem, UsageError, require_file
from kgen.textsafe import terminal

UNSAFE_WARNING = ("kgen: WARNING: --unsafe-no-sandbox: the kernel's worker runs WITHOUT "
                  "bubblewrap (it can reach the network and write your files)")


def _load_spec(source: str, op: str | None, op_file: Path | None,
               kernelbench: Path | None = None):
    from kgen.loop.candidate import parse_contract
    from kgen.ops import load_op
    from kgen.ops.kernelbench import load_problem

    if kernelbench is not None:
        return load_problem(kernelbench)
    if op_file is not None:
        return load_op(path=op_file)
    if op is None:
        bare, _ = parse_contract(source, None)
        op = bare.op if bare is not None and bare.op else None
    if not op:
        raise UsageError("the file's contract names no op (`// kgen: op=gemm dtype=...`); "
                         "pass --op or --op-file")
    return load_op(op)


def _contract(source: str, spec, dtype: str | None, file: Path):
    from kgen.loop.candidate import parse_contract

    contract, problems = parse_contract(source, spec)
    if contract is None:
        lines = "; ".join(f"line {p.line}: {p.message}" if p.line else p.message
                          for p in problems)
        raise UsageError(f"{file}: {lines}")
    if dtype is not None and dtype != contract.dtype:
        raise UsageError(f"--dtype {dtype} but {file} is written for dtype={contract.dtype} "
                         "(a kernel's dtype is fixed by its source)")
    return contract


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--op", help="Op name (default: the file's `// kgen: op=`).")
@click.option("--op-file", type=click.Path(dir_okay=False, path_type=Path),
              help="Your own op spec (spec.yaml).")
@click.option("--kernelbench", type=click.Path(dir_okay=False, path_type=Path),
              help="A KernelBench problem file: validate against its Model, time against torch "
                   "eager and torch.compile.")
@click.option("--dtype", help="Check that the file is for this dtype (its contract decides).")
@click.option("--arch", help="Compile for this target (default: the local GPU's).")
@click.option("--quick", is_flag=True, help="Time only the first benchmark size, briefly.")
@click.option("--compile-baseline/--no-compile-baseline", default=None,
              help="Also time torch.compile of the baseline (default: on for --kernelbench).")
@click.option("--seed", type=int, help="Fixed input seed (default: fresh random inputs).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
@click.option("--unsafe-no-sandbox", is_flag=True, help="Run the worker without bubblewrap.")
@with_check_options
def bench(file: Path, op: str | None, op_file: Path | None, kernelbench: Path | None,
          dtype: str | None, arch: str | None, quick: bool, compile_baseline: bool | None,
          seed: int | None, as_json: bool, unsafe_no_sandbox: bool, profile: bool,
          sanitize: bool) -> None:
    """Validate and time FILE (a .cu with a `// kgen:` contract) against the library baseline
    (and torch.compile of it, with --compile-baseline)."""
    from kgen.gpu.evaluate import EvalOptions, evaluate

    source, spec, contract, target, compiled = _prepare(
        file, op, op_file, dtype, arch, unsafe_no_sandbox,
        "kgen bench needs one to validate and time", kernelbench)
    if compile_baseline is None:
        compile_baseline = kernelbench is not None
    brief = EvalOptions(bench_sizes=spec.bench_sizes[:1], bench_budget_s=0.5)
    options = replace(brief if quick else EvalOptions(), seed=seed,
                      unsafe_no_sandbox=unsafe_no_sandbox, profile=profile, sanitize=sanitize,
                      compile_baseline=compile_baseline)
    result = evaluate(compiled, contract, spec, target, options=options)
    if result is None:
        raise EnvironmentProblem("the GPU could not run this build")
    _print(result, file, target.name, as_json, source)
    sys.exit(0 if result.passed else 1)


@click.command("profile")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--op", help="Op name (default: the file's `// kgen: op=`).")
@click.option("--op-file", type=click.Path(dir_okay=False, path_type=Path),
              help="Your own op spec (spec.yaml).")
@click.option("--dtype", help="Check that the file is for this dtype (its contract decides).")
@click.option("--arch", help="Compile for this target (default: the local GPU's).")
@click.option("--seed", type=int, help="Fixed input seed (default: fresh random inputs).")
@click.option("--json", "as_json", is_flag=True, help="Print the profile record as JSON.")
@click.option("--unsafe-no-sandbox", is_flag=True, help="Run the worker without bubblewrap.")
def profile_cmd(file: Path, op: str | None, op_file: Path | None, dtype: str | None,
                arch: str | None, seed: int | None, as_json: bool,
                unsafe_no_sandbox: bool) -> None:
    """Profile FILE once with Nsight Compute at its op's first bench size (no validation): the
    summary the model gets — speed of light, caches, occupancy, bank conflicts, stalls, and a
    bottleneck class with its evidence."""
    from kgen.gpu.evaluate import EvalOptions, profile_only

    _, spec, contract, target, compiled = _prepare(
        file, op, op_file, dtype, arch, unsafe_no_sandbox,
        "kgen profile needs one to run Nsight Compute on")
    options = EvalOptions(seed=seed, unsafe_no_sandbox=unsafe_no_sandbox)
    found = profile_only(compiled, contract, spec, target, options=options)
    if found is None:
        raise EnvironmentProblem("the GPU could not run this build")
    if found.unavailable:
        raise EnvironmentProblem(found.error)
    if as_json:
        click.echo(json.dumps({"file": str(file), "arch": target.name, **found.to_json()},
                              indent=2))
    else:
        click.echo(found.describe())
    sys.exit(1 if found.error else 0)


def _prepare(file: Path, op: str | None, op_file: Path | None, dtype: str | None,
             arch: str | None, unsafe: bool, gpu_need: str, kernelbench: Path | None = None):
    """(source, spec, contract, target, compiled) for a GPU command; exits 1 if it does not
    compile, 3 without a GPU that can run it (`gpu_need` says which command needs one, for what)."""
    from kgen.compile import compile_source

    require_file(file)
    source = file.read_text(errors="replace")
    spec = _load_spec(source, op, op_file, kernelbench)
    contract = _contract(source, spec, dtype, file)
    target, embed_ptx = _target(arch, gpu_need)
    if unsafe:
        click.echo(UNSAFE_WARNING, err=True)
    compiled = compile_source(source, target, include_dir=file.resolve().parent,
                              embed_ptx=embed_ptx)
    if not compiled.ok:
        click.echo(terminal(f"{file}: does not compile for {target.name}\n{compiled.summary}"),
                   err=True)
        sys.exit(1)
    _check_launches(contract, spec, target, compiled, file)
    return source, spec, contract, target, compiled


def _check_launches(contract, spec, target, compiled, file: Path) -> None:
    """An impossible launch (negative grid, too much shared memory) never reaches the GPU."""
    from kgen.loop.geometry import launch_problems

    problems = launch_problems(contract, spec, target, compiled.resources)
    if problems:
        raise UsageError(f"{file}: " + "; ".join(f"line {p.line}: {p.message}" for p in problems))


def _target(arch: str | None, gpu_need: str):
    """(target arch, embed PTX?) for the local GPU; EnvironmentProblem when it cannot run."""
    from kgen.arch import local_gpu, parse_arch
    from kgen.gpu.evaluate import plan

    found = local_gpu()
    if found is None:
        raise EnvironmentProblem(f"no CUDA GPU here: {gpu_need} (kgen compile works without)")
    target = parse_arch(arch) if arch else found[1]
    how = plan(target)
    if not how.runnable:
        raise EnvironmentProblem(how.message)
    if how.message:
        click.echo(f"kgen: note: {how.message}", err=True)
    return target, how.embed_ptx


def _print(result, file: Path, arch: str, as_json: bool, source: str) -> None:
    if as_json:
        click.echo(json.dumps({"file": str(file), "arch": arch, **result.to_json()}, indent=2))
        return
    click.echo(terminal(f"{file}: {result.verdict} on {result.device} ({result.seconds:.1f} s)"),
               err=True)
    click.echo(terminal(result.describe(source)))
    for check in result.checks:
        click.echo(terminal(f"check  {check}"))


@click.command()
@click.option("--binary", type=click.Path(dir_okay=False, path_type=Path),
              help="Say which SASS/PTX archs a cubin, fatbin or shared library holds.")
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON on stdout.")
@click.option("--unsafe-no-sandbox", is_flag=True, help="Try the GPU worker without bubblewrap.")
def doctor(binary: Path | None, as_json: bool, unsafe_no_sandbox: bool) -> None:
    """Report the GPU, driver, nvcc, torch/cupy, isolation, profilers and model endpoint."""
    from kgen import doctor as checks_module

    if binary is not None:
        require_file(binary)
        checks = checks_module.check_binary(binary)
    else:
        checks = checks_module.run_checks(unsafe=unsafe_no_sandbox)
    if as_json:
        click.echo(json.dumps([c.to_json() for c in checks], indent=2))
    else:
        click.echo(terminal(checks_module.render(checks)))  # served names, paths: data
    failed = any(c.status == checks_module.FAIL for c in checks)
    sys.exit(1 if failed else 0)
