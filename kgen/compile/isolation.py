"""Compile isolation: the bubblewrap command line nvcc runs under (where bubblewrap works)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from kgen.process import bwrap_path


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for etc in ("/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d"):
        args += ["--ro-bind-try", etc, etc]
    return args


def compile_sandbox(workdir: Path, readonly: Sequence[Path]) -> list[str]:
    """bwrap prefix for a compiler: sees the system, the toolkit, `readonly` and `workdir` only."""
    bwrap = bwrap_path()
    if bwrap is None:
        return []
    # Binds after --tmpfs /tmp: a folder under /tmp bound earlier would be hidden by the tmpfs.
    extra = [arg for path in readonly for arg in ("--ro-bind", str(path), str(path))]
    return [bwrap, *_system_binds(), "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            *extra, "--bind", str(workdir), str(workdir), "--chdir", str(workdir),
            "--unshare-all", "--die-with-parent", "--new-session"]
