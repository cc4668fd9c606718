"""The worker's bubblewrap command line: the system read-only, the GPU device nodes, no network, a
private /tmp, and the Python environment the worker needs, wherever it lives."""

from __future__ import annotations

import glob
import site
import sys
from pathlib import Path

from kgen.process import bwrap_path

# kgen itself (the folder holding the kgen package), so `python -m kgen.sandbox.worker` imports.
KGEN_ROOT = Path(__file__).resolve().parent.parent.parent


def python_paths() -> list[Path]:
    """Folders the worker's interpreter reads: the prefixes, site-packages, sys.path, kgen.

    Bound again after the private /tmp is mounted, so an environment under /tmp stays visible.
    """
    found = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent,
             KGEN_ROOT]
    found += [Path(p) for p in site.getsitepackages() + [site.getusersitepackages()]]
    found += [Path(p) for p in sys.path if p]
    out: list[Path] = []
    for path in found:
        path = path.resolve()
        if path.is_dir() and path != Path("/") and path not in out:
            out.append(path)
    return out


def gpu_sandbox(workdir: Path) -> list[str]:
    """bwrap prefix for the GPU worker, or [] where bubblewrap is not usable."""
    bwrap = bwrap_path()
    if bwrap is None:
        return []
    args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev"]
    for node in sorted(glob.glob("/dev/nvidia*")):
        args += ["--dev-bind", node, node]
    args += ["--proc", "/proc", "--ro-bind", "/sys", "/sys", "--tmpfs", "/tmp"]
    for path in python_paths():
        if str(path).startswith("/tmp/") or str(path) == "/tmp":
            args += ["--ro-bind", str(path), str(path)]
    args += ["--bind", str(workdir), str(workdir), "--chdir", str(workdir),
             "--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"]
    return args
