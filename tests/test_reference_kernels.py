"""The shipped ops: every spec loads, each has at least two numbered reference kernels that obey
the launch contract for the dtype they name, say in their header what they are, how they are
launched and what speed to expect, and compile without spills for sm_80/sm_89/sm_90."""

from __future__ import annotations

import re

import pytest

from kgen.arch import parse_arch
from kgen.compile import compile_source
from kgen.loop.candidate import parse_contract
from kgen.ops import available_ops, load_op

SHIPPED = ("gemm", "bmm", "gemv", "softmax", "layernorm", "rmsnorm", "sum", "max", "argmax",
           "gelu", "silu", "bias_relu", "transpose", "cumsum", "conv2d", "attention")
SPECS = {name: load_op(name) for name in available_ops()}
KERNELS = [(name, path) for name, spec in SPECS.items() for path in spec.reference_kernels()]


def _id(item) -> str:
    return f"{item[0]}/{item[1].name}" if isinstance(item, tuple) else str(item)


def test_every_issue_op_is_shipped():
    assert set(SHIPPED) <= set(available_ops())


@pytest.mark.parametrize("name", sorted(SPECS))
def test_each_op_has_two_reference_kernels_and_float32(name):
    spec = SPECS[name]
    kernels = spec.reference_kernels()
    assert len(kernels) >= 2, name
    dtypes = {parse_contract(p.read_text(), spec)[0].dtype for p in kernels}
    assert "float32" in dtypes and dtypes <= set(spec.dtypes)
    assert any(min(spec.sizes_of(e).values()) == 1 for e in spec.test_sizes)  # a tiny case
    assert spec.bench_sizes and spec.flop_count(spec.bench_sizes[0]) >= 0


@pytest.mark.parametrize("item", KERNELS, ids=_id)
def test_contract_parses_and_header_describes_the_kernel(item):
    name, path = item
    spec = SPECS[name]
    source = path.read_text()
    contract, problems = parse_contract(source, spec)
    assert contract is not None, problems
    assert contract.op == name
    sizes = spec.test_sizes[-1]
    for launch in contract.launches:
        grid, block, smem = launch.dims(sizes)
        threads = 1
        for b in block:
            threads *= b
        assert threads <= 1024 and smem >= 0 and all(g >= 1 for g in grid)
        assert re.search(rf'extern "C" __global__ void\s+(__launch_bounds__\([^)]*\)\s*)?'
                         rf'{launch.kernel}\s*\(', source)
    header = source.split("extern", 1)[0].lower()
    assert "launch" in header and "expect" in header


@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90"])
@pytest.mark.parametrize("item", KERNELS, ids=_id)
def test_reference_kernel_compiles(item, arch):
    result = compile_source(item[1].read_text(), parse_arch(arch))
    assert result.ok, result.summary
    for usage in result.resources.values():
        assert usage.spill_stores == 0
