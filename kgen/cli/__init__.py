"""The `kgen` command: parse arguments, call one stage or a Run, print. Nothing else.

Commands live beside this module: compile_cmd (kgen compile), run_cmds (generate, fix),
gpu_cmds (bench, profile, doctor), experiment_cmd (experiment run, report), spec_cmd
(kgen spec); progress prints a run's attempts on stderr.
"""

from __future__ import annotations

import signal
import sys

import click

from kgen import __version__
from kgen.errors import KgenError, Signalled
from kgen.textsafe import terminal

EXIT_CODES = """\b
Exit codes:
  0    did its job (compiled; a candidate passed; the file was fixed)
  1    ran, but the result is a failure (compile errors; no candidate passed)
  2    bad usage: unknown option or arch, missing file, invalid spec or contract
  3    environment: no nvcc, no GPU for a GPU command, sandbox unusable
  4    model endpoint fatal: authentication, unknown model, retries exhausted
  130  interrupted (the run directory stays consistent; --resume continues it)
  143  stopped by SIGTERM (129: SIGHUP), closed as after Ctrl-C"""


class KgenGroup(click.Group):
    """Turns every KgenError (and OSError) into one clear line and its exit code."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except KgenError as exc:  # messages carry file names, server text: printed as data
            click.echo(terminal(f"kgen: error: {exc}"), err=True)
            sys.exit(exc.exit_code)
        except Signalled as exc:
            click.echo(f"kgen: stopped by {signal.Signals(exc.signum).name}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("kgen: interrupted", err=True)
            sys.exit(130)
        except OSError as exc:  # an unreadable input or unwritable output path
            where = f": {exc.filename}" if exc.filename else ""
            click.echo(terminal(f"kgen: error: {exc.strerror or exc}{where}"), err=True)
            sys.exit(2)


@click.group(cls=KgenGroup, epilog=EXIT_CODES)
@click.version_option(__version__, prog_name="kgen")
def main() -> None:
    """kgen writes CUDA C++ kernels with a model in the loop and proves them: every candidate is
    compiled with nvcc for an explicit architecture, its diagnostics are summarized and fed back,
    and every build that compiles is validated and timed on the local GPU (when there is one)."""


def _register() -> None:
    from kgen.cli.compile_cmd import compile_file
    from kgen.cli.experiment_cmd import experiment
    from kgen.cli.gpu_cmds import bench, doctor, profile_cmd
    from kgen.cli.run_cmds import fix, generate
    from kgen.cli.spec_cmd import spec

    for command in (compile_file, generate, fix, bench, profile_cmd, doctor, experiment, spec):
        command.epilog = EXIT_CODES
        main.add_command(command)


_register()
