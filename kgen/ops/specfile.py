"""Load and validate a spec file (`reference_kernels/<op>/spec.yaml`, or a user's own)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kgen import expr
from kgen.dtypes import DTYPES
from kgen.errors import UsageError
from kgen.ops import checks
from kgen.ops.yamlload import load_yaml
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
    data = load_yaml(Path(path))  # size, UTF-8, depth and alias limits (untrusted input)
    try:
        return _build(data, Path(path))
    except (KeyError, TypeError, ValueError, expr.ExprError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        raise UsageError(f"invalid spec {path}: {message}") from None


_WORDS = {int: "a number", float: "a number", str: "text", list: "a list", dict: "a mapping"}


def _field(data: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    if key not in data:
        raise KeyError(f"missing field '{key}'")
    if not isinstance(data[key], kind) or (isinstance(data[key], bool) and bool not in (
            kind if isinstance(kind, tuple) else (kind,))):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        wanted = " or ".join(dict.fromkeys(_WORDS.get(k, k.__name__) for k in kinds))
        raise TypeError(f"field '{key}' should be {wanted} (got {type(data[key]).__name__})")
    return data[key]


def _build(data: Any, path: Path) -> OpSpec:
    if not isinstance(data, dict):
        raise TypeError("the file should hold a mapping of fields")
    sizes = tuple(checks.symbol(s, "sizes") for s in _field(data, "sizes", list))
    symbols = frozenset(sizes)
    tensors = []
    for tname, t in _field(data, "tensors", dict).items():
        checks.symbol(tname, f"tensors.{tname}")
        if not isinstance(t, dict) or t.get("role") not in ("input", "output"):
            raise ValueError(f"field 'tensors.{tname}.role' must be input or output")
        shape = tuple(str(d) for d in _field(t, "shape", list))
        for dim in shape:
            _check_expr(dim, symbols, f"tensors.{tname}.shape")
        tensors.append(Tensor(str(tname), shape, t["role"]))
    if not any(t.role == "output" for t in tensors):
        raise ValueError("field 'tensors' needs at least one output")
    dtypes = {}
    for dname, d in checks.nonempty(_field(data, "dtypes", dict), "dtypes", "dtype").items():
        if dname not in DTYPES:
            raise ValueError(f"field 'dtypes.{str(dname)[:40]}': unknown dtype (known: "
                             f"{', '.join(DTYPES)})")
        checks.mapping(d, f"dtypes.{dname}")
        reference = str(_field(d, "reference", str))
        if reference not in DTYPES:
            raise ValueError(f"field 'dtypes.{dname}.reference': unknown dtype {reference!r} "
                             f"(known: {', '.join(DTYPES)})")
        dtypes[dname] = Tolerance(
            reference, checks.tolerance(_field(d, "atol", (int, float)), f"dtypes.{dname}.atol"),
            checks.tolerance(_field(d, "rtol", (int, float)), f"dtypes.{dname}.rtol"))
    test_sizes = tuple(_sizes(s, symbols, "test_sizes") for s in checks.nonempty(
        _field(data, "test_sizes", list), "test_sizes", "entry (else every candidate passes)"))
    bench_sizes = tuple(_sizes(s, symbols, "bench_sizes")
                        for s in _field(data, "bench_sizes", list))
    checks.elements({t.name: t.shape for t in tensors}, test_sizes + bench_sizes, "sizes")
    flops, nbytes = str(_field(data, "flops", (str, int))), str(_field(data, "bytes", (str, int)))
    _check_expr(flops, symbols, "flops")
    _check_expr(nbytes, symbols | {"ELEM"}, "bytes")
    reference = str(_field(data, "reference", str))
    try:
        check_reference(reference, [t.name for t in tensors if t.role == "input"])
    except UsageError as exc:
        raise ValueError(f"field 'reference': {exc}") from exc
    return OpSpec(checks.op_name(_field(data, "name", str)),
                  str(data.get("description", "")).strip(),
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
    return {str(k): checks.size_value(v, f"{where}.{k}") for k, v in entry.items()}
