"""Load and validate a spec file (`reference_kernels/<op>/spec.yaml`, or a user's own)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kgen import expr
from kgen.dtypes import DTYPES
from kgen.errors import UsageError
from kgen.paths import data_dir
from kgen.refexpr import check as check_reference
from kgen.spec import OpSpec, Tensor, Tolerance


def available_ops() -> list[str]:
    return sorted(p.parent.name for p in data_dir("reference_kernels").glob("*/spec.yaml"))


def load_op(name: str | None = None, path: Path | None = None) -> OpSpec:
    """The spec of a shipped op by name, or of a user's spec file; UsageError names the field."""
    if path is None:
        if name not in available_ops():
            raise UsageError(f"unknown op {name!r}; shipped ops: {', '.join(available_ops())} "
                             "(or pass --op-file path/spec.yaml)")
        path = data_dir("reference_kernels") / str(name) / "spec.yaml"
    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise UsageError(f"cannot read spec {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise UsageError(f"spec {path} is not valid YAML: {exc}") from exc
    try:
        return _build(data, Path(path))
    except (KeyError, TypeError, ValueError, expr.ExprError) as exc:
        raise UsageError(f"invalid spec {path}: {exc}") from exc


def _field(data: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    if key not in data:
        raise KeyError(f"missing field '{key}'")
    if not isinstance(data[key], kind):
        raise TypeError(f"field '{key}' should be a {getattr(kind, '__name__', kind)}")
    return data[key]


def _build(data: Any, path: Path) -> OpSpec:
    if not isinstance(data, dict):
        raise TypeError("the file should hold a mapping of fields")
    sizes = tuple(str(s) for s in _field(data, "sizes", list))
    symbols = frozenset(sizes)
    tensors = []
    for tname, t in _field(data, "tensors", dict).items():
        if not isinstance(t, dict) or t.get("role") not in ("input", "output"):
            raise ValueError(f"field 'tensors.{tname}.role' must be input or output")
        shape = tuple(str(d) for d in _field(t, "shape", list))
        for dim in shape:
            _check_expr(dim, symbols, f"tensors.{tname}.shape")
        tensors.append(Tensor(str(tname), shape, t["role"]))
    if not any(t.role == "output" for t in tensors):
        raise ValueError("field 'tensors' needs at least one output")
    dtypes = {}
    for dname, d in _field(data, "dtypes", dict).items():
        if dname not in DTYPES:
            raise ValueError(f"field 'dtypes.{dname}': unknown dtype (known: {', '.join(DTYPES)})")
        reference = str(_field(d, "reference", str))
        if reference not in DTYPES:
            raise ValueError(f"field 'dtypes.{dname}.reference': unknown dtype {reference!r} "
                             f"(known: {', '.join(DTYPES)})")
        dtypes[dname] = Tolerance(reference, float(_field(d, "atol", (int, float))),
                                  float(_field(d, "rtol", (int, float))))
    test_sizes = tuple(_sizes(s, symbols, "test_sizes") for s in _field(data, "test_sizes", list))
    bench_sizes = tuple(_sizes(s, symbols, "bench_sizes")
                        for s in _field(data, "bench_sizes", list))
    flops, nbytes = str(_field(data, "flops", (str, int))), str(_field(data, "bytes", (str, int)))
    _check_expr(flops, symbols, "flops")
    _check_expr(nbytes, symbols | {"ELEM"}, "bytes")
    reference = str(_field(data, "reference", str))
    try:
        check_reference(reference, [t.name for t in tensors if t.role == "input"])
    except UsageError as exc:
        raise ValueError(f"field 'reference': {exc}") from exc
    return OpSpec(str(_field(data, "name", str)), str(data.get("description", "")).strip(),
                  sizes, tuple(tensors), dtypes, reference,
                  test_sizes, bench_sizes, flops, nbytes, path.parent)


def _check_expr(text: str, symbols: frozenset[str], where: str) -> None:
    try:
        expr.check(text, symbols)
    except expr.ExprError as exc:
        raise ValueError(f"field '{where}': {exc}") from exc


def _sizes(entry: Any, symbols: frozenset[str], where: str) -> dict[str, int]:
    if not isinstance(entry, dict) or set(entry) != set(symbols):
        raise ValueError(f"each entry of '{where}' must give exactly {', '.join(sorted(symbols))}")
    if not all(isinstance(v, int) and v > 0 for v in entry.values()):
        raise ValueError(f"'{where}' values must be positive integers: {entry}")
    return {str(k): int(v) for k, v in entry.items()}
