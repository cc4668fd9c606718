"""Op specs: load and validate `reference_kernels/<op>/spec.yaml` (or a user's own file)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kgen import expr
from kgen.errors import UsageError
from kgen.resources import data_dir
from sandbox.reference import check as check_reference

DTYPES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}
CTYPES = {"float32": "float", "float16": "__half", "bfloat16": "__nv_bfloat16", "float64": "double"}


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[str, ...]  # expressions over the size symbols
    role: str  # "input" or "output"


@dataclass(frozen=True)
class Tolerance:
    reference: str  # dtype the reference is computed in
    atol: float
    rtol: float


@dataclass(frozen=True)
class OpSpec:
    """Everything kgen knows about one op; frozen and serializable."""

    name: str
    description: str
    sizes: tuple[str, ...]
    tensors: tuple[Tensor, ...]
    dtypes: dict[str, Tolerance]
    reference: str  # a torch expression over the input names
    test_sizes: tuple[dict[str, int], ...]
    bench_sizes: tuple[dict[str, int], ...]
    flops: str
    bytes: str
    folder: Path

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        return tuple(t for t in self.tensors if t.role == "input")

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        return tuple(t for t in self.tensors if t.role == "output")

    def shape(self, tensor: Tensor, sizes: dict[str, int]) -> tuple[int, ...]:
        return tuple(expr.evaluate(dim, sizes) for dim in tensor.shape)

    def flop_count(self, sizes: dict[str, int]) -> int:
        return expr.evaluate(self.flops, sizes)

    def byte_count(self, sizes: dict[str, int], dtype: str) -> int:
        return expr.evaluate(self.bytes, {**sizes, "ELEM": DTYPES[dtype]})

    def reference_kernels(self) -> list[Path]:
        return sorted(self.folder.glob("[0-9][0-9]_*.cu"))

    def check_dtype(self, dtype: str) -> None:
        if dtype not in self.dtypes:
            raise UsageError(f"op {self.name} has no dtype {dtype!r}; it has: "
                             f"{', '.join(self.dtypes)}")


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
