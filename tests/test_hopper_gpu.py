"""On a Hopper GPU: a TMA copy kernel (tensor-map argument built by kgen) and a cluster kernel
(launched with cuLaunchKernelEx) pass through the real worker; without the cluster the latter
fails, so the cluster launch is what made it pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import gpu_workers, local_hopper

from kgen.compile import compile_source
from kgen.gpu.evaluate import EvalOptions, evaluate
from kgen.loop.candidate import parse_contract
from kgen.ops import load_op

pytestmark = pytest.mark.gpu

DATA = Path(__file__).parent / "data"
COPY = load_op(path=DATA / "specs" / "copy2d" / "spec.yaml")
OPTIONS = EvalOptions(bench_sizes=(), kernel_timeout_s=5.0, timeout_s=120.0)


def _evaluate(source: str):
    arch = local_hopper()
    contract, problems = parse_contract(source, COPY)
    assert contract is not None, problems
    compiled = compile_source(source, arch)
    assert compiled.ok, compiled.summary
    result = evaluate(compiled, contract, COPY, arch, options=OPTIONS, workers=gpu_workers())
    assert result is not None
    return result


def test_a_tma_copy_kernel_gets_its_tensor_map_and_passes():
    result = _evaluate((DATA / "hopper" / "tma_copy.cu").read_text())
    assert result.verdict == "pass", result.message


def test_a_cluster_kernel_passes_only_when_launched_as_clusters():
    source = (DATA / "hopper" / "cluster_copy.cu").read_text()
    result = _evaluate(source)
    assert result.verdict == "pass", result.message
    plain = _evaluate(source.replace(" cluster=(2, 1, 1)", ""))
    assert plain.verdict != "pass"
