"""Field by field checks of a spec file; each raises ValueError/TypeError/KeyError naming the field
(`tensors.X.init.std`), which load_op turns into one UsageError line."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from kgen import expr
from kgen.dtypes import DTYPES
from kgen.errors import UsageError
from kgen.ops import checks as limits
from kgen.refexpr import check as check_reference
from kgen.spec import CHECKS, DISTS, PARAM_DTYPES, ROLES, Init, Param, Reference, Tensor

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Names a kernel argument cannot have: C++ keywords kgen's prompts and ModelNew would clash with.
RESERVED = frozenset({"int", "float", "double", "char", "void", "long", "short", "const", "auto",
                       "register", "signed", "unsigned", "struct", "class", "union", "enum",
                       "template", "typename", "namespace", "new", "delete", "this", "operator",
                       "ELEM", "cdiv", "min", "max"})
TENSOR_KEYS = {"shape", "role", "dtype", "init", "attribute"}


def field(data: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str = "") -> Any:
    """data[key], which must exist and be of `kind`."""
    name = f"{where}.{key}" if where else key
    if key not in data:
        raise KeyError(f"missing field '{name}'")
    kinds = kind if isinstance(kind, tuple) else (kind,)
    value = data[key]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise TypeError(f"field '{name}' should be a {_kind_name(kind)}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    words = {"list": "list", "dict": "mapping", "str": "string", "int": "number",
             "float": "number"}
    return " or ".join(dict.fromkeys(words.get(k.__name__, k.__name__) for k in kinds))


def identifier(name: Any, where: str) -> str:
    if not isinstance(name, str) or not IDENT.fullmatch(name) or name in RESERVED:
        raise ValueError(f"field '{where}': {name!r} is not a usable name (letters, digits and _, "
                         "not starting with a digit, not a C++ keyword)")
    return name


def unknown_keys(data: dict[str, Any], known: set[str], where: str) -> None:
    extra = sorted(str(k) for k in data if k not in known)
    if extra:
        place = f"field '{where}.{extra[0]}'" if where else f"field '{extra[0]}'"
        raise ValueError(f"{place} is not a spec field (known: {', '.join(sorted(known))})")


def check_expr(text: str, symbols: frozenset[str], where: str) -> None:
    try:
        expr.check(text, symbols)
    except expr.ExprError as exc:
        raise ValueError(f"field '{where}': {exc}") from exc


def number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"field '{where}' should be a number")
    return float(value)


def params(data: Any, taken: set[str]) -> tuple[Param, ...]:
    """`params: {eps: {dtype: float32, value: 1.0e-5}}`."""
    if data is None:
        return ()
    if not isinstance(data, dict):
        raise TypeError("field 'params' should be a mapping of name -> {dtype, value}")
    found = []
    for name, entry in data.items():
        where = f"params.{name}"
        identifier(name, where)
        if name in taken:
            raise ValueError(f"field '{where}': the name is already a size symbol")
        if not isinstance(entry, dict):
            raise TypeError(f"field '{where}' should be a mapping with dtype and value")
        unknown_keys(entry, {"dtype", "value"}, where)
        dtype = field(entry, "dtype", str, where)
        if dtype not in PARAM_DTYPES:
            raise ValueError(f"field '{where}.dtype': {dtype!r} is not one of "
                             f"{', '.join(PARAM_DTYPES)}")
        found.append(Param(name, dtype, param_value(entry.get("value"), dtype, f"{where}.value")))
    return tuple(found)


def param_value(value: Any, dtype: str, where: str) -> float | int:
    if DTYPES[dtype].is_float:
        return number(value, where)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"field '{where}' should be an integer ({dtype})")
    limit = 2 ** (8 * DTYPES[dtype].size - 1)
    if not -limit <= value < limit:
        raise ValueError(f"field '{where}': {value} does not fit in {dtype}")
    return value


def init(data: Any, where: str, dtype: str | None) -> Init:
    """`init: {dist: normal, mean: 3.0, std: 2.0}`; default uniform [-1, 1)."""
    if data is None:
        return Init() if dtype is None or DTYPES[dtype].is_float else Init("randint", 0, 100)
    if not isinstance(data, dict):
        raise TypeError(f"field '{where}' should be a mapping such as {{dist: uniform, low: -1, "
                        "high: 1}")
    dist = field(data, "dist", str, where)
    if dist not in DISTS:
        raise ValueError(f"field '{where}.dist': {dist!r} is not one of {', '.join(DISTS)}")
    first, second = DISTS[dist]
    unknown_keys(data, {"dist", first, second}, where)
    a = number(data.get(first), f"{where}.{first}")
    b = number(data.get(second), f"{where}.{second}")
    if dist == "normal" and b <= 0:
        raise ValueError(f"field '{where}.std' must be positive")
    if dist != "normal" and a >= b:
        raise ValueError(f"field '{where}': low must be below high")
    if dist == "randint" and not (a.is_integer() and b.is_integer()):
        raise ValueError(f"field '{where}': randint takes integer low and high")
    if dtype is not None and not DTYPES[dtype].is_float and dist != "randint":
        raise ValueError(f"field '{where}.dist': an {dtype} tensor takes dist: randint")
    return Init(dist, a, b)


def tensor(name: Any, data: Any, symbols: frozenset[str]) -> Tensor:
    where = f"tensors.{name}"
    identifier(name, where)
    if not isinstance(data, dict):
        raise TypeError(f"field '{where}' should be a mapping with shape and role")
    unknown_keys(data, TENSOR_KEYS, where)
    if data.get("role") not in ROLES:
        raise ValueError(f"field '{where}.role' must be one of {', '.join(ROLES)}")
    shape = tuple(str(d) for d in field(data, "shape", list, where))
    for dim in shape:
        check_expr(dim, symbols, f"{where}.shape")
    dtype = data.get("dtype")
    if dtype is not None and dtype not in DTYPES:
        raise ValueError(f"field '{where}.dtype': unknown dtype {dtype!r} "
                         f"(known: {', '.join(DTYPES)})")
    if data["role"] == "output" and "init" in data:
        raise ValueError(f"field '{where}.init': outputs are written by the kernel, not drawn")
    attribute = data.get("attribute", "")
    if not isinstance(attribute, str) or (attribute and data["role"] != "weight"):
        raise ValueError(f"field '{where}.attribute' names a Model attribute, for weights only")
    return Tensor(name, shape, data["role"], dtype, init(data.get("init"), f"{where}.init", dtype),
                  attribute)


def entries(data: Any, key: str, symbols: tuple[str, ...], found: tuple[Param, ...]
            ) -> tuple[dict[str, Any], ...]:
    """test_sizes / bench_sizes: every size symbol, optionally parameter overrides."""
    if not isinstance(data, list):
        raise TypeError(f"field '{key}' should be a list")
    by_name = {p.name: p for p in found}
    out = []
    for i, entry in enumerate(data):
        where = f"{key}[{i}]"
        if not isinstance(entry, dict) or not set(symbols) <= set(entry):
            raise ValueError(f"each entry of '{key}' must give {', '.join(sorted(symbols))} "
                             f"(entry {i}: {entry})")
        extra = [k for k in entry if k not in symbols and k not in by_name]
        if extra:
            raise ValueError(f"field '{where}': {extra[0]!r} is neither a size nor a parameter")
        clean: dict[str, Any] = {str(s): limits.size_value(entry[s], f"{key}.{s}")
                                 for s in symbols}
        for k, v in entry.items():
            if k in by_name:
                clean[k] = param_value(v, by_name[k].dtype, f"{where}.{k}")
        out.append(clean)
    return tuple(out)


def checks(data: Any, outputs: list[Tensor]) -> tuple[str, ...]:
    if data is None:
        return ()
    if not isinstance(data, list) or not all(isinstance(c, str) for c in data):
        raise TypeError("field 'checks' should be a list of check names")
    for name in data:
        if name not in CHECKS:
            raise ValueError(f"field 'checks': unknown check {name!r} (known: {', '.join(CHECKS)})")
    for name in ("row_sums", "log_row_sums"):
        if name in data and not outputs[0].shape:
            raise ValueError(f"field 'checks': {name} needs a first output with at least one "
                             "dim")
    return tuple(data)


def reference(data: dict[str, Any], folder: Path, names: list[str], operands: list[str]
              ) -> Reference:
    """Exactly one of reference (an expression), reference_file or kernelbench."""
    given = [k for k in ("reference", "reference_file", "kernelbench") if k in data]
    if len(given) != 1:
        raise ValueError("give exactly one of the fields 'reference' (a torch expression), "
                         "'reference_file' or 'kernelbench'" + (f" (got {', '.join(given)})"
                                                                 if given else ""))
    key = given[0]
    text = field(data, key, str)
    if key == "reference":
        try:
            check_reference(text, names)
        except UsageError as exc:
            raise ValueError(f"field 'reference': {exc}") from exc
        return Reference("expression", text)
    source = read_beside(folder, text, key)
    if key == "reference_file":
        check_reference_function(source, operands, set(names) - set(operands))
        return Reference("file", source, text)
    check_problem(source)
    return Reference("kernelbench", source, text)


def read_beside(folder: Path, name: str, key: str) -> str:
    path = folder / name
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"field '{key}': cannot read {path}: "
                         f"{getattr(exc, 'strerror', None) or exc}") from exc


def _parse(source: str, key: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        raise ValueError(f"field '{key}': the file does not parse (line {exc.lineno}: "
                         f"{exc.msg})") from exc


def check_reference_function(source: str, operands: list[str], keywords: set[str]) -> None:
    """`def reference(X, weight, *, M, N, eps)`: the operands in order, then keywords."""
    funcs = [n for n in _parse(source, "reference_file").body
             if isinstance(n, ast.FunctionDef) and n.name == "reference"]
    if not funcs:
        raise ValueError("field 'reference_file': the file defines no function `reference`")
    args = funcs[0].args
    positional = [a.arg for a in args.posonlyargs + args.args]
    if positional != operands:
        raise ValueError(f"field 'reference_file': reference() takes ({', '.join(positional)}) "
                         f"but the spec's inputs and weights are ({', '.join(operands)}), in order")
    unknown = [a.arg for a in args.kwonlyargs if a.arg not in keywords]
    if unknown:
        raise ValueError(f"field 'reference_file': keyword {unknown[0]!r} of reference() is "
                         "neither a size nor a parameter")


def check_problem(source: str) -> None:
    """A KernelBench problem defines class Model, get_inputs and get_init_inputs."""
    names = {n.name for n in _parse(source, "kernelbench").body
             if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in names]
    if missing:
        raise ValueError(f"field 'kernelbench': the file does not define {', '.join(missing)} "
                         "(a KernelBench problem has class Model, get_inputs, get_init_inputs)")
