"""Shared test helpers: kernels from tests/data, replies as a model writes them."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).parent / "data"


def kernel(name: str) -> str:
    """A kernel source from tests/data/kernels/ (fixtures are files, not strings)."""
    return (DATA / "kernels" / name).read_text()


def fenced(code: str, preface: str = "Here is the kernel.") -> str:
    """A model reply carrying `code` in a cuda block."""
    return f"{preface}\n\n```cuda\n{code}```\n"


def local_hopper():
    """The local GPU's arch (sm_90 or newer), or a skip where there is none."""
    import pytest

    from kgen.arch import local_gpu, parse_arch

    found = local_gpu()
    if found is None or found[1].major_minor < 90:
        pytest.skip("needs an sm_90 or newer GPU")
    return parse_arch(f"sm_{found[1].major_minor}")


_POOL = None


def gpu_workers():
    """One warm worker pool for the GPU tests of a session (torch imported and the GPU peaks
    measured once, as `kgen generate` does), started on first use; closed by conftest."""
    global _POOL
    if _POOL is None:
        from kgen.gpu.pool import WorkerPool

        _POOL = WorkerPool.local()
    return _POOL


def close_gpu_workers() -> None:
    global _POOL
    if _POOL is not None:
        _POOL.close()
        _POOL = None


def builtin_best_offline(problem: Path, out: Path) -> str:
    """`kgen generate --kernelbench PROBLEM --no-gpu` with the builtin author, one round, for
    sm_90: the kept (compiled, not validated) kernel's source."""
    import json

    from click.testing import CliRunner

    from kgen.cli import main

    result = CliRunner().invoke(main, [
        "generate", "--kernelbench", str(problem), "--arch", "sm_90", "--no-gpu", "--rounds", "1",
        "--out", str(out), "--json"], env={"KGEN_MODEL": ""})
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["ok"] and not summary["validated"]
    return Path(summary["best"]).read_text()
