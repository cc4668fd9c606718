"""`kgen spec SOURCE`: the op spec kgen derived, as YAML, to read or to save and edit."""

from __future__ import annotations

import click


@click.command("spec")
@click.argument("source")
def spec(source: str) -> None:
    """Print the op spec kgen derives from SOURCE as YAML: a shipped op's name (gemm), a
    spec.yaml, or a KernelBench problem file (problem.py). Saved to a file, it loads back with
    --op-file. A line on stderr says whether the builtin author can write the op."""
    from kgen.author.families import family_for, why_not
    from kgen.ops import spec_from, spec_yaml

    op = spec_from(source)
    click.echo(spec_yaml(op), nl=False)
    family = family_for(op)  # on stderr, so that `kgen spec X > spec.yaml` keeps only the spec
    if family is not None:
        click.echo(f"kgen spec: the builtin author writes {op.name} with its {family.name} "
                   "template", err=True)
    else:
        click.echo(f"kgen spec: {why_not(op)}; an LLM endpoint can write it (--model NAME "
                   "--base-url URL)", err=True)
