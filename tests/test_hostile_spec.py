"""Hostile spec files: every bad field is one UsageError line naming it, and nothing a spec says
can become a path, pass every candidate, or exhaust memory or time."""

from __future__ import annotations

import time

import pytest
import yaml
from click.testing import CliRunner

from kgen import cli
from kgen.errors import UsageError
from kgen.ops import load_op
from kgen.ops.yamlload import MAX_BYTES


def _spec(tmp_path, change):
    data = yaml.safe_load(load_op("gemm").folder.joinpath("spec.yaml").read_text())
    change(data)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _raw(tmp_path, data: bytes):
    path = tmp_path / "spec.yaml"
    path.write_bytes(data)
    return path


def _size(key, value):
    return lambda d: d["test_sizes"][0].update({key: value})


@pytest.mark.parametrize("change, field", [
    (lambda d: d.update(name="../../etc"), "'name'"),
    (lambda d: d.update(name="/abs/path"), "'name'"),
    (lambda d: d.update(name="[bold red]x[/]"), "'name'"),
    (lambda d: d.update(name="x\x1b[2J"), "'name'"),
    (lambda d: d.update(name="A" * 100), "'name'"),
    (lambda d: d.update(test_sizes=[]), "'test_sizes'"),
    (lambda d: d["dtypes"]["float32"].update(atol=float("nan")), "dtypes.float32.atol"),
    (lambda d: d["dtypes"]["float32"].update(rtol=float("inf")), "dtypes.float32.rtol"),
    (lambda d: d["dtypes"]["float32"].update(atol=-1e-3), "dtypes.float32.atol"),
    (lambda d: d["dtypes"]["float32"].update(atol=True), "atol"),
    (_size("M", True), "test_sizes.M"),
    (_size("M", 10**30), "test_sizes.M"),
    (_size("M", 0), "test_sizes.M"),
    (_size("M", 2.5), "test_sizes.M"),
    (lambda d: d["bench_sizes"][0].update(M=2**30, K=2**30), "elements"),
    (lambda d: d.update(dtypes={}), "'dtypes'"),
    (lambda d: d["dtypes"].update(float32=[1, 2]), "dtypes.float32"),
    (lambda d: d.update(sizes=["M", "N", "K", "import"]), "'sizes'"),
    (lambda d: d["tensors"].update({"x y": {"shape": ["M"], "role": "input"}}), "tensors.x y"),
    (lambda d: d.update(flops=True), "'flops'"),
    (lambda d: d.update(reference="A @ B * 10 ** 100000000"), "'reference'"),
])
def test_every_bad_field_is_one_line_naming_it(tmp_path, change, field):
    started = time.monotonic()
    with pytest.raises(UsageError) as caught:
        load_op(path=_spec(tmp_path, change))
    assert field in str(caught.value) and "\n" not in str(caught.value)
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("data, words", [
    (b"name: gemm\ndescription: caf\xe9\n", "not UTF-8"),
    (b"name: " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested more than"),
    (b"a:\n" + b"".join(b"  " * i + b"b:\n" for i in range(1, 100)), "nested more than"),
    (b"a: &a [" + b",".join([b'"x"'] * 9) + b"]\n" + b"".join(
        f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n".encode()
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)) + b"name: *i\n",
     "aliases are expanded"),
    (b"description: '" + b"x" * (MAX_BYTES + 10) + b"'\n", "larger than"),
    (b"name: [unclosed\n", "not valid YAML"),
    (b"- just\n- a list\n", "mapping"),
])
def test_hostile_yaml_is_refused_within_limits(tmp_path, data, words):
    started = time.monotonic()
    with pytest.raises(UsageError, match=words):
        load_op(path=_raw(tmp_path, data))
    assert time.monotonic() - started < 2.0


def test_a_bad_spec_on_the_command_line_is_one_line_and_exit_2(tmp_path):
    path = _spec(tmp_path, lambda d: d.update(name="../../outside"))
    result = CliRunner().invoke(cli.main, ["generate", "--op-file", str(path), "--arch",
                                           "sm_89", "--no-gpu", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "outside").exists()
