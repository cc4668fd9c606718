"""numpy references (float64) for the ops the builtin memory-bound templates write, inputs drawn as
the spec says, and the worker's two comparisons (elementwise tolerance, relative L2 error), for
the CPU emulator tests."""

from __future__ import annotations

import numpy as np

from kgen.spec import OpSpec


def draw(spec: OpSpec, sizes: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    out = {}
    for t in spec.operands:
        shape = spec.shape(t, sizes)
        if t.init.dist == "normal":
            out[t.name] = rng.normal(t.init.a, t.init.b, shape)
        elif t.init.dist == "randint":
            out[t.name] = rng.integers(int(t.init.a), int(t.init.b), shape).astype(np.float64)
        else:
            out[t.name] = rng.uniform(t.init.a, t.init.b, shape)
    return out


def reference(op: str, x: dict[str, np.ndarray], eps: float = 0.0) -> np.ndarray:
    X = x["X"]
    if op == "gelu":
        return 0.5 * X * (1 + np.tanh(np.sqrt(2 / np.pi) * (X + 0.044715 * X ** 3)))
    if op == "silu":
        return X / (1 + np.exp(-X))
    if op == "bias_relu":
        return np.maximum(X + x["bias"], 0)
    if op == "softmax":
        e = np.exp(X - X.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    if op == "log_softmax":
        m = X.max(axis=-1, keepdims=True)
        return X - m - np.log(np.exp(X - m).sum(axis=-1, keepdims=True))
    if op == "layernorm":
        mean = X.mean(axis=-1, keepdims=True)
        var = ((X - mean) ** 2).mean(axis=-1, keepdims=True)
        return (X - mean) / np.sqrt(var + eps) * x["weight"] + x["bias"]
    if op == "rmsnorm":
        return X / np.sqrt((X * X).mean(axis=-1, keepdims=True) + eps) * x["weight"]
    if op == "sum":
        return X.sum(axis=-1)
    if op == "max":
        return X.max(axis=-1)
    if op == "argmax":
        return X.argmax(axis=-1)  # the first index of the maximum, as torch
    if op == "transpose":
        return X.T
    if op == "cumsum":
        return np.cumsum(X, axis=-1)
    raise AssertionError(op)


def problems(out: np.ndarray, ref: np.ndarray, atol: float, rtol: float) -> str:
    """Empty when `out` passes the worker's checks against `ref`, else what is off."""
    if out.dtype == np.int64:
        bad = out != ref
        return f"{int(bad.sum())} of {bad.size} indices differ" if bad.any() else ""
    bad = ~(np.abs(out - ref) <= atol + rtol * np.abs(ref))
    if bad.any():
        where = np.argwhere(bad)[:3].tolist()
        return (f"{int(bad.sum())} of {bad.size} off (max abs {np.nanmax(np.abs(out - ref)):.3g}"
                f"), first at {where}")
    norm = np.linalg.norm(ref)
    if norm > 0 and np.linalg.norm(out - ref) / norm > max(rtol, 1e-3):
        return f"relative L2 error {np.linalg.norm(out - ref) / norm:.3g}"
    return ""
