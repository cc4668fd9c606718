"""The `kgen` command: parse arguments, call one stage or the loop, print. Nothing else lives here."""

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
    """Turns every KgenError into one clear line and its exit code, never a traceback."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except KgenError as exc:
            click.echo(f"kgen: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("kgen: interrupted", err=True)
            sys.exit(130)


@click.group(cls=KgenGroup, epilog=EXIT_CODES)
@click.version_option(__version__, prog_name="kgen")
def main() -> None:
    """kgen writes CUDA C++ kernels with a model in the loop and proves them: every candidate is
    compiled with nvcc for an explicit architecture, its diagnostics are summarized and fed back,
    and every build that compiles is validated and timed on the local GPU (when there is one)."""


@main.command(epilog=EXIT_CODES)
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--arch", required=True, help="Target, e.g. sm_89, sm_90a (see `nvcc --list-gpu-code`).")
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON record instead of text.")
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
