"""`kgen doctor`: what this machine offers kgen, collected as values; works without a GPU.

The parent never creates a CUDA context: the Python GPU stack is probed in a subprocess, and CUDA
inside the sandbox is proven by the same canary worker the evaluation uses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from kgen import process, toolkit
from kgen.arch import local_gpu
from kgen.errors import KgenError

OK, MISSING, WARN, FAIL = "ok", "missing", "warn", "fail"

_PROBE = """
import json
out = {}
for name in ("torch", "cupy"):
    try:
        mod = __import__(name)
        out[name] = mod.__version__
    except Exception as exc:
        out[name] = None
        out[name + "_error"] = f"{type(exc).__name__}: {exc}"[:200]
if out.get("torch"):
    import torch
    out["torch_cuda"] = torch.version.cuda
print(json.dumps(out))
"""


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok | missing | warn | fail
    detail: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)


def _run(cmd: list[str], timeout: float = 30) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def check_gpu() -> Check:
    found = local_gpu()
    if found is None:
        return Check("gpu", MISSING, "no CUDA GPU visible (nvidia-smi absent or sees none): "
                     "kgen compiles but cannot validate or time")
    name, arch = found
    driver = (_run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]) or
              "?").strip().splitlines()[0]
    return Check("gpu", OK, f"{name}, compute capability {arch.capability[0]}."
                 f"{arch.capability[1]} ({arch.name}), driver {driver}")


def check_nvcc() -> Check:
    from kgen.arch import supported_archs

    try:
        release = toolkit.nvcc_release() or "version unknown"
        return Check("nvcc", OK, f"{toolkit.nvcc_path()} (release {release}); "
                     f"archs {', '.join(supported_archs())}")
    except KgenError as exc:
        return Check("nvcc", MISSING, str(exc))


def check_python_stack() -> list[Check]:
    """torch and cupy versions, imported in a subprocess (no CUDA context here)."""
    text = _run([sys.executable, "-c", _PROBE], timeout=120)
    data = json.loads(text.strip().splitlines()[-1]) if text else {}
    checks = []
    for name in ("torch", "cupy"):
        if data.get(name):
            extra = f" (CUDA {data['torch_cuda']})" if name == "torch" and data.get(
                "torch_cuda") else (" (CPU-only build)" if name == "torch" else "")
            checks.append(Check(name, OK, f"{data[name]}{extra}"))
        else:
            checks.append(Check(name, MISSING, data.get(f"{name}_error", "not importable") +
                                " (pip install 'kgen[gpu]')"))
    return checks


def check_isolation(have_gpu: bool, unsafe: bool = False) -> list[Check]:
    """Which isolation the worker gets, and whether CUDA works inside it (the canary)."""
    checks = [Check("isolation", OK if process.bwrap_path() else WARN,
                    process.isolation_name())]
    if not have_gpu:
        checks.append(Check("gpu worker", MISSING, "not tried: no GPU"))
        return checks
    from kgen.gpu.client import check_health

    try:
        result = check_health(timeout_s=180, unsafe=unsafe)
    except KgenError as exc:  # the worker could not even start
        return checks + [Check("gpu worker", FAIL, str(exc))]
    where = result.extra.get("isolation", "?")
    if result.passed:
        versions = ", ".join(f"{k} {v}" for k, v in result.extra.items()
                             if k in ("torch", "cupy"))
        checks.append(Check("gpu worker", OK, f"canary kernel passed inside {where} on "
                            f"{result.device} ({versions})"))
    else:
        checks.append(Check("gpu worker", FAIL, f"canary failed inside {where}: "
                            f"{result.verdict}: {result.message[:300]}"))
    return checks


def check_tool(name: str) -> Check:
    found = toolkit.tool(name)
    if found is None:
        return Check(name, MISSING, f"{toolkit.missing(name)} (optional)")
    path = str(found)
    version = (_run([path, "--version"]) or "").strip().splitlines()
    return Check(name, OK, f"{path} {version[-1] if version else ''}".strip())


def check_endpoint(timeout: float = 5.0) -> Check:
    """The configured OpenAI-compatible endpoint and whether it answers (the backend's probe)."""
    from kgen.models import endpoint_configured
    from kgen.models.openai_backend import OpenAIModel

    if not endpoint_configured():
        return Check("model endpoint", MISSING, "none configured: the builtin rule-based author "
                     "is used (set OPENAI_BASE_URL / OPENAI_API_KEY or --base-url)")
    key = "set" if os.environ.get("KGEN_API_KEY") or os.environ.get("OPENAI_API_KEY") else "not set"
    try:
        ok, text = OpenAIModel(timeout=timeout).probe()
    except KgenError as exc:  # e.g. the openai package is not installed
        return Check("model endpoint", FAIL, f"key {key}: {exc}")
    if ok:
        return Check("model endpoint", OK, f"{text}; key {key}")
    return Check("model endpoint", FAIL, f"does not answer: {text}; key {key}")


def run_checks(unsafe: bool = False) -> list[Check]:
    """Every check, in the order `kgen doctor` prints them."""
    gpu = check_gpu()
    checks = [gpu, check_nvcc(), *check_python_stack(),
              *check_isolation(gpu.status == OK, unsafe)]
    checks += [check_tool("ncu"), check_tool("compute-sanitizer"), check_tool("cuobjdump"),
               check_endpoint()]
    return checks


def check_binary(path: Path) -> list[Check]:
    """Which SASS/PTX `path` holds and whether the local GPU can run it."""
    from kgen.compile.binary import inspect

    info = inspect(path)
    found = local_gpu()
    checks = [Check("binary", OK if info.sass or info.ptx else FAIL, info.describe() +
                    ("" if info.sass or info.ptx else " (no device code found)"))]
    if found is None:
        checks.append(Check("runs here", MISSING, "no GPU here to run it on"))
        return checks
    name, arch = found
    how = info.runs_on(arch.major_minor)
    words = {"native": (OK, f"yes: SASS for {arch.name} is in the file"),
             "ptx": (WARN, f"yes, by JIT from the embedded PTX (no SASS for {arch.name}; the "
                     "first load compiles, timings are for this GPU)"),
             "no": (FAIL, f"no: 'no kernel image is available' on {name} ({arch.name}); "
                    f"rebuild with --arch {arch.name}, or embed PTX for an arch <= {arch.name}")}
    status, detail = words[how]
    checks.append(Check("runs here", status, detail))
    return checks


def render(checks: list[Check]) -> str:
    width = max(len(c.name) for c in checks)
    return "\n".join(f"{c.status:<8}{c.name:<{width + 2}}{c.detail}" for c in checks)
