"""On a GPU, through kgen's real evaluation path (compile, sandboxed worker, validation, timing):
every reference kernel of every shipped op passes; the fastest float32 kernel of each op is timed
at its first bench size against the op's baseline; torch.compile is timed where asked."""

from __future__ import annotations

import pytest
from helpers import gpu_workers

from kgen.arch import local_gpu
from kgen.compile import compile_source
from kgen.gpu.evaluate import EvalOptions, evaluate
from kgen.loop.candidate import parse_contract
from kgen.ops import available_ops, load_op

pytestmark = pytest.mark.gpu

SPECS = {name: load_op(name) for name in available_ops()}
KERNELS = [(name, path) for name, spec in SPECS.items() for path in spec.reference_kernels()]
VALIDATE = EvalOptions(bench_sizes=(), kernel_timeout_s=20.0, timeout_s=300.0, input_sets=1)


def _evaluate(spec, path, options):
    found = local_gpu()
    assert found is not None
    source = path.read_text()
    contract, problems = parse_contract(source, spec)
    assert contract is not None, problems
    compiled = compile_source(source, found[1])
    assert compiled.ok, compiled.summary
    result = evaluate(compiled, contract, spec, found[1], options=options,
                      workers=gpu_workers())
    assert result is not None
    print(f"{spec.name}/{path.name}: {result.verdict}: {result.message}\n{result.describe()}")
    return result


def _fastest_float32(spec):
    """The highest-numbered float32 reference kernel (the tuned one)."""
    mine = [p for p in spec.reference_kernels()
            if parse_contract(p.read_text(), spec)[0].dtype == "float32"]
    return mine[-1]


@pytest.mark.parametrize("item", KERNELS, ids=lambda i: f"{i[0]}/{i[1].name}")
def test_every_reference_kernel_passes(item):
    name, path = item
    result = _evaluate(SPECS[name], path, VALIDATE)
    assert result.verdict == "pass", result.message


@pytest.mark.parametrize("name", sorted(SPECS))
def test_each_op_is_timed_against_its_baseline(name):
    spec = SPECS[name]
    options = EvalOptions(bench_sizes=spec.bench_sizes[:1], bench_budget_s=0.2, input_sets=1,
                          kernel_timeout_s=20.0)
    result = _evaluate(spec, _fastest_float32(spec), options)
    assert result.verdict == "pass", result.message
    (timing,) = result.timings
    assert timing.baseline_ms and timing.baseline_ms > 0 and timing.ms > 0
    assert timing.bound in ("memory", "compute")
    assert 0 < timing.roofline_fraction < 1.2
    assert timing.compiled_ms is None  # not asked for


def test_torch_compile_is_timed_when_asked():
    spec = SPECS["softmax"]
    options = EvalOptions(bench_sizes=spec.bench_sizes[:1], bench_budget_s=0.2, input_sets=1,
                          compile_baseline=True)
    result = _evaluate(spec, _fastest_float32(spec), options)
    assert result.verdict == "pass", result.message
    (timing,) = result.timings
    failed = [c for c in result.checks if "torch.compile of the baseline failed" in c]
    assert (timing.compiled_ms or 0) > 0 or failed, result.checks
    assert "torch.compile" in result.describe() or failed
