"""The CUDA toolkit on this machine: where nvcc is, its version, its root, the archs it builds.

The one place that looks nvcc up; the compile stage, `kgen.arch` and `kgen doctor` ask here.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from kgen.errors import EnvironmentProblem


@functools.cache
def nvcc_path() -> Path:
    """The nvcc on PATH, or EnvironmentProblem."""
    found = shutil.which("nvcc")
    if found is None:
        raise EnvironmentProblem("nvcc not found on PATH; install the CUDA toolkit and put its "
                                 "bin/ folder on PATH")
    return Path(found)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([str(nvcc_path()), *args], capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentProblem(f"nvcc {' '.join(args)} failed to run: {exc}") from exc


@functools.cache
def nvcc_version() -> str:
    """The last line of `nvcc --version` (part of every compile cache key)."""
    lines = _run("--version").stdout.strip().splitlines()
    return lines[-1] if lines else "unknown"


@functools.cache
def nvcc_release() -> str:
    """`13.0` style release number, or "" when nvcc does not say."""
    m = re.search(r"release (\d+\.\d+)", _run("--version").stdout)
    return m.group(1) if m else ""


@functools.cache
def cuda_root() -> Path:
    """The toolkit folder, as nvcc itself reports it (PATH may hold only a wrapper script)."""
    out = _run("-dryrun", "-cubin", "-arch=sm_75", "-x", "cu", os.devnull)
    m = re.search(r"^#\$ TOP=(\S+)", out.stderr, re.MULTILINE)
    return Path(m.group(1)).resolve() if m else nvcc_path().resolve().parent.parent


@functools.cache
def gpu_codes() -> tuple[str, ...]:
    """Every `sm_XX[a|f]` code the installed nvcc lists (`nvcc --list-gpu-code`)."""
    return tuple(c for c in _run("--list-gpu-code").stdout.split() if c.startswith("sm_"))


def tool(name: str) -> Path | None:
    """A toolkit binary (ncu, compute-sanitizer, cuobjdump): the one `KGEN_<NAME>` names (e.g.
    KGEN_COMPUTE_SANITIZER), else on PATH, else beside nvcc, else from NVIDIA's pip wheels.

    The variable is how a newer tool is chosen, such as the compute-sanitizer 2025.4 of
    `pip install nvidia-cuda-sanitizer-api` (its initcheck sees shared memory). The wheels come
    last because such a tool can be newer than the driver: on the H200 with driver 580 (CUDA
    13.0), that compute-sanitizer did not start its target."""
    override = os.environ.get(env_name(name))
    if override:
        return Path(override) if _executable(Path(override)) else None
    found = shutil.which(name)
    if found:
        return Path(found)
    try:
        root = cuda_root()
    except EnvironmentProblem:
        return _from_wheels(name)
    for candidate in (root / "bin" / name, nvcc_path().resolve().parent / name):
        if _executable(candidate):
            return candidate
    return _from_wheels(name)


def env_name(name: str) -> str:
    """The variable that names a tool: compute-sanitizer -> KGEN_COMPUTE_SANITIZER."""
    return "KGEN_" + re.sub(r"\W", "_", name).upper()


def missing(name: str) -> str:
    """Why `tool(name)` found nothing, in one line that starts with the tool's name."""
    env = env_name(name)
    if os.environ.get(env):
        return f"{name}: {env}={os.environ[env]} is not an executable file"
    return f"{name} not found on PATH, beside nvcc or in NVIDIA's pip wheels ({env} can name one)"


def _from_wheels(name: str) -> Path | None:
    """`nvidia/cu*/bin/NAME` under any sys.path folder, the newest CUDA first. (Not through the
    `nvidia` package: some images ship it as a regular package that hides the other folders.)"""
    for folder in sys.path:
        for candidate in sorted(Path(folder or ".").glob(f"nvidia/cu*/bin/{name}"), reverse=True):
            if _executable(candidate):
                return candidate
    return None


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)
