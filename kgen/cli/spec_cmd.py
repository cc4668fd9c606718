"""`kgen spec SOURCE`: the op spec kgen derived, as YAML, to read or to save and edit."""

from __future__ import annotations

import click


@click.command("spec")
@click.argument("source")
def spec(source: str) -> None:
    """Print the op spec kgen derives from SOURCE as YAML: a shipped op's name (gemm), a
    spec.yaml, or a KernelBench problem file (problem.py). Saved to a file, it loads back with
    --op-file."""
    from kgen.ops import spec_from, spec_yaml

    click.echo(spec_yaml(spec_from(source)), nl=False)
