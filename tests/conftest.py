"""Markers decided once: `nvcc` tests run where nvcc exists (CI has it), `gpu` where a GPU does."""

from __future__ import annotations

import shutil

import pytest

from kgen.arch import local_gpu

HAVE_NVCC = shutil.which("nvcc") is not None
HAVE_GPU = local_gpu() is not None


def pytest_collection_modifyitems(config, items):
    skip_nvcc = pytest.mark.skip(reason="nvcc not on PATH")
    skip_gpu = pytest.mark.skip(reason="no CUDA GPU on this machine")
    for item in items:
        if "nvcc" in item.keywords and not HAVE_NVCC:
            item.add_marker(skip_nvcc)
        if "gpu" in item.keywords and not HAVE_GPU:
            item.add_marker(skip_gpu)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Each test session compiles into its own cache, so cache tests see what they expect."""
    monkeypatch.setenv("KGEN_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kgen-cache"))


@pytest.fixture(scope="session", autouse=True)
def _gpu_workers_closed_at_the_end():
    """The GPU tests share one warm pool (tests/helpers.gpu_workers); close it when they end."""
    yield
    from helpers import close_gpu_workers

    close_gpu_workers()
