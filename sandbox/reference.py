"""Inside the worker: what the outputs should be, and what a candidate is timed against.

Three kinds of reference (kgen.spec.Reference): a torch expression (evaluated by kgen.refexpr's
AST walker, never eval), a `reference` function in the user's own Python file beside the spec, or
a KernelBench problem's Model. Files are the user's code, like the spec; they run only here, after
the candidate, on copies of the inputs the kernel never had a pointer to.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from kgen import refexpr
from kgen.sandbox import kernelbench, userfile
from kgen.sandbox.rejected import Rejected
from kgen.spec import Entry, OpSpec


def _file_function(spec: OpSpec) -> Callable[..., Any]:
    namespace = userfile.load(spec.reference.text, spec.reference.file or "reference.py",
                              f"the spec's {spec.reference.file}")
    if not callable(namespace.get("reference")):
        raise Rejected("launch_error", f"the spec's {spec.reference.file} defines no "
                       "`reference` function")
    return namespace["reference"]


def _keywords(func: Callable[..., Any], values: dict[str, Any]) -> dict[str, Any]:
    """The size and parameter values the function declares (all of them if it takes **kw)."""
    params = inspect.signature(func).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return values
    return {p.name: values[p.name] for p in params if p.kind is p.KEYWORD_ONLY
            and p.name in values}


def scalars(spec: OpSpec, entry: Entry) -> dict[str, Any]:
    return {**spec.sizes_of(entry), **spec.params_at(entry)}


def evaluate(spec: OpSpec, tensors: dict[str, Any], entry: Entry, expression: str = "",
             device: str = "cpu", dtype: Any = None) -> Any:
    """The reference (or a baseline expression) on these tensors: a tensor or a tuple."""
    kind = "expression" if expression else spec.reference.kind
    if kind == "expression":
        text = expression or spec.reference.text
        return refexpr.evaluate(text, {**tensors, **scalars(spec, entry)})
    if kind == "file":
        func = _file_function(spec)
        return func(*(tensors[t.name] for t in spec.operands),
                    **_keywords(func, scalars(spec, entry)))
    return kernelbench.forward(spec, tensors, device, dtype)


def outputs(spec: OpSpec, value: Any, entry: Entry) -> dict[str, Any]:
    """Output name -> value, each reshaped to its spec shape; Rejected if the count is off."""
    values = value if isinstance(value, (tuple, list)) else (value,)
    if len(values) != len(spec.outputs):
        raise Rejected("launch_error", f"the spec's reference gives {len(values)} values for "
                       f"{len(spec.outputs)} outputs")
    return {t.name: v.reshape(spec.shape(t, entry)) for t, v in zip(spec.outputs, values,
                                                                     strict=True)}


def bind(host: dict[str, Any], device: str, float_dtype: Any) -> dict[str, Any]:
    """Copies on `device`; floating tensors in `float_dtype`, integer ones as they are."""
    return {k: v.to(device=device, dtype=float_dtype if v.is_floating_point() else v.dtype)
            for k, v in host.items()}


def baseline_label(spec: OpSpec) -> str:
    if spec.baseline.label:
        return spec.baseline.label
    if spec.reference.kind == "kernelbench" and not spec.baseline.expression:
        return "torch eager (Model.forward)"
    return f"torch ({spec.baseline.expression or spec.reference.describe()})"


def baseline(spec: OpSpec, own: dict[str, Any], entry: Entry, dtype: Any
             ) -> tuple[Callable[[], Any], Callable[[], Callable[[], Any]]]:
    """(eager call, a factory of the torch.compile'd call) on the GPU copies `own`."""
    import torch

    expression = spec.baseline.expression or (spec.reference.text
                                              if spec.reference.kind == "expression" else "")
    if expression:
        names = list(own)
        graph = _graph(expression, names, scalars(spec, entry))
        args = [own[n] for n in names]
        return (_materialized(lambda: graph(*args)),
                (lambda: _materialized(_bound(torch.compile(graph), args))))
    if spec.reference.kind == "file":
        func = _file_function(spec)
        kw = _keywords(func, scalars(spec, entry))
        args = [own[t.name] for t in spec.operands]
        return (_materialized(lambda: func(*args, **kw)),
                (lambda: _materialized(_bound(torch.compile(func), args, kw))))
    model = kernelbench.eager_model(spec, own, dtype)
    args = [own[t.name] for t in spec.inputs]
    return (lambda: model(*args)), (lambda: _bound(torch.compile(model), args))


def _materialized(call: Callable[[], Any]) -> Callable[[], Any]:
    """The eager baseline with its outputs made contiguous: `X.T` alone is a view that moves no
    data, and timing it would make any transpose kernel look infinitely slower than torch."""
    def run() -> Any:
        out = call()
        if isinstance(out, (tuple, list)):
            return tuple(o.contiguous() for o in out)
        return out.contiguous()
    return run


def _bound(func: Callable[..., Any], args: list[Any], kw: dict[str, Any] | None = None
           ) -> Callable[[], Any]:
    return lambda: func(*args, **(kw or {}))


def _graph(expression: str, names: list[str], values: dict[str, Any]) -> Any:
    """The expression as a torch.fx GraphModule (the walker runs once, on fx proxies), so the
    eager baseline is plain torch calls and torch.compile sees a graph, not the walker."""
    import torch
    from torch.fx.proxy import GraphAppendingTracer

    graph = torch.fx.Graph()
    tracer = GraphAppendingTracer(graph)
    proxies = {n: torch.fx.Proxy(graph.placeholder(n), tracer) for n in names}
    result = refexpr.evaluate(expression, {**proxies, **values})
    nodes = tuple(r.node for r in result) if isinstance(result, (tuple, list)) else result.node
    graph.output(nodes)
    return torch.fx.GraphModule(torch.nn.Module(), graph)
