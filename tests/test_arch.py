"""Architecture names: parsing, validation against the installed nvcc, and what runs where."""

from __future__ import annotations

import pytest

from kgen import arch as arch_module
from kgen.arch import Arch, can_run_on, local_gpu, parse_arch
from kgen.errors import UsageError

VALID = ["sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a",
         "sm_103", "sm_110", "sm_120", "sm_121"]


@pytest.mark.nvcc
@pytest.mark.parametrize("name", VALID)
def test_supported_archs_parse_as_written(name):
    parsed = parse_arch(name)
    assert parsed.name == name
    assert parsed.compute == name.replace("sm_", "compute_")
    assert parsed.facts.max_smem_per_block >= 64 * 1024


@pytest.mark.nvcc
@pytest.mark.parametrize("name", ["sm_42", "sm_90x", "89", "sm_80a", "compute_89", "sm_8", ""])
def test_bad_archs_are_rejected_naming_the_supported_ones(name):
    with pytest.raises(UsageError) as caught:
        parse_arch(name)
    message = str(caught.value)
    assert "sm_75" in message and "sm_90" in message and "sm_120" in message


@pytest.mark.nvcc
def test_supported_archs_come_from_nvcc_in_order():
    found = arch_module.supported_archs()
    assert found[0] == "sm_75" and "sm_89" in found and "sm_121" in found
    numbers = [int(a[3:]) for a in found]
    assert numbers == sorted(numbers)


def test_parse_without_nvcc_uses_the_fact_table():
    assert parse_arch("sm_89", check_nvcc=False).capability == (8, 9)
    with pytest.raises(UsageError):
        parse_arch("sm_99", check_nvcc=False)


def test_gencode_embeds_ptx_only_when_asked():
    sm90a = parse_arch("sm_90a", check_nvcc=False)
    assert sm90a.gencode() == "arch=compute_90a,code=sm_90a"
    assert sm90a.gencode(embed_ptx=True) == "arch=compute_90a,code=[sm_90a,compute_90a]"
    assert sm90a.facts.wgmma and not parse_arch("sm_75", check_nvcc=False).facts.cp_async


def _a(name: str) -> Arch:
    return parse_arch(name, check_nvcc=False)


@pytest.mark.parametrize(("target", "local", "expected"), [
    ("sm_90", "sm_90", "native"),
    ("sm_90a", "sm_90", "native"),
    ("sm_80", "sm_86", "native"),  # same major, later minor: the SASS loads
    ("sm_86", "sm_80", "no"),
    ("sm_89", "sm_90", "ptx"),  # the H200 runs an sm_89 build only through embedded PTX
    ("sm_75", "sm_120", "ptx"),
    ("sm_90a", "sm_100", "no"),  # arch-specific code never moves
    ("sm_100a", "sm_103", "no"),
    ("sm_100", "sm_90", "no"),
])
def test_can_run_on(target, local, expected):
    assert can_run_on(_a(target), _a(local)) == expected


@pytest.fixture
def fresh_gpu_query():
    """local_gpu() is cached per process (the GPU does not change during a run)."""
    local_gpu.cache_clear()
    yield
    local_gpu.cache_clear()


@pytest.mark.usefixtures("fresh_gpu_query")
def test_local_gpu_reads_nvidia_smi(tmp_path, monkeypatch):
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho 'NVIDIA H200, 9.0'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    name, found = local_gpu()
    assert name == "NVIDIA H200" and found == Arch("sm_90", 90, "")


@pytest.mark.usefixtures("fresh_gpu_query")
@pytest.mark.parametrize("script", [None, "echo 'No devices were found' >&2\nexit 6",
                                    "echo 'NVIDIA H200, [N/A]'"])
def test_local_gpu_is_none_without_nvidia_smi_or_devices(tmp_path, monkeypatch, script):
    monkeypatch.setenv("PATH", str(tmp_path))
    if script is not None:
        fake = tmp_path / "nvidia-smi"
        fake.write_text(f"#!/bin/sh\n{script}\n")
        fake.chmod(0o755)
    assert local_gpu() is None
