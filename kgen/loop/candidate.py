"""A candidate kernel: pull its source out of a model reply, parse its `// kgen:` launch contract.

  // kgen: op=gemm dtype=float16
  // kgen: launch gemm_f16 grid=(cdiv(N,128),cdiv(M,128)) block=(256) smem=49152 args=(A,B,C,M,N,K)

Expressions use only the spec's size symbols, integers, + - * // %, cdiv, min, max (kgen.expr).
"""

from __future__ import annotations

import re

from kgen import expr
from kgen.compile import Diagnostic
from kgen.contract import SMS, Contract, Launch, TensorMapArg
from kgen.dtypes import DTYPES
from kgen.loop.geometry import STATIC_SMS
from kgen.models.base import strip_reasoning
from kgen.spec import OpSpec

_HEADER = re.compile(r"^\s*//\s*kgen:\s*(?P<body>.*)$")
_FENCE = re.compile(r"```[ \t]*(?P<lang>[\w+#-]*)[^\n]*\n(?P<code>.*?)```", re.DOTALL)
_CODE_LANGS = {"", "cuda", "cu", "cpp", "c++", "cxx", "c", "cuh"}
MAX_LAUNCHES = 64  # launch lines read from one contract
_CALLED = re.compile(r"([A-Za-z_]\w*)\s*\(")


def extract_source(reply: str) -> str | None:
    """The kernel in a reply: the fenced cuda/cpp block with __global__ (the longest), or None."""
    blocks = [m.group("code") for m in _FENCE.finditer(strip_reasoning(reply))
              if m.group("lang").lower() in _CODE_LANGS]
    kernels = [b for b in blocks if "__global__" in b]
    if not kernels:
        return None
    return max(kernels, key=len).rstrip() + "\n"


def parse_contract(source: str,
                   spec: OpSpec | None) -> tuple[Contract | None, tuple[Diagnostic, ...]]:
    """Read the `// kgen:` lines; every problem is a Diagnostic on its header line."""
    fields, launches, problems = _read_header(source, spec)
    lines = source.splitlines()
    op = fields.get("op", ("", 0))[0]
    dtype = fields.get("dtype", ("", 0))[0]
    if spec is not None:
        problems += _spec_problems(source, spec, fields, launches)
    if launches and not re.search(r'extern\s+"C"', source):
        # Without extern "C" the symbol is C++-mangled and the loader cannot find it by name.
        first = launches[0].line
        problems.append(_problem(first, 'kernels must be declared extern "C" __global__ so '
                                 "kgen can find them by name", lines[first - 1]))
    if problems:
        return None, tuple(problems)
    return Contract(op or (spec.name if spec else ""), dtype, tuple(launches),
                    fields.get("choices", ("", 0))[0]), ()


_Fields = dict[str, tuple[str, int]]  # key -> (value, header line)


def _read_header(source: str, spec: OpSpec | None
                 ) -> tuple[_Fields, list[Launch], list[Diagnostic]]:
    fields: _Fields = {}
    launches: list[Launch] = []
    problems: list[Diagnostic] = []
    launch_lines = 0
    for number, text in enumerate(source.splitlines(), start=1):
        m = _HEADER.match(text)
        if not m:
            continue
        body = m.group("body").strip()
        try:
            if body.startswith("launch"):
                launch_lines += 1
                if launch_lines > MAX_LAUNCHES:  # the rest is not read: work stays bounded
                    problems.append(_problem(number, f"more than {MAX_LAUNCHES} launch lines; "
                                             "a contract runs a few kernels", text))
                    break
                launches.append(_parse_launch(body[len("launch"):], number, spec))
            elif body.startswith("choices"):
                fields["choices"] = (body[len("choices"):].strip(), number)
            else:
                for key, value in _pairs(body).items():
                    fields[key] = (value, number)
        except (ValueError, expr.ExprError) as exc:
            problems.append(_problem(number, str(exc), text))
    if not launch_lines:
        problems.append(_problem(None, "no `// kgen: launch ...` line: say how to launch the "
                                 "kernel (see the contract in the prompt)", ""))
    return fields, launches, problems


def _spec_problems(source: str, spec: OpSpec, fields: _Fields,
                   launches: list[Launch]) -> list[Diagnostic]:
    """The header against the op: its name, dtype, kernels defined, every output passed."""
    lines = source.splitlines()
    problems = []
    op, dtype = fields.get("op", ("", 0))[0], fields.get("dtype", ("", 0))[0]
    if "op" in fields and op != spec.name:
        problems.append(_problem(fields["op"][1], f"op={op} but the task is {spec.name}",
                                 lines[fields["op"][1] - 1]))
    if dtype not in spec.dtypes:
        line = fields["dtype"][1] if "dtype" in fields else None
        problems.append(_problem(line, f"dtype={dtype or '(missing)'}: expected one of "
                                 f"{', '.join(spec.dtypes)}", lines[line - 1] if line else ""))
    called = set(_CALLED.findall(source))  # one pass, however many launch lines
    for launch in launches:
        if launch.kernel not in called:
            problems.append(_problem(launch.line, f"kernel {launch.kernel} is launched but "
                                     "not defined in the file", lines[launch.line - 1]))
    passed = {arg.tensor if isinstance(arg, TensorMapArg) else arg
              for launch in launches for arg in launch.arguments()}
    unwritten = [t.name for t in spec.outputs if t.name not in passed]
    if launches and unwritten:
        first = launches[0].line
        problems.append(_problem(first, f"no launch passes the output "
                                 f"{', '.join(unwritten)} in args=", lines[first - 1]))
    if launches and dtype in spec.dtypes and not problems:
        problems += _size_problems(spec, dtype, launches, lines)
    return problems




def _size_problems(spec: OpSpec, dtype: str, launches: list[Launch],
                   lines: list[str]) -> list[Diagnostic]:
    """At every test and bench size: some launch runs, and its tensor maps can be built."""
    problems: list[Diagnostic] = []
    for sizes in (*spec.test_sizes, *spec.bench_sizes):
        values = {**sizes, SMS: STATIC_SMS}
        try:
            running = [launch for launch in launches if launch.runs_at(values)]
        except expr.ExprError as exc:
            return [_problem(launches[0].line, str(exc), lines[launches[0].line - 1])]
        if not running:
            problems.append(_problem(launches[0].line, f"no launch runs at {_label(sizes)} "
                                     "(every when= is false there)", lines[launches[0].line - 1]))
        for launch in running:
            for text in tensor_map_problems(launch, spec, dtype, values):
                problems.append(_problem(launch.line, text, lines[launch.line - 1]))
        if problems:
            return problems[:4]  # the first failing size says enough
    return problems


def _problem(line: int | None, message: str, text: str) -> Diagnostic:
    return Diagnostic("error", line, None, None, f"launch contract: {message}", text[:300],
                      category="contract")


def _parse_launch(body: str, line: int, spec: OpSpec | None) -> Launch:
    parts = body.strip().split(None, 1)
    if not parts or not re.fullmatch(r"[A-Za-z_]\w*", parts[0]):
        raise ValueError("`launch` must be followed by the kernel name")
    values = _pairs(parts[1] if len(parts) > 1 else "")
    missing = [k for k in ("grid", "block", "args") if k not in values]
    if missing:
        raise ValueError(f"launch {parts[0]} is missing {', '.join(missing)}=")
    unknown_keys = set(values) - {"grid", "block", "smem", "args", "cluster", "when"}
    if unknown_keys:
        raise ValueError(f"launch {parts[0]}: unknown field(s) {', '.join(sorted(unknown_keys))}"
                         " (fields: grid, block, smem, args, cluster, when)")
    grid, block = _tuple(values["grid"]), _tuple(values["block"])
    cluster = _tuple(values["cluster"]) if "cluster" in values else ()
    if not 1 <= len(grid) <= 3 or not 1 <= len(block) <= 3 or len(cluster) > 3:
        raise ValueError("grid, block and cluster take 1 to 3 expressions, x first")
    _check_block(block)
    launch = Launch(parts[0], grid, block, values.get("smem", "0"), _tuple(values["args"]), line,
                    cluster, values.get("when", ""))
    if spec is not None:
        _check_names(launch, spec)
    return launch


def _check_names(launch: Launch, spec: OpSpec) -> None:
    """Every expression uses known symbols; every argument is a tensor, size, parameter or
    tmap(tensor)."""
    symbols = frozenset(spec.sizes) | {SMS}
    params = {p.name for p in spec.params}
    for e in (*launch.grid, *launch.block, launch.smem, *launch.cluster,
              *([launch.when] if launch.when else [])):
        expr.check(e, symbols)
    tensors = {t.name: t for t in spec.tensors}
    for arg in launch.arguments():
        if isinstance(arg, TensorMapArg):
            _check_tensor_map(arg, tensors, symbols)
        elif arg not in symbols and arg not in tensors and arg not in params:
            named = f", parameters ({', '.join(sorted(params))})" if params else ""
            raise ValueError(f"unknown argument {arg}; arguments are tensors "
                             f"({', '.join(tensors)}), sizes ({', '.join(spec.sizes)}){named} or "
                             "tmap(TENSOR, box=(...), swizzle=...)")


def _check_tensor_map(arg: TensorMapArg, tensors: dict, symbols: frozenset[str]) -> None:
    """What cuTensorMapEncodeTiled requires of a box, before anything runs."""
    tensor = tensors.get(arg.tensor)
    if tensor is None:
        raise ValueError(f"tmap({arg.tensor}, ...): no tensor {arg.tensor} in the op")
    if len(arg.box) != len(tensor.shape):
        raise ValueError(f"tmap({arg.tensor}, box=...): the box has {len(arg.box)} dims but "
                         f"{arg.tensor} has {len(tensor.shape)} (box is x-first: innermost "
                         "dimension first)")
    for b in arg.box:
        expr.check(b, symbols)


def tensor_map_problems(launch: Launch, spec: OpSpec, dtype: str,
                        sizes: dict[str, int]) -> list[str]:
    """What would make cuTensorMapEncodeTiled refuse this launch's maps at these sizes."""
    out = []
    size = DTYPES[dtype].size
    for arg in launch.arguments():
        if not isinstance(arg, TensorMapArg):
            continue
        tensor = next(t for t in spec.tensors if t.name == arg.tensor)
        shape = spec.shape(tensor, sizes)
        box = arg.box_dims(sizes)
        name = f"tmap({arg.tensor})"
        if any(not 1 <= b <= 256 for b in box):
            out.append(f"{name}: box={box} has a dimension outside 1..256")
        if box[0] * size % 16:
            out.append(f"{name}: the inner box dimension is {box[0] * size} bytes, not a "
                       "multiple of 16")
        if arg.swizzle and box[0] * size > arg.swizzle:
            out.append(f"{name}: the inner box dimension ({box[0] * size} bytes) exceeds the "
                       f"{arg.swizzle}-byte swizzle span")
        for dim in range(1, len(shape) if not arg.optional else 0):
            stride = size
            for d in shape[dim:]:
                stride *= d
            if stride % 16:
                out.append(f"{name}: at {_label(sizes)} the stride of dimension {dim} is "
                           f"{stride} bytes, not a multiple of 16 (TMA needs 16-byte strides); "
                           "guard this launch with when=(...) and add a fallback launch")
                break
    return out


def _label(sizes: dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in sizes.items())


def _check_block(block: tuple[str, ...]) -> None:
    """A constant block must fit CUDA's limits: 1024 threads, x and y <= 1024, z <= 64."""
    try:
        dims = [expr.evaluate(b, {}) for b in block]
    except expr.ExprError:
        return  # depends on the sizes: checked when it is launched
    threads = 1
    for d in dims:
        threads *= d
    if (min(dims) < 1 or threads > 1024 or max(dims[:2]) > 1024
            or (len(dims) == 3 and dims[2] > 64)):
        raise ValueError(f"block=({', '.join(block)}) is not a valid block: at most 1024 threads "
                         "in all, x and y at most 1024, z at most 64, none below 1")


def _tuple(value: str) -> tuple[str, ...]:
    value = value.strip()
    if value.startswith("(") and value.endswith(")"):
        value = value[1:-1]
    return tuple(p.strip() for p in _split_top(value, ",") if p.strip())


def _pairs(text: str) -> dict[str, str]:
    """key=value pairs separated by spaces; values may hold parentheses with spaces inside."""
    result: dict[str, str] = {}
    # Models write tabs and `key = value` too; normalise to single spaces and `key=value`.
    text = re.sub(r"\s*=\s*", "=", re.sub(r"\s+", " ", text.strip()))
    for item in _split_top(text, " "):
        if not item:
            continue
        if "=" not in item:
            raise ValueError(f"expected key=value, got {item!r}")
        key, value = item.split("=", 1)
        result[key.strip()] = value.strip()
    return result


def _split_top(text: str, sep: str) -> list[str]:
    """Split on sep outside parentheses."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            raise ValueError(f"unbalanced parentheses in {text!r}")
        if ch == sep and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if depth:
        raise ValueError(f"unbalanced parentheses in {text!r}")
    parts.append("".join(current))
    return parts
