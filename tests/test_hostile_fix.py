"""`kgen fix` leaves everything it did not change as it was: other lines byte for byte (CRLF,
Latin-1), earlier backups, links; and default run directories never collide."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgen import cli
from kgen.loop.fixout import backup_path, merge_lines

pytestmark = pytest.mark.nvcc
BROKEN = (Path(__file__).parent / "data" / "fixable" / "missing_semicolon.cu").read_bytes()
BAD_LINE = b"  const int i = blockIdx.x * blockDim.x + threadIdx.x"


def fix(*args: str):
    return CliRunner().invoke(cli.main, ["fix", *args, "--arch", "sm_89", "--backend", "builtin"],
                              env={"KGEN_MODEL": ""})


def _changed(before: bytes, after: bytes) -> list[tuple[bytes, bytes]]:
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    assert len(old) == len(new)
    return [(a, b) for a, b in zip(old, new, strict=True) if a != b]


def test_crlf_latin1_file_changes_only_the_broken_line(tmp_path):
    source = tmp_path / "k.cu"
    source.write_bytes(b"// (c) caf\xe9 \xa9 Latin-1\r\n" + BROKEN.replace(b"\n", b"\r\n"))
    result = fix(str(source), "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    before, after = source.read_bytes(), (tmp_path / "k.fixed.cu").read_bytes()
    assert _changed(before, after) == [(BAD_LINE + b"\r\n", BAD_LINE + b";\r\n")]


@pytest.mark.parametrize("ending", [b"\r", b"\n"])
def test_line_ends_and_a_missing_final_newline_are_kept(tmp_path, ending):
    source = tmp_path / "k.cu"
    source.write_bytes(BROKEN.replace(b"\n", ending).rstrip(ending))
    result = fix(str(source), "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    after = (tmp_path / "k.fixed.cu").read_bytes()
    assert after == source.read_bytes().replace(BAD_LINE, BAD_LINE + b";")


def test_backups_are_numbered_and_never_overwritten(tmp_path):
    source = tmp_path / "k.cu"
    (tmp_path / "k.cu.orig").write_bytes(b"an older backup\n")
    for n in range(2):
        source.write_bytes(BROKEN)
        result = fix(str(source), "--in-place", "--out", str(tmp_path / f"run{n}"))
        assert result.exit_code == 0, result.output
    assert (tmp_path / "k.cu.orig").read_bytes() == b"an older backup\n"
    assert (tmp_path / "k.cu.orig.1").read_bytes() == BROKEN
    assert (tmp_path / "k.cu.orig.2").read_bytes() == BROKEN
    assert backup_path(source) == tmp_path / "k.cu.orig.3"


def test_a_link_is_followed_and_stays_a_link(tmp_path):
    real = tmp_path / "src" / "k.cu"
    real.parent.mkdir()
    real.write_bytes(BROKEN)
    link = tmp_path / "link.cu"
    link.symlink_to(real)
    result = fix(str(link), "--in-place", "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert BAD_LINE + b";" in real.read_bytes()
    assert (real.parent / "k.cu.orig").read_bytes() == BROKEN


def test_fixing_many_files_in_one_second_never_collides(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("a.cu", "b.cu", "c.cu"):
        (tmp_path / name).write_bytes(BROKEN)
        result = fix(name)
        assert result.exit_code == 0, result.output
    assert len(list((tmp_path / "runs").iterdir())) == 3


def test_control_sequences_in_names_and_lines_never_reach_the_terminal(tmp_path):
    source = tmp_path / "k\x1b[2J.cu"
    source.write_bytes(BROKEN.replace(BAD_LINE, BAD_LINE + b" /* \x1b]0;owned\x07 */"))
    result = fix(str(source), "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "threadIdx.x /*  */;" in result.output  # the diff shows the line, minus escapes


def test_merge_keeps_bytes_the_model_saw_as_replacement_characters():
    original = b"// \xff\xfe odd bytes\nint a = 1\nint b;\n"
    fixed = original.decode("utf-8", "replace").replace("int a = 1\n", "int a = 1;\n")
    assert merge_lines(original, fixed) == b"// \xff\xfe odd bytes\nint a = 1;\nint b;\n"
