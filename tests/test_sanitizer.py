"""compute-sanitizer output -> Findings without a GPU: recorded memcheck, racecheck and initcheck
reports (their documented text format) mapped to source lines and to the worker's buffers, and the
sanitizer check's tool order, retry and error handling with a stand-in for the wrapped worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgen.contract import Contract, Launch
from kgen.findings import SanitizerReport
from kgen.gpu import sanitizer, sanlog, wrapped
from kgen.ops import load_op
from kgen.wire import EvalRequest

DATA = Path(__file__).parent / "data" / "sanitizer"
CHEATS = Path(__file__).parent / "data" / "cheats"
SPEC = load_op("gemm")
# The worker's layout at M=7 N=3 K=5 float32: exact allocations, 256-byte aligned.
LAYOUT = {"A": {"start": 0x7F2E4C000000, "bytes": 140, "element": 4, "role": "input"},
          "B": {"start": 0x7F2E4C000100, "bytes": 60, "element": 4, "role": "input"},
          "C": {"start": 0x7F2E4C000200, "bytes": 84, "element": 4, "role": "output"}}


def found(name: str, tool: str):
    return sanlog.findings((DATA / name).read_text(), tool, LAYOUT)


def test_out_of_bounds_writes_name_line_buffer_distance_and_thread():
    (f,) = found("memcheck_oob_write.txt", "memcheck")
    assert (f.line, f.count, f.kernel) == (11, 3, "gemm_oob")
    assert f.what == "out-of-bounds __global__ write of 4 bytes"
    assert f.where == "C[21], 1 element past the end of C (which has 21)"
    assert (f.thread, f.block) == ("(0,6,0)", "(0,0,0)")
    source = (CHEATS / "oob_write.cu").read_text()
    text = f.describe(source)
    assert text.startswith("sanitizer  memcheck: out-of-bounds __global__ write of 4 bytes at "
                           "line 11, thread (0,6,0) block (0,0,0): C[21], 1 element past the end")
    assert "[x3]" in text and "11 | if (row == M - 1) C[(row + 1) * N + col] = acc;" in text


def test_a_read_before_the_start_of_a_buffer():
    layout = {"X": {"start": 0x7F2E4C000000, "bytes": 512, "element": 4, "role": "input"}}
    (f,) = sanlog.findings((DATA / "memcheck_read_before.txt").read_text(), "memcheck", layout)
    assert f.where == "4 bytes before the start of X (which has 128 elements)" and f.line == 9


def test_misaligned_access_inside_a_buffer():
    layout = {"V": {"start": 0x7F2E4C000400, "bytes": 1024, "element": 4, "role": "input"}}
    (f,) = sanlog.findings((DATA / "memcheck_misaligned.txt").read_text(), "memcheck", layout)
    assert f.what.startswith("misaligned __global__ read of 16 bytes")
    assert f.where == "byte offset 4 into V, not aligned for this access"


def test_races_name_both_lines_and_sum_their_hazards():
    first, second = found("racecheck.txt", "racecheck")
    assert (first.line, first.other_line, first.count) == (13, 16, 7936)
    assert (second.line, second.other_line, second.count) == (14, 16, 1984)
    assert first.what == "shared-memory race: write vs read"
    text = first.describe((CHEATS / "race_no_sync.cu").read_text())
    assert "at lines 13 and 16" in text and "\n  16 | for (int k = 0; k < T; ++k)" in text


def test_a_race_whose_location_wraps_onto_the_next_line():
    (f,) = found("racecheck_wrapped.txt", "racecheck")
    assert (f.line, f.other_line, f.count) == (25, 31, 4080)


def test_uninitialized_shared_reads_are_one_finding():
    (f,) = found("initcheck_shared.txt", "initcheck")
    assert (f.line, f.count, f.what) == (16, 2, "uninitialized __shared__ read of 4 bytes")
    assert f.where == "shared-memory offset 0x4"


def test_uninitialized_global_read_names_the_output_element():
    (f,) = found("initcheck_global_output.txt", "initcheck")
    assert f.where == "C[5], read before anything wrote it" and f.line == 8
    assert f.kernel == "accumulate(const float *, float *, int)"


def test_old_location_format_and_clean_output():
    old = ("========= Invalid __global__ read of size 8\n"
           "=========     at 0x000000c8 in /home/u/src/kernel.cu:75:vector_projection\n"
           "=========     by thread (9,0,0) in block (0,0,0)\n"
           "=========     Address 0x000370e8 is out of bounds\n")
    (f,) = sanlog.findings(old, "memcheck", {})
    assert (f.line, f.kernel) == (75, "vector_projection")
    assert f.where == "address 0x370e8, outside every buffer of the kernel"
    assert found("clean.txt", "memcheck") == []


def test_lines_in_headers_are_not_taken_for_the_kernels():
    text = ("========= Invalid __global__ read of size 4 bytes\n"
            "=========     at helper+0x10 in /usr/local/cuda/include/cuda_fp16.hpp:120\n")
    (f,) = sanlog.findings(text, "memcheck", {})
    assert f.line is None and f.file.endswith("cuda_fp16.hpp")
    assert "at /usr/local/cuda/include/cuda_fp16.hpp" in f.describe()


def test_tools_for_each_verdict():
    assert sanitizer.tools_for("crash", None) == ("memcheck",)
    assert sanitizer.tools_for("wrong", ".shared .align 4 .b8 As[4096];") == (
        "memcheck", "racecheck", "initcheck")
    assert sanitizer.tools_for("wrong", ".visible .entry k()") == ("memcheck", "initcheck")


def _request() -> EvalRequest:
    launch = Launch("gemm_k", ("cdiv(N,16)", "cdiv(M,16)", "1"), ("16", "16", "1"), "0",
                    ("A", "B", "C", "M", "N", "K"), 3)
    return EvalRequest(SPEC, Contract("gemm", "float32", (launch,)), "float32",
                       SPEC.test_sizes, SPEC.bench_sizes[:1], 1)


@pytest.fixture
def fake_sanitizer(monkeypatch, tmp_path):
    calls = []

    def answer(replies, version=""):
        # A fake executable per call, so the cached version of one is never another's.
        exe = tmp_path / f"compute-sanitizer-{len(list(tmp_path.iterdir()))}"
        exe.write_text(f"#!/bin/sh\necho 'Version {version}'\n" if version else "#!/bin/sh\n")
        exe.chmod(0o755)
        monkeypatch.setattr(sanitizer.toolkit, "tool", lambda name: exe)

        def fake(tool, request, binary, mode, **kw):
            calls.append((tool[tool.index("--tool") + 1], "--log-file" in tool,
                          dict(request.test_sizes[0])))
            spaces.append("--initcheck-address-space" in tool)
            return replies.pop(0)
        monkeypatch.setattr(sanitizer.wrapped, "run", fake)
        return calls
    spaces: list[bool] = []
    answer.spaces = spaces  # type: ignore[attr-defined]
    return answer


def test_wrong_runs_memcheck_then_racecheck_and_stops_at_the_first_finding(fake_sanitizer):
    clean = wrapped.Wrapped((DATA / "clean.txt").read_text(), "", {"launched": True})
    race = wrapped.Wrapped((DATA / "racecheck.txt").read_text(), "", {"launched": True})
    calls = fake_sanitizer([clean, race])
    sizes = {"M": 1, "N": 1, "K": 1}
    report = sanitizer.check(_request(), b"cubin", "wrong", sizes, ".shared")
    assert [c[0] for c in calls] == ["memcheck", "racecheck"]
    assert all(c[2] == sizes for c in calls)  # at the failing size
    assert report.tools == ("memcheck", "racecheck") and report.findings[0].line == 13
    assert SanitizerReport.from_json(report.to_json()) == report


def test_a_tool_that_refuses_its_flags_is_retried_without_them(fake_sanitizer):
    refused = wrapped.Wrapped("", "==ERROR== unrecognised option '--initcheck-address-space'", {})
    ok = wrapped.Wrapped("", (DATA / "initcheck_shared.txt").read_text(), {"launched": True})
    calls = fake_sanitizer([refused, ok])
    report = sanitizer.check(_request(), b"cubin", "crash", {"M": 7, "N": 3, "K": 5})
    assert [c[1] for c in calls] == [True, False]  # the retry leaves the optional flags out
    assert report.findings and report.findings[0].line == 16 and not report.error


def test_an_initcheck_without_the_shared_space_says_what_it_missed(fake_sanitizer):
    """compute-sanitizer 2025.3 (CUDA 13.0, the H200's) refuses --initcheck-address-space: the
    retry checks global memory only, and the report must not read as if shared were clean."""
    clean = wrapped.Wrapped("", "", {"launched": True})
    refused = wrapped.Wrapped("", "==ERROR== unrecognised option '--initcheck-address-space'", {})
    calls = fake_sanitizer([clean, clean, refused, clean])
    report = sanitizer.check(_request(), b"cubin", "wrong", {"M": 7, "N": 3, "K": 5}, ".shared")
    assert [(c[0], c[1]) for c in calls] == [("memcheck", True), ("racecheck", True),
                                             ("initcheck", True), ("initcheck", False)]
    assert not report.findings and "uninitialized __shared__ read goes unseen" in report.note
    assert report.blind_to == "shared memory" and "the fault is in the arithmetic" not in (
        report.describe())
    assert SanitizerReport.from_json(report.to_json()) == report
    assert "global memory only" in report.describe()


@pytest.mark.parametrize("version, asked", [("2025.3.1.0", False), ("2025.4.1.0", True)])
def test_the_shared_space_is_asked_of_a_sanitizer_that_has_it(fake_sanitizer, version, asked):
    """Known versions decide up front: 2025.3 is not asked (and the report says what it cannot
    see), 2025.4 is asked to check shared memory too; neither needs a refused first run."""
    clean = wrapped.Wrapped("", "", {"launched": True})
    calls = fake_sanitizer([clean, clean], version=version)
    report = sanitizer.check(_request(), b"cubin", "wrong", {"M": 7, "N": 3, "K": 5}, "ld.global")
    assert [c[0] for c in calls] == ["memcheck", "initcheck"]
    assert fake_sanitizer.spaces == [False, asked]
    assert ("goes unseen" in report.note) is not asked
    assert (report.blind_to == "shared memory") is not asked


def test_unknown_failing_size_uses_the_smallest_test_size_and_says_so(fake_sanitizer):
    calls = fake_sanitizer([wrapped.Wrapped("", "", {"launched": True})])
    report = sanitizer.check(_request(), b"cubin", "crash", None)
    assert calls[0][2] == {"M": 1, "N": 1, "K": 1} and "unknown" in report.note
    assert "no invalid access, race or uninitialized read found" in report.describe()


def test_missing_compute_sanitizer_is_a_record(monkeypatch):
    monkeypatch.setattr(sanitizer.toolkit, "tool", lambda name: None)
    monkeypatch.delenv("KGEN_COMPUTE_SANITIZER", raising=False)
    report = sanitizer.check(_request(), b"cubin", "wrong", None)
    assert report.describe() == ("sanitizer  not run: compute-sanitizer not found on PATH, beside "
                                 "nvcc or in NVIDIA's pip wheels (KGEN_COMPUTE_SANITIZER can "
                                 "name one)")
    monkeypatch.setenv("KGEN_COMPUTE_SANITIZER", "/nowhere/compute-sanitizer")
    report = sanitizer.check(_request(), b"cubin", "wrong", None)
    assert report.error == ("compute-sanitizer: KGEN_COMPUTE_SANITIZER=/nowhere/compute-sanitizer"
                            " is not an executable file")


def test_a_launch_that_never_happened_is_not_called_clean(fake_sanitizer):
    refused = wrapped.Wrapped("", "", {"error": "launch_error: the binary did not load",
                                       "launched": False})
    fake_sanitizer([refused])
    report = sanitizer.check(_request(), b"cubin", "crash", {"M": 1, "N": 1, "K": 1})
    text = report.describe()
    assert "nothing found (the launch under memcheck failed: launch_error" in text
    assert "no invalid access" not in text


def test_the_tool_version_is_read_from_its_banner(monkeypatch, tmp_path):
    exe = tmp_path / "compute-sanitizer"
    exe.write_text("#!/bin/sh\necho 'NVIDIA (R) Compute Sanitizer'\n"
                   "echo 'Version 2025.3.1.0 (build 36400806) (public-release)'\n")
    exe.chmod(0o755)
    monkeypatch.setattr(sanitizer.toolkit, "tool", lambda name: exe)
    assert sanitizer.tool_version() == (2025, 3) < sanitizer.SHARED_INITCHECK
    monkeypatch.setattr(sanitizer.toolkit, "tool", lambda name: None)
    assert sanitizer.tool_version() is None


def test_a_named_compute_sanitizer_wins_and_the_pip_wheel_is_the_last_resort(monkeypatch,
                                                                              tmp_path):
    """KGEN_COMPUTE_SANITIZER chooses a tool; `nvidia-cuda-sanitizer-api` (nvidia/cu13/bin) is
    used only where neither PATH nor the toolkit has one."""
    from kgen import toolkit
    from kgen.errors import EnvironmentProblem

    site = tmp_path / "site"
    wheel = site / "nvidia" / "cu13" / "bin" / "compute-sanitizer"
    named = tmp_path / "named" / "compute-sanitizer"
    for exe in (wheel, named):
        exe.parent.mkdir(parents=True)
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("KGEN_COMPUTE_SANITIZER", str(named))
    assert toolkit.tool("compute-sanitizer") == named
    monkeypatch.setenv("KGEN_COMPUTE_SANITIZER", str(tmp_path / "missing"))
    assert toolkit.tool("compute-sanitizer") is None  # a wrong name is not silently replaced
    monkeypatch.delenv("KGEN_COMPUTE_SANITIZER")

    def no_toolkit():
        raise EnvironmentProblem("no nvcc")
    monkeypatch.setattr(toolkit.shutil, "which", lambda name: None)
    monkeypatch.setattr(toolkit, "cuda_root", no_toolkit)
    assert toolkit.tool("compute-sanitizer") == wheel
    wheel.chmod(0o644)
    assert toolkit.tool("compute-sanitizer") is None
