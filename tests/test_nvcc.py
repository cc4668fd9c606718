"""The compile step with the real nvcc: include policy, isolation, limits, cache, odd input."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest
from helpers import kernel

from kgen import process
from kgen.arch import parse_arch
from kgen.compile import Limits, compile_source
from kgen.compile import isolation as compile_isolation
from kgen.compile.includes import check_includes
from kgen.errors import UsageError
from kgen.toolkit import cuda_root as _cuda_root

GOOD = kernel("fill.cu")


@pytest.fixture(scope="module")
def sm89():
    return parse_arch("sm_89")


def _policy_error(text: str, folder: Path | None) -> tuple[int | None, str] | None:
    found = check_includes(text, folder)
    assert all(d.category == "policy" and d.severity == "error" for d in found)
    return (found[0].line, found[0].message) if found else None


@pytest.mark.parametrize("line", [
    '#include "/etc/passwd"',
    '#include "/dev/zero"',
    '#include "../../x.h"',
    "#include <../x.h>",
    "#include <sub/../../x.h>",
    "#include KERNEL_HEADER",
    '%:include "/etc/passwd"',  # the digraph spelling of '#'
    '#/* a comment */include "/etc/passwd"',
    '#inc\\\nlude "/etc/passwd"',  # a spliced line is one directive
    '#import "/etc/passwd"',
    '#  include_next "/etc/passwd"',
])
def test_include_policy_refuses_on_the_directive_line(line, tmp_path):
    text = f"// header\n{line}\n{GOOD}"
    refused = _policy_error(text, tmp_path)
    assert refused is not None and refused[0] == 2
    assert refused[1].startswith("include refused:")


def test_include_policy_refuses_links_that_leave_the_folder(tmp_path):
    (tmp_path / "evil.h").symlink_to("/etc/passwd")
    (tmp_path / "dangling.h").symlink_to("/nonexistent/kgen-dangling")
    (tmp_path / "ok.h").write_text("#define OK 1\n")
    (tmp_path / "inside.h").symlink_to(tmp_path / "ok.h")
    assert _policy_error('#include "evil.h"\n', tmp_path) == (
        1, f"include refused: evil.h resolves outside the source's folder (a link to "
           f"{Path('/etc/passwd').resolve()})")
    assert _policy_error("#include <evil.h>\n", tmp_path) is not None  # -I serves <...> too
    assert _policy_error('#include "dangling.h"\n', tmp_path) is not None
    assert _policy_error('#include "inside.h"\n#include "ok.h"\n', tmp_path) is None


def test_include_policy_allows_cuda_headers_and_ignores_commented_out_lines(tmp_path):
    text = ('#include <cuda_fp16.h>\n#include "mma.h"  // trailing comment\n'
            '// #include "/etc/passwd"\n/* #include "/etc/shadow" */\nconst char* s = '
            '"#include \\"/etc/passwd\\"";\n')
    assert check_includes(text, tmp_path) == ()


@pytest.mark.nvcc
def test_refused_include_never_reaches_nvcc(sm89, tmp_path):
    result = compile_source('#include "/etc/passwd"\n' + GOOD, sm89, include_dir=tmp_path,
                            use_cache=False)
    assert not result.ok and result.log == "" and result.isolation == "refused before nvcc"
    assert [(d.line, d.category) for d in result.diagnostics] == [(1, "policy")]
    assert "line 1" in result.summary and "root:" not in result.summary


@pytest.mark.nvcc
def test_cuda_header_and_own_folder_header_compile(sm89, tmp_path):
    (tmp_path / "tile.h").write_text("#define TILE 32\n")
    source = ('#include <cuda_fp16.h>\n#include "tile.h"\n'
              'extern "C" __global__ void k(__half* x) {\n'
              '    x[threadIdx.x % TILE] = __float2half(1.f);\n}\n')
    result = compile_source(source, sm89, include_dir=tmp_path, use_cache=False)
    assert result.ok, result.summary
    assert result.cubin and result.cubin[:4] == b"\x7fELF"
    assert set(result.resources) == {"k"} and result.resources["k"].registers > 0


@pytest.mark.nvcc
def test_compile_without_a_kernel_is_a_failure_with_a_clear_message(sm89):
    result = compile_source("__device__ int twice(int v) { return 2 * v; }\n", sm89,
                            use_cache=False)
    assert not result.ok
    (d,) = result.errors
    assert d.category == "contract" and "no __global__ kernel" in d.message
    assert "no __global__ kernel" in result.summary


def _processes_with(marker: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker.encode() in cmdline.read_bytes():
                found.append(cmdline.parent.name)
        except OSError:
            continue
    return found


SLOW = """\
template <int D, int W> struct Tree {
    static constexpr unsigned long long v = Tree<D - 1, W * 2>::v + Tree<D - 1, W * 2 + 1>::v;
};
template <int W> struct Tree<0, W> { static constexpr unsigned long long v = W; };
extern "C" __global__ void k(unsigned long long* x) { x[0] = Tree<24, 1>::v; }
"""


@pytest.mark.slow
@pytest.mark.nvcc
def test_compile_that_never_finishes_is_stopped_with_its_process_group(sm89):
    marker = f"KGEN_TIMEOUT_{uuid.uuid4().hex}"
    start = time.monotonic()
    result = compile_source(SLOW, sm89, flags=[f"-D{marker}"], limits=Limits(timeout_s=2.5),
                            use_cache=True)
    elapsed = time.monotonic() - start
    assert 2.4 < elapsed < 15
    assert not result.ok
    assert [d.message for d in result.errors] == [
        "compilation did not finish within 2.5 s and was stopped"]
    assert _processes_with(marker) == []  # nvcc, cudafe++, cicc: all gone
    again = compile_source(SLOW, sm89, flags=[f"-D{marker}"], limits=Limits(timeout_s=0.5),
                           use_cache=True)
    assert not again.cached  # a timeout is not cached: a longer limit may succeed


@pytest.mark.nvcc
def test_cache_hit_is_fast_and_any_change_misses(sm89, tmp_path, monkeypatch):
    monkeypatch.setenv("KGEN_CACHE_DIR", str(tmp_path / "cache"))
    first = compile_source(GOOD, sm89)
    assert first.ok and not first.cached
    start = time.monotonic()
    second = compile_source(GOOD, sm89)
    assert time.monotonic() - start < 0.2
    assert second.cached and second.cubin == first.cubin
    assert second.resources == first.resources and second.summary == first.summary
    assert not compile_source(GOOD, sm89, flags=["-O3"]).cached
    assert not compile_source(GOOD, parse_arch("sm_80")).cached
    assert not compile_source(GOOD.replace("1.0f", "2.0f"), sm89).cached
    assert not compile_source(GOOD, sm89, use_cache=False).cached


@pytest.mark.nvcc
def test_editing_a_header_of_the_folder_misses_the_cache(sm89, tmp_path, monkeypatch):
    monkeypatch.setenv("KGEN_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "tile.h").write_text('#include "more.h"\n')
    (folder / "more.h").write_text("#define TILE 32\n")
    source = '#include "tile.h"\n' + GOOD.replace("threadIdx.x]", "threadIdx.x % TILE]")
    assert compile_source(source, sm89, include_dir=folder).ok
    assert compile_source(source, sm89, include_dir=folder).cached
    (folder / "more.h").write_text("#define TILE 16\n")  # two includes deep
    assert not compile_source(source, sm89, include_dir=folder).cached


@pytest.mark.nvcc
def test_failed_compiles_are_cached_with_their_diagnostics(sm89, tmp_path, monkeypatch):
    monkeypatch.setenv("KGEN_CACHE_DIR", str(tmp_path / "cache"))
    broken = GOOD.replace("x[threadIdx.x]", "y[threadIdx.x]")
    first = compile_source(broken, sm89)
    second = compile_source(broken, sm89)
    assert second.cached and not second.ok
    assert second.diagnostics == first.diagnostics and second.errors[0].line == 1


@pytest.mark.nvcc
def test_non_utf8_source_never_crashes(sm89):
    raw = (b"// caf\xe9 \xff\xfe\n" + GOOD.encode()
           + b'__device__ const char* tag = "\xc3\x28\xa0";\nint \xff bad;\n')
    result = compile_source(raw, sm89, use_cache=False)
    assert not result.ok
    assert [(d.line, d.message, d.count) for d in result.errors] == [
        (3, "invalid multibyte character sequence", 2), (4, "unrecognized token", 1)]
    assert "\ufffd" in result.errors[0].source and "\ufffd" in result.summary


@pytest.mark.slow
@pytest.mark.nvcc
def test_huge_output_stays_bounded(sm89):
    body = "".join(f"    x[{n}] = undefined_{n};\n" for n in range(5000))
    source = 'extern "C" __global__ void k(float* x) {\n' + body + "}\n"
    result = compile_source(source, sm89, limits=Limits(max_log_bytes=64 * 1024),
                            use_cache=False)
    assert not result.ok
    assert len(result.log) <= 64 * 1024 + 100
    assert len(result.summary) <= 3000 and "more records left out" in result.summary
    assert result.errors[0].line == 2 and "undefined_0" in result.errors[0].message


@pytest.mark.nvcc
def test_bubblewrap_is_used_when_it_works(sm89):
    result = compile_source(GOOD, sm89, use_cache=False)
    assert result.isolation == ("bubblewrap" if process.bwrap_path() else "limits only")


needs_bwrap = pytest.mark.skipif(process.bwrap_path() is None, reason="bubblewrap not usable")


@pytest.mark.nvcc
def test_files_of_the_folder_that_are_not_headers_never_reach_the_compiler(sm89):
    # "passwd" is a plain relative name, so the scanner lets it by; the preprocessor's own list
    # names /etc/passwd, which is not a header file: refused before anything is compiled.
    result = compile_source('#include "passwd"\n' + GOOD, sm89, include_dir=Path("/etc"),
                            use_cache=False)
    assert not result.ok and [d.category for d in result.errors] == ["policy"]
    assert "root:" not in result.log and "root:" not in result.summary
    assert result.errors[0].line == 1
    with pytest.raises(UsageError, match="not allowed"):  # and no flag can add /etc to the path
        compile_source(GOOD, sm89, flags=["-I/etc"], use_cache=False)


@needs_bwrap
def test_compile_sandbox_has_no_network_and_no_etc(tmp_path):
    prefix = compile_isolation.compile_sandbox(tmp_path, [_cuda_root()])
    probe = ("import socket, os\n"
             "print('passwd', os.path.exists('/etc/passwd'))\n"
             "s = socket.socket(); s.settimeout(2)\n"
             "try:\n    s.connect(('1.1.1.1', 53)); print('connected')\n"
             "except OSError as e:\n    print('refused', e.errno)\n")
    done = process.run_limited([*prefix, "/usr/bin/python3", "-c", probe], cwd=tmp_path,
                                 timeout=20, env=process.scrubbed_env())
    assert done.returncode == 0, done.output
    assert "passwd False" in done.output and "refused" in done.output
    assert "connected" not in done.output


def test_scrubbed_env_drops_secrets_and_keeps_path():
    base = {"PATH": "/opt/cuda/bin:/usr/bin", "OPENAI_API_KEY": "sk-x", "GITHUB_TOKEN": "t",
            "HF_TOKEN": "h", "AWS_SECRET_ACCESS_KEY": "a", "KGEN_API_KEY": "k",
            "LD_LIBRARY_PATH": "/opt/cuda/lib64", "HOME": "/root"}
    env = process.scrubbed_env(base, HOME="/tmp/w")
    assert env["PATH"] == "/opt/cuda/bin:/usr/bin"
    assert env["LD_LIBRARY_PATH"] == "/opt/cuda/lib64" and env["HOME"] == "/tmp/w"
    assert not {"OPENAI_API_KEY", "GITHUB_TOKEN", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY",
                "KGEN_API_KEY"} & set(env)
    assert "sk-x" not in env.values()


def test_run_limited_caps_output_and_keeps_head_and_tail(tmp_path):
    script = "import sys; sys.stdout.write('HEAD' + 'x' * 500000 + 'TAIL')"
    done = process.run_limited(["python3", "-c", script], cwd=tmp_path, timeout=20,
                                 env=dict(os.environ), max_output=4096)
    assert done.truncated and len(done.output) < 4200
    assert done.output.startswith("HEAD") and done.output.endswith("TAIL")
    assert list(tmp_path.iterdir()) == []  # the spool file is gone


@pytest.mark.nvcc
def test_embed_ptx_builds_a_fatbin(sm89):
    result = compile_source(GOOD, sm89, embed_ptx=True, use_cache=False)
    assert result.ok and result.cubin is not None
    assert result.cubin[:4] == b"\x50\xed\x55\xba"  # the fatbin magic, not an ELF cubin


@pytest.mark.nvcc
def test_memory_limit_failure_is_a_value_that_says_so(sm89, tmp_path, monkeypatch):
    monkeypatch.setenv("KGEN_CACHE_DIR", str(tmp_path / "cache"))
    result = compile_source(GOOD, sm89, limits=Limits(memory_bytes=30 * 1024**2), use_cache=False)
    assert not result.ok
    (d,) = result.errors
    assert d.category == "toolchain" and "memory limit" in " ".join(d.notes)
    assert compile_source(GOOD, sm89, limits=Limits(memory_bytes=30 * 1024**2)).cached is False
    assert compile_source(GOOD, sm89).ok  # the failure was not cached for the default limits


def test_interrupt_kills_the_childs_process_group(tmp_path, monkeypatch):
    import os
    import subprocess

    started = []
    real_wait = subprocess.Popen.wait

    def interrupted_wait(self, timeout=None):
        if not started:  # the first wait is run_limited's: the user presses Ctrl-C there
            started.append(self.pid)
            raise KeyboardInterrupt
        return real_wait(self, timeout=timeout)

    monkeypatch.setattr(subprocess.Popen, "wait", interrupted_wait)
    with pytest.raises(KeyboardInterrupt):
        process.run_limited(["sleep", "37"], cwd=tmp_path, timeout=60,
                              env=process.scrubbed_env())
    with pytest.raises(ProcessLookupError):
        os.killpg(started[0], 0)  # nothing of the group is left
    assert not list(tmp_path.glob(".output-*"))
