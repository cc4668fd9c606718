"""Load and validate a spec file (`reference_kernels/<op>/spec.yaml`, or a user's own).

The schema (README "Op specs"): name, description, sizes, params, tensors (shape, role, dtype,
init), dtypes, one of reference / reference_file / kernelbench, checks, test_sizes, bench_sizes,
flops, bytes, baseline, same_as, pointwise, reduce. A bad spec is one UsageError naming the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kgen import expr
from kgen.dtypes import DTYPES
from kgen.errors import UsageError
from kgen.ops import checks, fields, pointwise, reduction, sameas
from kgen.ops.yamlload import load_yaml
from kgen.paths import data_dir
from kgen.refexpr import check as check_reference
from kgen.spec import Baseline, OpSpec, Param, Reduction, Tensor, Tolerance

TOP_KEYS = {"name", "description", "sizes", "params", "tensors", "dtypes", "reference",
            "reference_file", "kernelbench", "checks", "test_sizes", "bench_sizes", "flops",
            "bytes", "baseline", "same_as", "pointwise", "reduce"}


def available_ops() -> list[str]:
    return sorted(p.parent.name for p in data_dir("reference_kernels").glob("*/spec.yaml"))


def shipped_path(name: str | None) -> Path:
    if name not in available_ops():
        raise UsageError(f"unknown op {name!r}; shipped ops: {', '.join(available_ops())} "
                         "(or pass --op-file path/spec.yaml)")
    return data_dir("reference_kernels") / str(name) / "spec.yaml"


def load_op(name: str | None = None, path: Path | None = None) -> OpSpec:
    """The spec of a shipped op by name, or of a user's spec file; UsageError names the field."""
    path = shipped_path(name) if path is None else Path(path)
    data = load_yaml(path)  # size, UTF-8, depth and alias limits (a spec file is untrusted input)
    return build_spec(data, path.parent, str(path))


def build_spec(data: Any, folder: Path, label: str) -> OpSpec:
    """A validated OpSpec from parsed YAML (or from a KernelBench problem's derived fields)."""
    try:
        return _build(data, folder)
    except (KeyError, TypeError, ValueError, expr.ExprError) as exc:
        text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        raise UsageError(f"invalid spec {label}: {text}") from exc


def _build(data: Any, folder: Path) -> OpSpec:
    if not isinstance(data, dict):
        raise TypeError("the file should hold a mapping of fields")
    fields.unknown_keys(data, TOP_KEYS, "")
    name = checks.op_name(fields.field(data, "name", str))
    sizes = tuple(checks.symbol(s, "sizes") for s in fields.field(data, "sizes", list))
    if len(set(sizes)) != len(sizes):
        raise ValueError("field 'sizes' names a symbol twice")
    symbols = frozenset(sizes)
    params = fields.params(data.get("params"), set(symbols))
    tensors = [fields.tensor(t, d, symbols) for t, d in fields.field(data, "tensors", dict).items()]
    taken = set(symbols) | {p.name for p in params}
    for t in tensors:
        if t.name in taken:
            raise ValueError(f"field 'tensors.{t.name}': the name is already a size or parameter")
    outputs = [t for t in tensors if t.role == "output"]
    if not outputs:
        raise ValueError("field 'tensors' needs at least one output")
    operands = [t.name for t in tensors if t.role != "output"]
    names = operands + sorted(taken)
    reference = fields.reference(data, folder, names, operands)
    if reference.kind == "kernelbench":
        _check_attributes(tensors)
    test = fields.entries(checks.nonempty(fields.field(data, "test_sizes", list), "test_sizes",
                                          "entry (else every candidate passes)"),
                          "test_sizes", sizes, params)
    bench = fields.entries(fields.field(data, "bench_sizes", list), "bench_sizes", sizes, params)
    checks.elements({t.name: t.shape for t in tensors}, test + bench, "sizes")
    claims = [k for k in ("same_as", "pointwise", "reduce") if k in data]
    if len(claims) > 1:
        raise ValueError(f"fields '{claims[0]}' and '{claims[1]}' both say what the op "
                         "computes: give one")
    same_as = fields.field(data, "same_as", str) if "same_as" in data else ""
    if same_as:
        sameas.binding(same_as, tensors, sizes, params)
    expression = _pointwise(data, tensors, sizes, params)
    reduce = _reduce(data, tensors, sizes, params)
    return OpSpec(name, str(data.get("description", "")).strip(), sizes, tuple(tensors),
                  _dtypes(data), reference, test, bench,
                  _formula(data, "flops", symbols), _formula(data, "bytes", symbols | {"ELEM"}),
                  folder, params, fields.checks(data.get("checks"), outputs),
                  _baseline(data.get("baseline"), names), same_as, expression, reduce)


def _pointwise(data: dict[str, Any], tensors: list[Tensor], sizes: tuple[str, ...],
               params: tuple[Param, ...]) -> str:
    """The `pointwise` expression in its canonical form, checked and bound; "" without one."""
    if "pointwise" not in data:
        return ""
    text = fields.field(data, "pointwise", str)
    try:
        canonical = pointwise.check(text)
    except ValueError as exc:
        raise ValueError(f"field 'pointwise': {exc}") from exc
    sameas.pointwise_binding(tensors, sizes, params)
    return canonical


def _reduce(data: dict[str, Any], tensors: list[Tensor], sizes: tuple[str, ...],
            params: tuple[Param, ...]) -> Reduction:
    """The `reduce` field, checked and bound, its dim made non-negative; none without one."""
    if "reduce" not in data:
        return Reduction()
    found, _ = reduction.bind(reduction.parse(data["reduce"]), tensors, sizes, params)
    return found


def _dtypes(data: dict[str, Any]) -> dict[str, Tolerance]:
    found = {}
    for dname, d in fields.field(data, "dtypes", dict).items():
        where = f"dtypes.{dname}"
        if dname not in DTYPES:
            raise ValueError(f"field '{where}': unknown dtype (known: {', '.join(DTYPES)})")
        if not isinstance(d, dict):
            raise TypeError(f"field '{where}' should be a mapping with reference, atol, rtol")
        fields.unknown_keys(d, {"reference", "atol", "rtol"}, where)
        reference = str(fields.field(d, "reference", str, where))
        if reference not in DTYPES:
            raise ValueError(f"field '{where}.reference': unknown dtype {reference!r} "
                             f"(known: {', '.join(DTYPES)})")
        atol = checks.tolerance(fields.field(d, "atol", (int, float), where), f"{where}.atol")
        rtol = checks.tolerance(fields.field(d, "rtol", (int, float), where), f"{where}.rtol")
        found[dname] = Tolerance(reference, atol, rtol)
    if not found:
        raise ValueError("field 'dtypes' needs at least one dtype")
    return found


def _formula(data: dict[str, Any], key: str, symbols: frozenset[str]) -> str:
    text = str(fields.field(data, key, (str, int)))
    fields.check_expr(text, symbols, key)
    return text


def _baseline(data: Any, names: list[str]) -> Baseline:
    """`baseline: {label: cuBLAS (torch.matmul), expression: torch.matmul(A, B)}` (optional)."""
    if data is None:
        return Baseline()
    if not isinstance(data, dict):
        raise TypeError("field 'baseline' should be a mapping with label and expression")
    fields.unknown_keys(data, {"label", "expression"}, "baseline")
    label = str(data.get("label", ""))
    expression = str(data.get("expression", ""))
    if expression:
        try:
            check_reference(expression, names)
        except UsageError as exc:
            raise ValueError(f"field 'baseline.expression': {exc}") from exc
    return Baseline(label, expression)


def _check_attributes(tensors: list[Any]) -> None:
    for t in tensors:
        if t.role == "weight" and not t.attribute:
            raise ValueError(f"field 'tensors.{t.name}.attribute': a KernelBench weight names "
                             "the Model attribute it is (e.g. conv.weight)")
