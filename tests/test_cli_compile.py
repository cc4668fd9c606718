"""`kgen compile`: exit codes, the stable JSON record, -o, and one clear line on every failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import kernel

from kgen.cli import main

BROKEN = Path(__file__).parent / "data" / "broken"
GOOD = kernel("fill.cu")


def _run(*args: str):
    result = CliRunner().invoke(main, list(args))
    assert result.exc_info is None or result.exc_info[0] is SystemExit, result.exc_info
    return result


@pytest.fixture
def good(tmp_path) -> Path:
    path = tmp_path / "good.cu"
    path.write_text(GOOD)
    return path


@pytest.mark.nvcc
def test_success_exits_0_and_writes_the_cubin(good, tmp_path):
    out = tmp_path / "out.cubin"
    result = _run("compile", str(good), "--arch", "sm_89", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:4] == b"\x7fELF"
    assert "resource  kernel fill:" in result.stdout


@pytest.mark.nvcc
def test_compile_errors_exit_1_with_the_summary_not_the_raw_log():
    result = _run("compile", str(BROKEN / "undefined_identifier.cu"), "--arch", "sm_89")
    assert result.exit_code == 1
    assert "error  line 10 col 59" in result.stdout
    assert "(did you mean: stride, tid)" in result.stdout
    assert "kernel.cu(10)" not in result.output and "errors detected" not in result.output


@pytest.mark.nvcc
def test_json_has_exactly_the_stable_keys(good):
    broken = BROKEN / "two_errors.cu"
    for path, code in ((good, 0), (broken, 1)):
        result = _run("compile", str(path), "--arch", "sm_89", "--json")
        assert result.exit_code == code
        record = json.loads(result.stdout)
        assert set(record) == {"ok", "arch", "seconds", "diagnostics", "resources", "summary"}
        assert record["ok"] is (code == 0) and record["arch"] == "sm_89"
        assert isinstance(record["seconds"], float) and isinstance(record["summary"], str)
        for d in record["diagnostics"]:
            assert set(d) == {"severity", "line", "column", "code", "message", "source", "notes"}
    assert [d["line"] for d in record["diagnostics"]] == [5, 11]
    # nvcc 13 prints numbers only for warnings and notes (#177-D), not for errors.
    warned = json.loads(_run("compile", str(BROKEN / "warnings_only.cu"), "--arch", "sm_89",
                             "--json").stdout)
    assert [(d["severity"], d["line"], d["code"]) for d in warned["diagnostics"]] == [
        ("warning", 6, "177")]
    ok = json.loads(_run("compile", str(good), "--arch", "sm_89", "--json").stdout)
    assert set(ok["resources"]["fill"]) == {"registers", "shared_bytes", "spill_stores",
                                             "spill_loads", "stack_bytes"}


@pytest.mark.nvcc
@pytest.mark.parametrize("args", [
    ("--arch", "sm_42"),
    ("--arch", "89"),
    ("--arch", "sm_80a"),
])
def test_unknown_arch_exits_2_with_one_line(good, args):
    result = _run("compile", str(good), *args)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kgen: error:") and "sm_89" in lines[0]
    assert "Traceback" not in result.output


@pytest.mark.nvcc
def test_missing_file_exits_2(tmp_path):
    result = _run("compile", str(tmp_path / "nope.cu"), "--arch", "sm_89")
    assert result.exit_code == 2
    assert result.stderr.strip() == f"kgen: error: no such file: {tmp_path / 'nope.cu'}"


def test_a_path_that_is_not_a_file_is_named_as_such(tmp_path):
    result = _run("compile", "/dev/null", "--arch", "sm_89")  # exists: not "no such file"
    assert result.exit_code == 2
    assert result.stderr.strip() == "kgen: error: /dev/null is not a regular file; give a file"
    folder = _run("compile", str(tmp_path), "--arch", "sm_89")  # click's own check says it
    assert folder.exit_code == 2 and "is a directory" in folder.output


def test_missing_arch_option_is_usage_error(good):
    assert _run("compile", str(good)).exit_code == 2


def test_no_nvcc_on_path_exits_3_in_one_line(good, tmp_path):
    # nvcc_path/supported_archs are cached per process: a fresh interpreter sees the bare PATH.
    env = {k: v for k, v in os.environ.items() if k not in ("PATH", "CUDA_HOME", "CUDA_PATH")}
    env["PATH"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-m", "kgen", "compile", str(good), "--arch", "sm_89"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip().splitlines() == [
        "kgen: error: nvcc not found on PATH; install the CUDA toolkit and put its bin/ folder "
        "on PATH"]
    assert "Traceback" not in done.stderr


@pytest.mark.nvcc
def test_refused_include_and_non_utf8_exit_1_without_traceback(tmp_path):
    path = tmp_path / "evil.cu"
    path.write_bytes(b'// \xff\xfe\n#include "/etc/passwd"\n' + GOOD.encode())
    result = _run("compile", str(path), "--arch", "sm_89", "--json")
    assert result.exit_code == 1
    (d,) = json.loads(result.stdout)["diagnostics"]
    assert d["line"] == 2 and d["message"].startswith("include refused")
    assert "Traceback" not in result.output


def test_require_file_tells_missing_from_not_a_file(tmp_path):
    from kgen.errors import UsageError, require_file

    (tmp_path / "k.cu").write_text("")
    require_file(tmp_path / "k.cu")  # a file: nothing said
    for path, words in ((tmp_path / "nope.cu", "no such file"), (tmp_path, "is a directory")):
        with pytest.raises(UsageError, match=words):
            require_file(path)
