"""`kgen compile FILE --arch sm_XX`: one compile, its summary or the stable JSON record."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from kgen.errors import require_file
from kgen.textsafe import terminal


@click.command("compile")
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
def compile_file(file: Path, arch: str, as_json: bool, output: Path | None, flags: tuple[str, ...],
            no_cache: bool) -> None:
    """Compile FILE for one architecture; print the summarized diagnostics and resources."""
    from kgen.arch import parse_arch
    from kgen.compile import compile_source

    target = parse_arch(arch)
    require_file(file)
    result = compile_source(file.read_bytes(), target, flags=flags,
                            include_dir=file.resolve().parent, use_cache=not no_cache)
    if output is not None and result.cubin is not None:
        output.write_bytes(result.cubin)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        status = "ok" if result.ok else "failed"
        cached = ", cached" if result.cached else ""
        click.echo(terminal(f"{file}: {status} for {result.arch} ({result.seconds:.2f} s"
                            f"{cached}, isolation: {result.isolation})"), err=True)
        if result.summary:
            click.echo(terminal(result.summary))  # it quotes the source: data, not commands
    sys.exit(0 if result.ok else 1)
