"""Inside the worker: a KernelBench problem's own functions, run as KernelBench runs them.

The problem file is the user's code, like a spec; it runs only here, in the sandboxed worker, after
the candidate. Weights and inputs come from the problem itself, seeded: `torch.manual_seed(seed)`
then `Model(*get_init_inputs())` on the CPU, and `torch.manual_seed(seed)` then `get_inputs()`,
as KernelBench's evaluator does, so ModelNew built the same way gets the same weights.
"""

from __future__ import annotations

import copy
from typing import Any

from kgen.sandbox import userfile
from kgen.spec import OpSpec

_TEMPLATES: dict[tuple[str, str, str], Any] = {}  # (source, device, dtype) -> a Model to call


def problem(spec: OpSpec) -> dict[str, Any]:
    """The problem's namespace (Model, get_inputs, get_init_inputs, its constants)."""
    return userfile.load(spec.reference.text, spec.reference.file or "problem.py",
                         "the KernelBench problem")


def attribute(module: Any, path: str) -> Any:
    """`conv.weight` of a module."""
    value = module
    for part in path.split("."):
        value = getattr(value, part)
    return value


def build_model(spec: OpSpec, seed: int) -> Any:
    """Model(*get_init_inputs()) on the CPU, seeded as KernelBench seeds it."""
    import torch

    space = problem(spec)
    torch.manual_seed(seed)
    init = space["get_init_inputs"]()
    torch.manual_seed(seed)
    with torch.no_grad():
        return space["Model"](*init)


def draw(spec: OpSpec, dtype: str, seed: int) -> dict[str, Any]:
    """Host tensors for the inputs (from get_inputs) and the weights (from a seeded Model)."""
    import torch

    from kgen.sandbox.launch import torch_dtype

    model = build_model(spec, seed)
    torch.manual_seed(seed)
    values = list(problem(spec)["get_inputs"]())
    tensors = {t.name: v for t, v in zip(spec.inputs, values, strict=False)}
    for t in spec.weights:
        tensors[t.name] = attribute(model, t.attribute).detach()
    out = {}
    for t in spec.operands:
        value = tensors[t.name]
        out[t.name] = value.to(device="cpu", dtype=torch_dtype(spec.tensor_dtype(t, dtype)))
    return out


def template(spec: OpSpec, device: str, dtype: Any) -> Any:
    """One Model per worker, device and dtype, whose weights are swapped in per call."""
    key = (spec.reference.text, device, str(dtype))
    if key not in _TEMPLATES:
        base = _TEMPLATES.get((spec.reference.text, "", ""))
        if base is None:
            base = _TEMPLATES[(spec.reference.text, "", "")] = build_model(spec, 0)
        _TEMPLATES[key] = copy.deepcopy(base).to(device=device, dtype=dtype)
    return _TEMPLATES[key]


def forward(spec: OpSpec, tensors: dict[str, Any], device: str, dtype: Any) -> Any:
    """Model.forward with these weights and inputs (the reference, in the reference dtype)."""
    import torch

    model = template(spec, device, dtype)
    weights = {t.attribute: tensors[t.name] for t in spec.weights}
    with torch.no_grad():
        return torch.func.functional_call(model, weights, tuple(tensors[t.name]
                                                                for t in spec.inputs))


def eager_model(spec: OpSpec, tensors: dict[str, Any], dtype: Any) -> Any:
    """A Model on the GPU in the run's dtype holding these weights: the eager baseline."""
    import torch

    model = copy.deepcopy(template(spec, "cuda", dtype))
    with torch.no_grad():
        for t in spec.weights:
            attribute(model, t.attribute).copy_(tensors[t.name])
    return model
