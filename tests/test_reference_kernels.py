"""The reference gemm kernels: each compiles for sm_80/sm_89/sm_90, obeys the launch contract for
the dtype it names, and says in its header what it is, how it is launched and what speed to
expect."""

from __future__ import annotations

import pytest

from kgen.arch import parse_arch
from kgen.compile import compile_source
from kgen.loop.candidate import parse_contract
from kgen.ops import load_op

SPEC = load_op("gemm")
KERNELS = SPEC.reference_kernels()


def test_the_expected_reference_kernels_exist():
    names = {p.name for p in KERNELS}
    assert {"01_naive.cu", "02_smem_tiled.cu", "01_naive_f16.cu", "01_naive_bf16.cu"} <= names
    dtypes = {parse_contract(p.read_text(), SPEC)[0].dtype for p in KERNELS}
    assert dtypes == {"float32", "float16", "bfloat16"}


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.name)
def test_contract_parses_and_header_describes_the_kernel(path):
    source = path.read_text()
    contract, problems = parse_contract(source, SPEC)
    assert contract is not None, problems
    assert contract.op == "gemm"
    (launch,) = contract.launches
    assert launch.args == ("A", "B", "C", "M", "N", "K")
    grid, block, smem = launch.dims({"M": 127, "N": 129, "K": 65})
    threads = 1
    for b in block:
        threads *= b
    assert threads <= 1024 and smem == 0 and all(g >= 1 for g in grid)
    header = source.split("extern", 1)[0].lower()
    assert "launch" in header and "expect" in header and "tflop/s" in header
    assert f'extern "C" __global__ void {launch.kernel}(' in source


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90"])
@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.name)
def test_reference_kernel_compiles(path, arch):
    result = compile_source(path.read_text(), parse_arch(arch))
    assert result.ok, result.summary
    (usage,) = result.resources.values()
    assert usage.spill_stores == 0
