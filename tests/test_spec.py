"""Op specs: the shipped gemm spec loads; a bad spec is one error naming the field."""

from __future__ import annotations

import pytest
import yaml

from kgen.errors import UsageError
from kgen.ops import available_ops, load_op


def test_gemm_spec_has_what_the_issue_asks_for():
    spec = load_op("gemm")
    assert "gemm" in available_ops()
    assert [t.name for t in spec.inputs] == ["A", "B"] and [t.name for t in spec.outputs] == ["C"]
    assert set(spec.dtypes) == {"float32", "float16", "bfloat16"}
    assert spec.dtypes["float32"].reference == "float64"
    assert spec.dtypes["float16"].reference == "float32"
    # Tiny sizes and sizes that are not a multiple of any tile (8, 16, 32, 64, 128).
    assert any(max(s.values()) == 1 for s in spec.test_sizes)
    assert any(all(v % 8 for v in s.values()) for s in spec.test_sizes)
    assert spec.flop_count({"M": 2, "N": 3, "K": 4}) == 48
    assert spec.byte_count({"M": 2, "N": 3, "K": 4}, "float16") == (8 + 12 + 6) * 2
    assert spec.shape(spec.outputs[0], {"M": 5, "N": 7, "K": 3}) == (5, 7)
    assert len(spec.reference_kernels()) >= 2


def _write(tmp_path, change):
    data = yaml.safe_load(load_op("gemm").folder.joinpath("spec.yaml").read_text())
    change(data)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("change, field", [
    (lambda d: d.pop("flops"), "'flops'"),
    (lambda d: d.pop("tensors"), "'tensors'"),
    (lambda d: d["tensors"]["A"].update(role="scratch"), "tensors.A.role"),
    (lambda d: d["tensors"]["A"].update(shape=["M", "Q"]), "'Q'"),
    (lambda d: d["dtypes"].update(int4={"reference": "float32", "atol": 1, "rtol": 1}),
     "dtypes.int4"),
    (lambda d: d["dtypes"]["float32"].pop("atol"), "'dtypes.float32.atol'"),
    (lambda d: d["test_sizes"].append({"M": 1, "N": 1}), "test_sizes"),
    (lambda d: d["bench_sizes"].append({"M": 1, "N": 0, "K": 1}), "bench_sizes"),
    (lambda d: d.update(flops="2 * M * N * K ** 2"), "flops"),
    (lambda d: d.update(bytes="__import__('os')"), "not allowed"),
    (lambda d: d.update(reference="A @@ X"), "'reference'"),
    (lambda d: d.update(reference="A @ Q"), "'reference'"),
    (lambda d: d.update(reference="torch.load('x') @ B"), "not allowed"),
    (lambda d: d["dtypes"]["float32"].update(reference="float99"), "dtypes.float32.reference"),
])
def test_bad_spec_names_the_field(tmp_path, change, field):
    with pytest.raises(UsageError, match="invalid spec") as err:
        load_op(path=_write(tmp_path, change))
    assert field in str(err.value)


def test_reference_may_use_allowed_torch_functions(tmp_path):
    path = _write(tmp_path, lambda d: d.update(reference="torch.relu(A @ B) * 2 - torch.sum(B.T)"))
    assert load_op(path=path).reference.text.startswith("torch.relu")


def test_unreadable_and_unknown(tmp_path):
    with pytest.raises(UsageError, match="unknown op 'conv'"):
        load_op("conv")
    with pytest.raises(UsageError, match="cannot read spec"):
        load_op(path=tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("name: [unclosed\n")
    with pytest.raises(UsageError, match="not valid YAML"):
        load_op(path=tmp_path / "bad.yaml")
