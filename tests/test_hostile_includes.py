"""Hostile sources against the include policy: the preprocessor's own list decides, candidates
read only the input's headers, flags cannot widen the path, and no text of a file outside the
allowed set reaches a summary, a log or the cache.

Each case is an attack a model (or a file handed to kgen) could make; the secrets planted in the
folder and on the host must never come back."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import kernel

from kgen import process
from kgen.arch import parse_arch
from kgen.compile import compile_source
from kgen.compile import isolation as compile_isolation
from kgen.compile import nvcc as nvcc_module
from kgen.compile.cache import cache_dir
from kgen.compile.deps import WITHHELD, Visible, parse_make_rule, scrub_log
from kgen.compile.flags import check_flags
from kgen.compile.includes import check_includes
from kgen.errors import UsageError

pytestmark = pytest.mark.nvcc

BODY = kernel("fill.cu")
SECRETS = ("hunter2-folder-secret", "ssh-secret-key-material", "host-secret-outside",
           "root:x:0:0")


@pytest.fixture(scope="module")
def sm89():
    return parse_arch("sm_89")


@pytest.fixture
def folder(tmp_path):
    """A user's project: the input includes tile.h; beside it sit things no model may read."""
    project = tmp_path / "project"
    (project / ".ssh").mkdir(parents=True)
    (project / "sub").mkdir()
    (project / "tile.h").write_text("#define TILE 16\n")
    (project / "other.h").write_text("#define OTHER 1\n")
    (project / "sub" / "deep.h").write_text("#define DEEP 1\n")
    (project / "secrets.env").write_text("API_TOKEN=hunter2-folder-secret\n")
    (project / ".ssh" / "id.h").write_text('#define KEY "ssh-secret-key-material"\n')
    (project / "notes.h").symlink_to(tmp_path / "outside.txt")
    (tmp_path / "outside.txt").write_text("int host = ;  // host-secret-outside\n")
    return project


def _compile(source: str, arch, folder: Path, headers=("tile.h",), scanner: bool = True,
             monkeypatch=None):
    if not scanner:  # what the preprocessor decides when the fast scanner is fooled
        monkeypatch.setattr(nvcc_module, "check_includes", lambda *a, **k: ())
    result = compile_source(source + BODY, arch, include_dir=folder, headers=headers)
    stored = "".join(p.read_text(errors="replace") for p in cache_dir().rglob("*.json"))
    for secret in SECRETS:
        assert secret not in result.summary + result.log + json.dumps(result.to_json()), secret
        assert secret not in stored, secret
    return result


def _refused(result) -> list[tuple[int | None, str]]:
    assert not result.ok
    return [(d.line, d.message) for d in result.errors if d.category == "policy"]


# The preprocessor decides: each of these fools or skips the fast scanner, and is refused anyway.
@pytest.mark.parametrize("source", [
    '#include "secrets.env"\n',
    '#include ".ssh/id.h"\n',
    '#include "notes.h"\n',  # a header name that links out of the folder
    '#include "other.h"\n',  # a real header of the folder the input does not include
    '#include "sub/deep.h"\n',
    '#define H "other.h"\n#include H\n',  # computed
    '#ifdef __CUDA_ARCH__\n#include "other.h"\n#endif\n',  # device pass only
    '#include "/etc/passwd"\n',
    '#include "../project/secrets.env"\n',
    '#include "nothere.h"\n',  # missing reads the same as refused: no existence oracle
])
def test_candidate_reads_only_the_inputs_headers(source, sm89, folder, monkeypatch):
    result = _compile(source, sm89, folder, scanner=False, monkeypatch=monkeypatch)
    refused = _refused(result)
    assert refused and all("include refused" in m for _, m in refused), result.summary
    assert result.isolation != "refused before nvcc"  # the preprocessor's list decided


def test_missing_and_refused_includes_read_the_same(sm89, folder, monkeypatch):
    words = [_refused(_compile(f'#include "{name}"\n', sm89, folder, scanner=False,
                               monkeypatch=monkeypatch))[0][1].replace(name, "X")
             for name in ("other.h", "nothere.h")]
    assert words[0] == words[1]


@pytest.mark.parametrize("source", [
    '#include "tile.h"\n',
    '#include <cuda_fp16.h>\n#include <cuda/std/cstdint>\n#include "tile.h"\n',
    '#if __has_include("secrets.env")\n#error found\n#endif\n',  # sees only allowed files
])
def test_allowed_headers_still_compile(source, sm89, folder):
    if "__has_include" in source and process.bwrap_path() is None:
        pytest.skip("without bubblewrap __has_include is refused (next test)")
    result = _compile(source, sm89, folder)
    assert result.ok, result.summary
    assert result.headers == (("tile.h",) if "tile.h" in source else ())


def test_the_users_own_file_may_include_any_header_of_its_folder(sm89, folder):
    result = _compile('#include "other.h"\n#include "sub/deep.h"\n', sm89, folder, headers=None)
    assert result.ok and set(result.headers) == {"other.h", "sub/deep.h"}
    refused = _compile('#include "secrets.env"\n', sm89, folder, headers=None)
    assert _refused(refused)


@pytest.mark.parametrize("line", [
    '\r#include "/etc/passwd"',  # a lone CR ends a line
    '\ufeff#include "/etc/passwd"',  # a BOM before '#'
    '\x00#include "/etc/passwd"',  # a NUL is whitespace to gcc
    '#inc\\  \nlude "/etc/passwd"',  # gcc splices a backslash followed by spaces
    "int n = 1'0'/*';\n#include \"/etc/passwd\"\n// */",  # a digit separator, not a char
    '#line 1 "/etc/passwd"',  # gcc would quote that file's lines in its messages
    '#pragma GCC dependency "/etc/passwd"',  # an existence oracle
])
def test_scanner_reads_lines_as_gcc_does(line, folder):
    assert check_includes(f"// head\n{line}\n{BODY}", folder)


def test_without_bubblewrap_has_include_is_refused_and_line_quotes_are_withheld(
        sm89, folder, monkeypatch):
    monkeypatch.setattr(process, "bwrap_path", lambda: None)
    monkeypatch.setattr(compile_isolation, "bwrap_path", lambda: None)
    result = _compile('#if __has_include("/etc/passwd")\n#endif\n', sm89, folder)
    assert "__has_include" in _refused(result)[0][1]
    # #line makes gcc quote another file: the scanner refuses it, and when it is fooled the
    # record naming that file is withheld.
    outside = folder.parent / "outside.txt"
    result = _compile(f'#line 1 "{outside}"\n#if 1 +\n#endif\n', sm89, folder, scanner=False,
                      monkeypatch=monkeypatch)
    assert not result.ok and result.isolation == "limits only"
    result = _compile(f'#line 1 "{outside}"\nint host = ;\n', sm89, folder, scanner=False,
                      monkeypatch=monkeypatch)
    assert _refused(result)  # gcc lists a #line file among the dependencies: refused


def test_records_naming_files_outside_the_allowed_set_are_withheld(tmp_path, folder):
    visible = Visible(tmp_path / "work", folder, frozenset({"tile.h"}))
    log = (f"{tmp_path}/outside.txt:1:8: error: operator '+' has no right operand\n"
           "    1 | int host = ;  // host-secret-outside\n"
           "kernel.cu(3): error: identifier \"y\" is undefined\n  x = y;\n      ^\n"
           f"In file included from {folder}/other.h:1,\n                 from kernel.cu:1:\n"
           f"{folder}/tile.h(2): error: expected a \";\"\n")
    scrubbed = scrub_log(log, visible)
    assert "host-secret-outside" not in scrubbed and "other.h" not in scrubbed
    assert scrubbed.count(WITHHELD) == 2
    assert 'kernel.cu(3): error: identifier "y"' in scrubbed and "tile.h(2)" in scrubbed


@pytest.mark.parametrize("flag", ["-I/etc", "--include-path=/etc", "-isystem/etc",
                                  "--pre-include=/etc/passwd", "-include/etc/passwd",
                                  "-idirafter/etc", "-iquote/etc", "-imacros/etc/passwd",
                                  "--options-file=/etc/passwd", "-optf=/x", "@/etc/passwd",
                                  "-Xcompiler=-I/etc", "-ccbin=/bin/sh", "-o/tmp/x",
                                  "-Xptxas=--options-file=/x", '-DX="/etc/passwd"'])
def test_flags_cannot_add_include_paths_or_files(flag):
    with pytest.raises(UsageError, match="not allowed"):
        check_flags([flag])


def test_allowed_flags_pass(sm89):
    check_flags(["-maxrregcount=64", "-O3", "-use_fast_math", "-DTILE=32", "-std=c++17",
                 "-Xptxas=-v,-O3", "--ftz=true"])


def test_cache_and_log_hold_no_host_paths_or_keys(sm89, folder, monkeypatch):
    key = "sk-hostile-cache-key-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    source = (f'#include "tile.h"\n// {key}\n'
              'extern "C" __global__ void k(float* x) { x[0] = y; }\n')
    result = compile_source(source, sm89, include_dir=folder, headers=("tile.h",))
    assert not result.ok
    stored = "".join(p.read_text(errors="replace") for p in cache_dir().rglob("*.json"))
    assert key not in stored and key not in result.log
    assert str(folder) not in stored and "/tmp/kgen-nvcc" not in stored


def test_make_rule_parsing():
    rule = "kernel.o : kernel.cu \\\n    /usr/include/a.h \\\n    sp\\ ace/x\\ y.h $$x.h\n"
    assert parse_make_rule(rule) == ["kernel.cu", "/usr/include/a.h", "sp ace/x y.h", "$x.h"]


def test_header_edits_miss_the_cache(sm89, folder):
    source = '#include "tile.h"\n'
    assert _compile(source, sm89, folder).ok
    assert _compile(source, sm89, folder).cached
    (folder / "tile.h").write_text("#define TILE 32\n")
    assert not _compile(source, sm89, folder).cached
    os.utime(folder / "tile.h")


def test_a_refused_flag_on_the_command_line_is_one_line_and_exit_2(tmp_path):
    from click.testing import CliRunner

    from kgen import cli

    source = tmp_path / "k.cu"
    source.write_text(BODY)
    result = CliRunner().invoke(cli.main, ["compile", str(source), "--arch", "sm_89",
                                           "--flag=--pre-include=/etc/passwd"])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert "not allowed" in result.output and "root:" not in result.output
