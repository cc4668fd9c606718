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
    path.write_text(yaml.safe_dump(data, sort_keys=False))  # tensor order matters (same_as)
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


def _layernorm(tmp_path, change, extra_files=None):
    folder = load_op("layernorm").folder
    data = yaml.safe_load((folder / "spec.yaml").read_text())
    change(data)
    for name, text in (extra_files or {}).items():
        (tmp_path / name).write_text(text)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))  # tensor order is argument order
    return path


@pytest.mark.parametrize("change, field", [
    (lambda d: d.update(name="Layer-Norm"), "field 'name'"),
    (lambda d: d.update(chekcs=["row_sums"]), "field 'chekcs' is not a spec field"),
    (lambda d: d["params"]["eps"].update(dtype="float16"), "params.eps.dtype"),
    (lambda d: d["params"]["eps"].update(value="small"), "params.eps.value"),
    (lambda d: d["params"].update(N={"dtype": "int32", "value": 1}), "params.N"),
    (lambda d: d["params"].update(k={"dtype": "int32", "value": 1.5}), "params.k.value"),
    (lambda d: d["tensors"]["X"].update(role="scratch"), "tensors.X.role"),
    (lambda d: d["tensors"]["X"].update(dtype="int4"), "tensors.X.dtype"),
    (lambda d: d["tensors"]["X"].update(init={"dist": "normal", "mean": 0, "std": 0}),
     "tensors.X.init.std"),
    (lambda d: d["tensors"]["X"].update(init={"dist": "cauchy", "low": 0, "high": 1}),
     "tensors.X.init.dist"),
    (lambda d: d["tensors"]["X"].update(init={"dist": "uniform", "low": 2, "high": 1}),
     "tensors.X.init"),
    (lambda d: d["tensors"]["X"].update(init={"dist": "uniform", "low": 0, "hi": 1}),
     "tensors.X.init.hi"),
    (lambda d: d["tensors"]["X"].update(colour="red"), "tensors.X.colour"),
    (lambda d: d["tensors"]["Y"].update(init={"dist": "uniform", "low": 0, "high": 1}),
     "tensors.Y.init"),
    (lambda d: d["tensors"]["X"].update(attribute="ln.x"), "tensors.X.attribute"),
    (lambda d: d["tensors"].update(eps={"shape": ["N"], "role": "input"}), "tensors.eps"),
    (lambda d: d["tensors"].update(int={"shape": ["N"], "role": "input"}), "tensors.int"),
    (lambda d: d["test_sizes"].append({"M": 1, "N": 2, "epsilon": 0.1}), "test_sizes[9]"),
    (lambda d: d["test_sizes"].append({"M": 1, "N": 2, "eps": "big"}), "test_sizes[9].eps"),
    (lambda d: d.update(checks=["row_norms"]), "field 'checks'"),
    (lambda d: d.update(reference_file="reference.py"), "exactly one of"),
    (lambda d: d.pop("reference"), "exactly one of"),
    (lambda d: d.update(reference="F.layer_norm(X, (N,), weight, bias, epsilon)"),
     "field 'reference'"),
    (lambda d: d.update(baseline={"expression": "torch.load('x')"}), "baseline.expression"),
    (lambda d: d.update(baseline={"label": "x", "kind": "y"}), "baseline.kind"),
    (lambda d: d["dtypes"]["float32"].update(atol=-1), "dtypes.float32"),
])
def test_every_new_field_is_checked_with_one_error_naming_it(tmp_path, change, field):
    with pytest.raises(UsageError, match="invalid spec") as err:
        load_op(path=_layernorm(tmp_path, change))
    assert field in str(err.value)
    assert "\n" not in str(err.value)


def _with_file(d):
    d.pop("reference")
    d["reference_file"] = "ref.py"


@pytest.mark.parametrize("text, words", [
    ("def reference(X, bias, weight, *, eps):\n    return X\n", "reference() takes (X, bias"),
    ("def reference(X, weight, bias, *, eps, alpha):\n    return X\n", "keyword 'alpha'"),
    ("def other(X):\n    return X\n", "defines no function `reference`"),
    ("def reference(X, weight, bias:\n", "does not parse"),
])
def test_a_reference_file_must_fit_the_spec(tmp_path, text, words):
    with pytest.raises(UsageError, match="reference_file") as err:
        load_op(path=_layernorm(tmp_path, _with_file, {"ref.py": text}))
    assert words in str(err.value)


def test_a_reference_file_and_its_source_load(tmp_path):
    text = "def reference(X, weight, bias, *, N, eps):\n    return X * weight + bias\n"
    spec = load_op(path=_layernorm(tmp_path, _with_file, {"ref.py": text}))
    assert spec.reference.kind == "file" and spec.reference.text == text
    assert spec.reference.file == "ref.py"
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(UsageError, match="field 'reference_file': cannot read"):
        load_op(path=_layernorm(other, _with_file))


def test_the_new_fields_load_into_values():
    ln = load_op("layernorm")
    assert [p.name for p in ln.params] == ["eps"] and ln.params[0].dtype == "float32"
    assert [t.name for t in ln.weights] == ["weight", "bias"]
    assert [t.name for t in ln.operands] == ["X", "weight", "bias"]
    assert ln.tensors[0].init.dist == "normal" and ln.tensors[0].init.a == 3.0
    assert ln.params_at({"M": 4, "N": 1000, "eps": 1e-3}) == {"eps": 1e-3}
    assert ln.params_at({"M": 4, "N": 1000}) == {"eps": 1e-5}
    assert ln.sizes_of({"M": 4, "N": 1000, "eps": 1e-3}) == {"M": 4, "N": 1000}
    argmax = load_op("argmax")
    assert argmax.outputs[0].dtype == "int64"
    assert argmax.tensor_dtype(argmax.outputs[0], "float16") == "int64"
    assert argmax.tensor_dtype(argmax.inputs[0], "float16") == "float16"
    assert load_op("softmax").checks == ("row_sums",)
    assert load_op("rmsnorm").reference.kind == "file"


def test_spec_values_survive_json():
    from kgen.spec import OpSpec

    for name in ("layernorm", "argmax", "attention", "gemm"):
        spec = load_op(name)
        assert OpSpec.from_json(spec.to_json()) == spec


def test_kgen_spec_prints_yaml_that_loads_back_to_the_same_op(tmp_path):
    from kgen.ops import spec_yaml

    for name in ("layernorm", "attention", "argmax", "softmax", "gemm"):
        spec = load_op(name)
        folder = tmp_path / name
        folder.mkdir()
        for extra in spec.folder.glob("*.py"):
            (folder / extra.name).write_text(extra.read_text())
        (folder / "spec.yaml").write_text(spec_yaml(spec))
        again = load_op(path=folder / "spec.yaml")
        assert again.to_json() | {"folder": ""} == spec.to_json() | {"folder": ""}, name


def _square_matmul(data):
    """gemm's spec as a square matmul `X @ W -> out`, every dim N, with same_as: gemm."""
    data.update(sizes=["N"], same_as="gemm", reference="X @ W", flops="2 * N * N * N",
                bytes="3 * N * N * ELEM", baseline=None,
                tensors={"X": {"shape": ["N", "N"], "role": "input"},
                         "W": {"shape": ["N", "N"], "role": "input"},
                         "out": {"shape": ["N", "N"], "role": "output"}},
                test_sizes=[{"N": 7}, {"N": 130}], bench_sizes=[{"N": 4096}])
    data.pop("baseline")


def test_same_as_gemm_binds_the_operands_and_output_in_order(tmp_path):
    from kgen.ops import spec_yaml
    from kgen.ops.sameas import spec_binding

    spec = load_op(path=_write(tmp_path, _square_matmul))
    assert spec.same_as == "gemm"
    assert spec_binding(spec) == {"A": "X", "B": "W", "C": "out", "M": "N", "N": "N", "K": "N"}
    assert spec_binding(load_op("gemm")) == {}  # the shipped op needs no binding
    assert "same_as: gemm" in spec_yaml(spec)
    (tmp_path / "again.yaml").write_text(spec_yaml(spec))
    assert load_op(path=tmp_path / "again.yaml").same_as == "gemm"


@pytest.mark.parametrize("change, words", [
    (lambda d: d.update(same_as="conv2d"), "'conv2d' is not an op kgen can bind to"),
    (lambda d: d.update(same_as="layernorm"), "layernorm takes an operand X (1-D or more), then "
                                               "weights weight and bias"),
    (lambda d: d.update(same_as="softmax"), "softmax takes one operand X[M,N] and one output"),
    (lambda d: d.update(same_as="silu"), "silu takes one operand X[M,N] and one output"),
    (lambda d: d.update(same_as=3), "field 'same_as' should be a str"),
    (lambda d: d["tensors"]["W"].update(shape=["N", "1"]), "1 is not a size symbol"),
    (lambda d: d["tensors"]["out"].update(shape=["N"]), "not every tensor is 2-D"),
    (lambda d: d["tensors"]["W"].update(dtype="int32"), "W set their own dtype"),
    (lambda d: d["tensors"].update(Z={"shape": ["N", "N"], "role": "input"}),
     "this spec has 3 operands and 1 outputs"),
])
def test_a_same_as_the_tensors_do_not_fit_is_one_error_naming_the_field(tmp_path, change, words):
    def both(data):
        _square_matmul(data)
        change(data)

    with pytest.raises(UsageError, match="same_as") as caught:
        load_op(path=_write(tmp_path, both))
    assert words in str(caught.value)


def test_same_as_softmax_binds_one_operand_and_its_output(tmp_path):
    from kgen.ops.sameas import spec_binding

    def rows(data):
        data.update(sizes=["B", "D"], same_as="softmax", reference="torch.softmax(x, dim=-1)",
                    flops="5 * B * D", bytes="2 * B * D * ELEM",
                    tensors={"x": {"shape": ["B", "D"], "role": "input"},
                             "out": {"shape": ["B", "D"], "role": "output"}},
                    test_sizes=[{"B": 3, "D": 5}], bench_sizes=[{"B": 16, "D": 16384}])
        data.pop("baseline")

    spec = load_op(path=_write(tmp_path, rows))
    assert spec_binding(spec) == {"X": "x", "Y": "out", "M": "B", "N": "D"}

    def transposed(data):
        rows(data)
        data["tensors"]["out"]["shape"] = ["D", "B"]

    with pytest.raises(UsageError, match=r"x\[B,D\] -> out\[D,B\] are not \[M,N\] -> \[M,N\]"):
        load_op(path=_write(tmp_path, transposed))


def test_same_as_gemm_checks_that_the_shapes_chain(tmp_path):
    def rectangular(data):
        _square_matmul(data)
        data.update(sizes=["M", "N", "K"], test_sizes=[{"M": 3, "N": 5, "K": 7}],
                    bench_sizes=[])
        data["tensors"]["X"]["shape"] = ["M", "K"]
        data["tensors"]["W"]["shape"] = ["N", "K"]  # X @ W.T, not gemm
        data["tensors"]["out"]["shape"] = ["M", "N"]
        data.update(reference="X @ W.T")

    with pytest.raises(UsageError, match=r"X\[M,K\], W\[N,K\] -> out\[M,N\] are not"):
        load_op(path=_write(tmp_path, rectangular))
