"""A KernelBench problem (a file with `class Model(nn.Module)`, `get_inputs()`,
`get_init_inputs()` and module-level size constants) as an op spec.

The file is user code: kgen runs it in a subprocess with a time limit and a clean environment
(kgen.ops.kbprobe), on torch's meta device, so the full-size model never runs on the CPU. What
comes back (tensor shapes and dtypes, the Model's parameters and buffers, the int constants, a
flop count) becomes a spec mapping, validated like any spec file. Values come later, inside the
GPU worker, from the problem's own functions, seeded (kgen.sandbox.kernelbench).
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from kgen import process
from kgen.dtypes import DTYPES
from kgen.errors import EnvironmentProblem, UsageError
from kgen.ops.fields import IDENT, RESERVED
from kgen.ops.kbprobe import MARKER
from kgen.ops.specfile import build_spec
from kgen.spec import OpSpec

PROBE_TIMEOUT_S = 120.0
KGEN_ROOT = Path(__file__).resolve().parent.parent.parent
# KernelBench's evaluator compares with torch.allclose(atol=rtol=tolerance) per precision
# (ScalingIntelligence/KernelBench, src/kernelbench/eval.py, get_tolerance_for_precision):
# float32 1e-4, float16 and bfloat16 1e-2. kgen's reference is float64 (float32 for the halves).
TOLERANCES = {"float32": ("float64", 1e-4), "float16": ("float32", 1e-2),
              "bfloat16": ("float32", 1e-2), "float64": ("float64", 1e-7)}


def load_problem(path: Path) -> OpSpec:
    """The op spec of a KernelBench problem file; UsageError for what does not convert."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no such KernelBench problem file: {path}")
    data = probe(path)
    return build_spec(spec_mapping(data, path), path.resolve().parent, str(path))


def probe(path: Path) -> dict[str, Any]:
    """Run kgen.ops.kbprobe on the file in a limited subprocess; its findings."""
    env = process.scrubbed_env()
    env["PYTHONPATH"] = ":".join(dict.fromkeys([str(KGEN_ROOT), *[
        p for p in env.get("PYTHONPATH", "").split(":") if p]]))
    with tempfile.TemporaryDirectory(prefix="kgen-probe-") as folder:
        env["HOME"] = env["TMPDIR"] = folder
        done = process.run_limited([sys.executable, "-m", "kgen.ops.kbprobe",
                                    str(path.resolve())], cwd=Path(folder),
                                   timeout=PROBE_TIMEOUT_S, env=env, max_output=256 * 1024)
    if done.timed_out:
        raise UsageError(f"{path}: importing the problem and running it on the meta device took "
                         f"more than {PROBE_TIMEOUT_S:.0f} s")
    if "No module named 'torch'" in done.output:
        raise EnvironmentProblem("reading a KernelBench problem needs torch (pip install torch; "
                                 "the CPU build is enough)")
    found = [line for line in done.output.splitlines() if line.startswith(MARKER + " ")]
    if not found:
        last = done.output.strip().splitlines()[-1:] or ["no output"]
        raise UsageError(f"{path}: cannot read the problem: {last[0][:300]}")
    result = json.loads(found[-1][len(MARKER) + 1:])
    if "refused" in result:
        raise UsageError(f"{path} does not convert to an op spec: {result['refused']}")
    if "error" in result:
        raise UsageError(f"{path}: the problem fails on the meta device: {result['error']}")
    return result


def op_name(path: Path) -> str:
    """`19_ReLU.py` -> `19_relu` (spec names are lower-case letters, digits and _)."""
    return re.sub(r"[^a-z0-9_]+", "_", path.stem.lower()).strip("_") or "problem"


def _symbols(data: dict[str, Any], taken: set[str]) -> dict[int, str]:
    """One size symbol per distinct dimension: the problem's constant of that value where exactly
    one has it, else D<value> (several constants share it: naming one would mislead); a 1
    without a constant stays a literal."""
    dims: list[int] = []
    for t in [*data["inputs"], *data["weights"], *data["outputs"]]:
        for d in t["shape"]:
            if d not in dims:
                dims.append(d)
    names: dict[int, str] = {}
    for value in dims:
        candidates = [k for k, v in data["constants"].items() if v == value]
        usable = [k for k in candidates if k not in taken and IDENT.fullmatch(k)
                  and k not in RESERVED]
        if len(candidates) == 1 and usable:
            names[value] = usable[0]
        elif value != 1 or candidates:
            names[value] = f"D{value}"
    return names


def _aliases(data: dict[str, Any], symbols: dict[int, str]) -> str:
    """`D64 is out_channels, height, width`: what a shared-value symbol stands for."""
    notes = []
    for value, name in symbols.items():
        same = [k for k, v in data["constants"].items() if v == value]
        if name not in same and same:
            notes.append(f"{name} is {', '.join(same)} (all {value})")
    return f" Size symbols: {'; '.join(notes)}." if notes else ""


def _unique(name: str, taken: set[str]) -> str:
    base = name if IDENT.fullmatch(name) and name not in RESERVED else f"t_{name}"
    out, k = base, 1
    while out in taken:
        out, k = f"{base}_{k}", k + 1
    taken.add(out)
    return out


def spec_mapping(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """The spec-file mapping for a probed problem: tensors named by forward's arguments, the
    Model's attributes and out/out0..; fixed sizes as symbols; KernelBench's tolerances;
    `same_as: gemm` where forward is one matmul of its two inputs, `same_as: softmax` (with
    the row-sum check) where it is one softmax over the last dim of its input (`log_softmax`,
    with the check on the exps' row sums, likewise), `same_as: gelu`
    or `silu` where it is that activation of its input (kbprobe._same_as); else `pointwise:
    EXPR` where it is a chain of elementwise ops on its input (kbprobe._pointwise), or
    `reduce: {op, dim}` where it is one reduction of its input over one dim (kbprobe._reduce) or
    its input divided by an L1, L2 or RMS norm of it over one dim (kbprobe._norm) or
    standardized over its last dims without weights (kbprobe._standardize), or
    `same_as: layernorm` with forward's eps as a parameter where it is one layer norm with the
    Model's weight and bias (kbprobe._layernorm; the reference, forward itself, keeps its own)."""
    floats = [t["dtype"] for t in [*data["inputs"], *data["weights"]] if DTYPES.get(
        t["dtype"]) is not None and DTYPES[t["dtype"]].is_float]
    run = floats[0] if floats else "float32"
    if run not in TOLERANCES:
        raise UsageError(f"{path}: tensors of dtype {run} are not supported")
    taken: set[str] = set()
    entries = ([(_unique(t["name"], taken), t, "input", "") for t in data["inputs"]]
               + [(_unique(t["attribute"].replace(".", "_"), taken), t, "weight",
                   t["attribute"]) for t in data["weights"]])
    many = len(data["outputs"]) > 1
    entries += [(_unique(f"out{i}" if many else "out", taken), t, "output", "")
                for i, t in enumerate(data["outputs"])]
    symbols = _symbols(data, taken)
    tensors, elements, fixed = {}, [], 0
    for name, t, role, attribute in entries:
        if t["dtype"] not in DTYPES:
            raise UsageError(f"{path}: {role} {name} has dtype {t['dtype']}, which kgen does "
                             "not support")
        shape = [symbols.get(d, str(d)) for d in t["shape"]]
        entry: dict[str, Any] = {"shape": shape, "role": role}
        if t["dtype"] != run:
            entry["dtype"] = t["dtype"]
            fixed += DTYPES[t["dtype"]].size * _count(t["shape"])
        else:
            elements.append(_count(t["shape"]))
        if attribute:
            entry["attribute"] = attribute
        tensors[name] = entry
    reference, tol = TOLERANCES[run]
    sizes = {name: value for value, name in symbols.items()}
    doc = " ".join(data.get("doc", "").split())
    # forward is one matmul (softmax, GELU, SiLU) or an elementwise chain; with every dim a
    # symbol and one dtype, the builtin author can write it with that op's templates
    bindable = all("dtype" not in t and all(d in sizes for d in t["shape"])
                   for t in tensors.values())
    shipped, chain = data.get("same_as", ""), data.get("pointwise", "")
    same_as: dict[str, Any] = {}
    params: dict[str, Any] = {}
    if bindable and shipped:
        same_as["same_as"] = shipped
    elif bindable and data.get("layernorm"):  # forward's eps, passed to the kernel by name
        same_as["same_as"] = "layernorm"
        eps = _unique("eps", taken | set(sizes))
        params[eps] = {"dtype": "float32", "value": data["layernorm"]["eps"]}
    elif bindable and chain:
        same_as["pointwise"] = chain
    elif data.get("reduce"):  # one input in the run dtype; argmax's int64 output is its own
        same_as["reduce"] = data["reduce"]
    if same_as.get("same_as") in ("softmax", "log_softmax"):
        same_as["checks"] = ["row_sums" if shipped == "softmax" else "log_row_sums"]
    return {"name": op_name(path),
            "description": f"KernelBench problem {path.name}: {doc}{_aliases(data, symbols)}",
            "sizes": list(sizes), **({"params": params} if params else {}),
            "tensors": tensors,
            "dtypes": {run: {"reference": reference, "atol": tol, "rtol": tol}},
            "kernelbench": str(path.resolve()), "test_sizes": [sizes], "bench_sizes": [sizes],
            "flops": str(data["flops"]), "bytes": f"ELEM * {sum(elements)} + {fixed}",
            **same_as}


def _count(shape: list[int]) -> int:
    total = 1
    for d in shape:
        total *= d
    return total
