"""An OpSpec back to the spec-file schema, as YAML: what `kgen spec SOURCE` prints, so a user can
see, save and edit the op kgen derived (a saved file loads back with --op-file)."""

from __future__ import annotations

from typing import Any

import yaml

from kgen.ops.reduction import EPS_OPS
from kgen.spec import Init, OpSpec, Tensor

_REFERENCE_KEY = {"expression": "reference", "file": "reference_file", "kernelbench": "kernelbench"}


def spec_data(spec: OpSpec) -> dict[str, Any]:
    """The spec as the mapping a spec.yaml holds (only the fields that differ from defaults)."""
    data: dict[str, Any] = {"name": spec.name, "description": spec.description,
                            "sizes": list(spec.sizes)}
    if spec.params:
        data["params"] = {p.name: {"dtype": p.dtype, "value": p.value} for p in spec.params}
    data["tensors"] = {t.name: _tensor(t) for t in spec.tensors}
    data["dtypes"] = {k: {"reference": t.reference, "atol": t.atol, "rtol": t.rtol}
                      for k, t in spec.dtypes.items()}
    ref = spec.reference
    data[_REFERENCE_KEY[ref.kind]] = ref.text if ref.kind == "expression" else ref.file
    if spec.checks:
        data["checks"] = list(spec.checks)
    data["test_sizes"] = [dict(e) for e in spec.test_sizes]
    data["bench_sizes"] = [dict(e) for e in spec.bench_sizes]
    data["flops"] = spec.flops
    data["bytes"] = spec.bytes
    if spec.baseline.label or spec.baseline.expression:
        data["baseline"] = {k: v for k, v in (("label", spec.baseline.label),
                                              ("expression", spec.baseline.expression)) if v}
    if spec.same_as:
        data["same_as"] = spec.same_as
    if spec.pointwise:
        data["pointwise"] = spec.pointwise
    if spec.reduce.op:
        dims = spec.reduce.dim if spec.reduce.count == 1 else list(spec.reduce.dims)
        data["reduce"] = {"op": spec.reduce.op, "dim": dims,
                          **({"eps": spec.reduce.eps} if spec.reduce.op in EPS_OPS else {})}
    return data


def _tensor(t: Tensor) -> dict[str, Any]:
    entry: dict[str, Any] = {"shape": list(t.shape), "role": t.role}
    if t.dtype:
        entry["dtype"] = t.dtype
    default = Init() if t.dtype is None else Init("randint", 0, 100)
    if t.role != "output" and t.init != default:
        entry["init"] = t.init.to_json()
    if t.attribute:
        entry["attribute"] = t.attribute
    return entry


class _Dumper(yaml.SafeDumper):
    """Short lists and mappings of plain values on one line, as the shipped specs write them."""


def _flat(values: Any) -> bool:
    return all(isinstance(v, (str, int, float, bool)) or v is None for v in values)


def _list(dumper: yaml.SafeDumper, value: list) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=_flat(value))


def _dict(dumper: yaml.SafeDumper, value: dict) -> yaml.Node:
    flow = _flat(value.values()) and len(value) <= 6 and "description" not in value
    return dumper.represent_mapping("tag:yaml.org,2002:map", value.items(), flow_style=flow)


_Dumper.add_representer(list, _list)
_Dumper.add_representer(dict, _dict)


def spec_yaml(spec: OpSpec) -> str:
    return yaml.dump(spec_data(spec), Dumper=_Dumper, sort_keys=False, width=100,
                     allow_unicode=True)
