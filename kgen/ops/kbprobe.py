"""`python -m kgen.ops.kbprobe PROBLEM.py`: what a KernelBench problem's tensors are, without
running it at full size. Run by kgen.ops.kernelbench in a subprocess with a timeout (the file is
user code); prints one `KGEN-PROBE {json}` line.

The file is executed on torch's meta device: Model(*get_init_inputs()) and get_inputs() make
tensors with shapes and dtypes but no data, and forward on them gives the outputs' shapes. A
dispatch mode watches every op forward runs: random ops (tagged nondeterministic_seeded), ops
whose output shape depends on the values (dynamic_output_shape), and in-place writes to an input
are refused, each with a line saying what and why. It also notes whether forward is exactly
one matrix product of its two inputs (`torch.matmul(A, B)`), or on its one 2-D input one
softmax or log-softmax over the last dim (`torch.softmax(x, dim=-1)`), a tanh-form GELU or a
SiLU, which the spec then says with `same_as: gemm` (softmax, log_softmax, gelu, silu); else
whether it is a chain of elementwise ops on that input, which the spec says as `pointwise: EXPR`
(kgen.ops.pointwise), or one reduction of it over one dim, `reduce: {op: sum, dim: 1}`
(kgen.ops.reduction).
"""

from __future__ import annotations

import ast
import inspect
import json
import sys
from pathlib import Path
from typing import Any

from kgen.ops import pointwise, reduction

MARKER = "KGEN-PROBE"
_RANDOM_NAMES = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like",
                 "randint_like", "bernoulli", "multinomial", "normal", "poisson", "dropout",
                 "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
                 "rrelu", "uniform_", "normal_", "exponential_", "geometric_", "random_"}


class Refused(Exception):
    """What does not convert, in words for the user."""


PARTS = ("Model", "get_inputs", "get_init_inputs")


def undefined_parts(source: str) -> list[str]:
    """Which of a problem's three parts the file's top level neither defines, assigns nor
    imports, read without running it: a file that is not a problem is refused before it runs.
    Raises Refused for a file that is not Python."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise Refused(f"not Python: {exc.msg} (line {exc.lineno})") from exc
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(a.name == "*" for a in node.names):
                return []  # a star import may bring any of them
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:  # assignments, and definitions inside `if` or `try` blocks (read permissively)
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                    names.add(inner.id)
                elif isinstance(inner, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(inner.name)
    return [part for part in PARTS if part not in names]


def random_calls(source: str) -> list[str]:
    """`line N: torch.rand(...)` for each random call inside Model's methods (an AST scan)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.ClassDef) and node.name == "Model"):
            continue
        for method in node.body:
            if not isinstance(method, ast.FunctionDef) or method.name == "__init__":
                continue
            for call in ast.walk(method):
                if isinstance(call, ast.Call) and _random(call):
                    found.append(f"line {call.lineno}: {ast.unparse(call)[:60]}")
    return found


def _random(call: ast.Call) -> bool:
    name = call.func.attr if isinstance(call.func, ast.Attribute) else (
        call.func.id if isinstance(call.func, ast.Name) else "")
    if name not in _RANDOM_NAMES:
        return False
    training = [k.value for k in call.keywords if k.arg == "training"]
    return not (training and isinstance(training[0], ast.Constant) and training[0].value is False)


# one op forward ran: (the aten op, its arguments, its keyword arguments, its result)
Call = tuple[Any, tuple, dict, Any]


def _watcher(inputs: list[Any], calls: list[Call]) -> Any:
    """The dispatch mode that refuses what does not convert; it lists every call in `calls`
    (the op, its arguments, its keyword arguments, its result)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    storages = {t.untyped_storage()._cdata for t in inputs}

    class Watcher(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if torch.Tag.nondeterministic_seeded in func.tags:
                raise Refused(f"forward uses randomness ({func}: torch.rand*, dropout in train "
                              "mode, ...): its output is not a function of its inputs")
            if torch.Tag.dynamic_output_shape in func.tags:
                raise Refused(f"an output shape depends on the input values ({func}: nonzero, "
                              "masked_select, boolean indexing, unique, ...): a kernel's output "
                              "buffers are allocated before it runs")
            for i, arg in enumerate(func._schema.arguments):
                value = args[i] if i < len(args) else kwargs.get(arg.name)
                if (arg.alias_info is not None and arg.alias_info.is_write
                        and isinstance(value, torch.Tensor)
                        and value.untyped_storage()._cdata in storages):
                    raise Refused(f"forward modifies an input in place ({func}): the reference "
                                  "would change what the kernel reads")
            result = func(*args, **kwargs)
            calls.append((func, args, kwargs, result))
            return result

    return Watcher()


def _forward_names(model: Any, count: int) -> list[str]:
    params = [p for p in inspect.signature(model.forward).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = [p.name for p in params][:count]
    return names + [f"x{i}" for i in range(len(names), count)]


def _describe(t: Any) -> dict[str, Any]:
    return {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}


def _instantiate(path: Path, source: str) -> tuple[dict[str, Any], Any, list[Any]]:
    """Exec the file on the meta device: its namespace, Model(*get_init_inputs()), get_inputs()."""
    import torch

    space: dict[str, Any] = {"__name__": "kgen_kernelbench_problem", "__file__": str(path)}
    with torch.device("meta"):
        exec(compile(source, str(path), "exec"), space)
        for name in ("Model", "get_inputs", "get_init_inputs"):
            if name not in space:
                raise Refused(f"the file defines no {name} (a KernelBench problem has class "
                              "Model, get_inputs and get_init_inputs)")
        torch.manual_seed(0)
        model = space["Model"](*space["get_init_inputs"]())
        inputs = list(space["get_inputs"]())
    bad = [i for i, t in enumerate(inputs) if not isinstance(t, torch.Tensor)]
    if bad:
        raise Refused(f"get_inputs() item {bad[0]} is a {type(inputs[bad[0]]).__name__}: only "
                      "tensors convert (pass other values through get_init_inputs)")
    return space, model, inputs


def probe(path: Path) -> dict[str, Any]:
    """The problem's inputs, weights, outputs, int constants and flop count, or Refused."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    source = path.read_text(errors="replace")
    missing = undefined_parts(source)
    if missing:
        listed = ", ".join(missing[:-1]) + (" or " if len(missing) > 1 else "") + missing[-1]
        raise Refused(f"the file defines no {listed} at its top level (a KernelBench problem "
                      "has class Model, get_inputs and get_init_inputs); nothing in it was run")
    static = random_calls(source)
    if static:
        raise Refused(f"forward uses randomness ({'; '.join(static)}): its output is not a "
                      "function of its inputs")
    space, model, inputs = _instantiate(path, source)
    counter = FlopCounterMode(display=False)
    calls: list[Call] = []
    try:
        with torch.device("meta"), counter, _watcher(inputs, calls):
            out = model(*inputs)
    except Refused:
        raise
    except Exception as exc:
        raise Refused(_meta_failure(exc)) from exc
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    if not outs or not all(isinstance(t, torch.Tensor) for t in outs):
        raise Refused(f"forward returns {type(out).__name__}: only a tensor or a tuple of "
                      "tensors converts")
    weights = [*model.named_parameters(), *model.named_buffers()]
    same_as = "" if weights else _same_as(calls, inputs, out)
    constants = {k: v for k, v in space.items() if type(v) is int and not k.startswith("_")}
    return {"inputs": [{"name": n, **_describe(t)}
                       for n, t in zip(_forward_names(model, len(inputs)), inputs, strict=True)],
            "weights": [{"attribute": n, **_describe(t)} for n, t in weights],
            "outputs": [_describe(t) for t in outs],
            "returns": "tuple" if isinstance(out, (tuple, list)) else "tensor",
            "constants": constants, "flops": int(counter.get_total_flops()),
            "same_as": same_as,
            "pointwise": "" if weights or same_as else _pointwise(calls, inputs, out),
            "reduce": {} if weights else (_reduce(calls, inputs, out)
                                          or _norm(calls, inputs, out)
                                          or _standardize(calls, inputs, out)),
            "layernorm": _layernorm(calls, inputs, out, weights),
            "doc": inspect.getdoc(space["Model"]) or ""}


def _same_as(calls: list[Call], inputs: list[Any], out: Any) -> str:
    """The shipped op forward is, where it ran that op alone on its inputs in order and returned
    the op's result itself; else "". "gemm": a 2-D matrix product of its two inputs
    (torch.matmul, torch.mm and @ all dispatch to aten.mm here). On its one 2-D input, in that
    input's dtype: "softmax" over the last dim (torch.softmax, F.softmax and Tensor.softmax
    dispatch to aten._softmax), "log_softmax" likewise (aten._log_softmax), "gelu" in its tanh
    form (F.gelu(x, approximate='tanh'), nn.GELU(approximate='tanh')), "silu" (F.silu,
    nn.SiLU, and x * torch.sigmoid(x), which dispatches to sigmoid then mul), "cumsum" along the
    last dim (torch.cumsum(x, dim=1), x.cumsum(-1); not with a dtype= conversion)."""
    import torch

    aten = torch.ops.aten
    if not calls or calls[-1][3] is not out:
        return ""
    if len(calls) == 2 and len(inputs) == 1 and inputs[0].dim() == 2:
        (f1, a1, k1, sig), (f2, a2, k2, _) = calls
        x = inputs[0]
        if (f1 is aten.sigmoid.default and len(a1) == 1 and a1[0] is x and not k1
                and f2 is aten.mul.Tensor and not k2 and len(a2) == 2
                and {id(a) for a in a2} == {id(x), id(sig)}):
            return "silu"
        return ""
    if len(calls) != 1:
        return ""
    func, args, kwargs, _ = calls[0]
    if (func is aten.mm.default and len(inputs) == 2 and len(args) == 2
            and args[0] is inputs[0] and args[1] is inputs[1]):
        return "gemm"
    if len(inputs) != 1 or inputs[0].dim() != 2 or not args or args[0] is not inputs[0]:
        return ""
    for shipped, softmax in (("softmax", aten._softmax.default),
                             ("log_softmax", aten._log_softmax.default)):
        if func is softmax and len(args) == 3 and args[1] in (1, -1) and not args[2]:
            return shipped
    if func is aten.gelu.default and len(args) == 1 and kwargs == {"approximate": "tanh"}:
        return "gelu"
    if func is aten.silu.default and len(args) == 1 and not kwargs:
        return "silu"
    if func is aten.cumsum.default and len(args) == 2 and args[1] in (1, -1) and not kwargs \
            and args[0].dtype.is_floating_point:
        return "cumsum"
    return ""


def _pointwise(calls: list[Call], inputs: list[Any], out: Any) -> str:
    """The `pointwise` expression of a forward that is a chain of elementwise ops on its one input
    (of one dim or more), each giving a tensor of the input's shape (and dtype, or bool for a
    comparison that where() reads), with only numbers besides; else "" (kgen.ops.pointwise)."""
    import torch

    if len(inputs) != 1 or inputs[0].dim() < 1 or not calls or calls[-1][3] is not out:
        return ""
    x = inputs[0]
    known: dict[int, str] = {id(x): "x"}  # tensor -> its expression

    def operand(value: Any, condition: bool = False) -> Any:
        if isinstance(value, torch.Tensor):
            if id(value) not in known:
                raise LookupError  # a tensor made inside forward, or a weight
            if value.dtype == torch.bool and not condition:  # a mask used as 0 or 1
                return f"where({known[id(value)]}, 1, 0)"
            return known[id(value)]
        if isinstance(value, (bool, int, float, str)) or value is None:
            return value
        raise LookupError

    for func, args, kwargs, result in calls:
        if (not isinstance(result, torch.Tensor) or result.shape != x.shape
                or result.dtype not in (x.dtype, torch.bool)):
            return ""
        name = str(func).removeprefix("aten.")
        try:
            text = pointwise.from_aten(
                name, [operand(a, name == "where.self" and i == 0) for i, a in enumerate(args)],
                {k: operand(v) for k, v in kwargs.items()})
        except LookupError:
            return ""
        if not text:
            return ""
        known[id(result)] = text
    try:  # e.g. a comparison used as a number, which the language leaves out
        return pointwise.check(known[id(out)]) if out.dtype == x.dtype else ""
    except ValueError:
        return ""


def _reduce(calls: list[Call], inputs: list[Any], out: Any) -> dict[str, Any]:
    """{op, dim} where forward is one reduction of its one floating input (2-D or more) over one
    dim, several adjacent ones or all, returning its result (the values of torch.max(x, dim));
    else {}."""
    if len(calls) != 1 or len(inputs) != 1:
        return {}
    func, args, kwargs, result = calls[0]
    x = inputs[0]
    values = result[0] if isinstance(result, (tuple, list)) else result
    if (values is not out or not args or args[0] is not x or x.dim() < 2
            or not x.dtype.is_floating_point):
        return {}
    found = reduction.from_aten(str(func).removeprefix("aten."), args, kwargs, x.dim())
    return {} if found is None else _field(found)


def _field(found: Any) -> dict[str, Any]:
    """A Reduction as the `reduce` field says it (several dims as a list)."""
    dims = found.dim if found.count == 1 else list(found.dims)
    return {"op": found.op, "dim": dims,
            **({"eps": found.eps} if found.op in reduction.EPS_OPS else {})}


def _norm(calls: list[Call], inputs: list[Any], out: Any) -> dict[str, Any]:
    """{op, dim, eps} where forward divides its one floating input (2-D or more) by a norm of it
    over one dim, several adjacent ones or all (kgen.ops.reduction.norm_from_aten: L1, L2 and
    Frobenius, RMS); else {}."""
    return _read(reduction.norm_from_aten, calls, inputs, out)


def _standardize(calls: list[Call], inputs: list[Any], out: Any) -> dict[str, Any]:
    """{op: layernorm, dim, eps} where forward is a layer norm of its one floating input (2-D or
    more) without weights, over its last dims (reduction.standardize_from_aten: F.layer_norm
    without weight and bias, nn.InstanceNorm without its affine, nn.GroupNorm without its affine
    and with one group or a group per channel); else {}."""
    return _read(reduction.standardize_from_aten, calls, inputs, out)


def _read(reader: Any, calls: list[Call], inputs: list[Any], out: Any) -> dict[str, Any]:
    """The `reduce` field a reader of (aten name, args, result) calls finds in a forward of one
    floating input (2-D or more), else {}. No call may pass keyword arguments but the `empty`
    buffer batch norm allocates (which the norm readers refuse as a call they do not know)."""
    import torch

    if len(inputs) != 1 or inputs[0].dim() < 2 or not inputs[0].dtype.is_floating_point \
            or any(kwargs for func, _, kwargs, _ in calls
                   if func is not torch.ops.aten.empty.memory_format):
        return {}
    found = reader(
        [(str(func).removeprefix("aten."), args, result) for func, args, _, result in calls],
        inputs[0], out)
    return {} if found is None else _field(found)


def _layernorm(calls: list[Call], inputs: list[Any], out: Any,
               weights: list[tuple[str, Any]]) -> dict[str, Any]:
    """{eps} where forward is one layer norm of its one floating input with the Model's two
    weights as its weight and bias, in that order (nn.LayerNorm(shape) with its affine, or
    F.layer_norm(x, shape, w, b, eps)), returning the normalized tensor; else {}. The weights'
    shape is the normalized dims'."""
    import torch

    if len(calls) != 1 or len(inputs) != 1 or len(weights) != 2:
        return {}
    func, args, kwargs, result = calls[0]
    x = inputs[0]
    if (func is not torch.ops.aten.native_layer_norm.default or kwargs or len(args) != 5
            or args[0] is not x or not x.dtype.is_floating_point
            or not isinstance(result, (tuple, list)) or result[0] is not out
            or args[2] is not weights[0][1] or args[3] is not weights[1][1]
            or type(args[4]) not in (int, float)):
        return {}
    return {"eps": float(args[4])}


def _meta_failure(exc: Exception) -> str:
    text = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    if "meta" in text.lower() and any(w in text for w in ("item", "data-dependent", "nonzero")):
        return (f"forward reads tensor values to decide shapes or control flow ({text}): "
                "data-dependent shapes do not convert")
    return f"forward does not run on torch's meta device, so its shapes cannot be derived: {text}"


def main(argv: list[str]) -> None:
    try:
        result: dict[str, Any] = probe(Path(argv[0]))
    except Refused as refused:
        result = {"refused": str(refused)}
    except Exception as exc:  # the user's file failed: say where, in one line
        result = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]}
    sys.stdout.write(f"\n{MARKER} {json.dumps(result)}\n")


if __name__ == "__main__":
    main(sys.argv[1:])
