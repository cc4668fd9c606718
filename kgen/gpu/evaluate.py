"""The GPU stage the loop calls: a compiled candidate -> Evaluation (None: no GPU to run it on).

Each candidate runs in a sandboxed worker (kgen.sandbox): a fresh one, or a warm one of a pool
(kgen.gpu.pool); this module plans what can run here and what to ask for, and never creates a
CUDA context itself.
"""

from __future__ import annotations

import importlib.util
import secrets
import time
from dataclasses import dataclass, replace
from typing import Any

from kgen.arch import Arch, can_run_on, local_gpu
from kgen.compile import CompileResult
from kgen.contract import Contract
from kgen.errors import EnvironmentProblem
from kgen.findings import Profile
from kgen.gpu import client, profile, sanitizer
from kgen.spec import OpSpec
from kgen.verdict import Evaluation, Verdict
from kgen.wire import EvalRequest


@dataclass(frozen=True)
class EvalOptions:
    """How hard to look: the defaults are `kgen bench`; `quick()` is for loop rounds."""

    timeout_s: float | None = None  # whole worker; None: derived from the sizes and budgets
    kernel_timeout_s: float = 10.0  # one launch; an endless kernel becomes `timeout` after this
    bench_sizes: tuple[dict[str, int], ...] | None = None  # None: the spec's bench sizes
    bench_budget_s: float = 2.0
    input_sets: int = 3
    seed: int | None = None  # None: fresh random inputs every time
    unsafe_no_sandbox: bool = False
    profile: bool = True  # a passing candidate: one more launch under Nsight Compute
    sanitize: bool = True  # a failing one: its smallest failing size under compute-sanitizer
    profile_timeout_s: float = 240.0
    sanitize_timeout_s: float = 120.0  # each sanitizer tool; all of them within 2.5x this
    compile_baseline: bool = False  # also time torch.compile of the baseline (it compiles first)

    @classmethod
    def quick(cls, spec: OpSpec, **changes: Any) -> EvalOptions:
        """Loop rounds: full validation, every bench size with a short budget (a candidate is
        judged by the geometric mean over them: kgen.verdict.overall)."""
        return replace(cls(bench_budget_s=0.5), **changes)


@dataclass(frozen=True)
class Plan:
    """Whether and how code for `target` runs on the local GPU."""

    mode: str  # native | ptx | no | no-gpu | no-stack (torch or cupy missing)
    local: str  # "NVIDIA H200, sm_90" or ""
    message: str  # what to tell the user ("" when native)

    @property
    def embed_ptx(self) -> bool:
        """Compile with embed_ptx=True so the local (newer) GPU can JIT the target's PTX."""
        return self.mode == "ptx"

    @property
    def runnable(self) -> bool:
        return self.mode in ("native", "ptx")


def missing_stack() -> list[str]:
    """The worker's GPU Python packages this environment lacks (looked up, not imported)."""
    return [m for m in ("torch", "cupy") if importlib.util.find_spec(m) is None]


def gpu_available() -> bool:
    """A GPU is visible (asked through nvidia-smi, without creating a CUDA context)."""
    return local_gpu() is not None


def plan(target: Arch) -> Plan:
    """Say how a build for `target` can run here, in words the CLI prints as they are."""
    found = local_gpu()
    if found is None:
        return Plan("no-gpu", "", "no CUDA GPU here: candidates are compiled but not validated "
                    "or timed")
    name, local = found
    where = f"{name}, {local.name}"
    missing = missing_stack()
    if missing:
        return Plan("no-stack", where, f"{' and '.join(missing)} not installed (pip install "
                    "'kgen[gpu]'): candidates are compiled but not validated or timed")
    mode = can_run_on(target, local)
    if mode == "native":
        return Plan(mode, where, "")
    if mode == "ptx":
        return Plan(mode, where, f"--arch {target.name} differs from the local GPU ({where}): "
                    f"running the embedded {target.compute} PTX, JIT-compiled for "
                    f"{local.name}; timings are for the local GPU, not for {target.name}")
    return Plan(mode, where, f"--arch {target.name} code cannot run on the local GPU ({where}): "
                f"a {target.name} binary needs that GPU (or an older --arch whose PTX "
                f"{local.name} can JIT, e.g. --arch {local.name}); not validated or timed here")


def evaluate(compile_result: CompileResult, contract: Contract | None, spec: OpSpec | None,
             arch: Arch, *, options: EvalOptions | None = None,
             workers: client.Workers | None = None) -> Evaluation | None:
    """Validate and time one compiled candidate (in a fresh worker unless `workers` is a pool);
    None when it cannot run here."""
    how = plan(arch)
    if not how.runnable or compile_result.cubin is None or contract is None or spec is None:
        return None
    options = options or EvalOptions()
    request = make_request(spec, contract, options)
    started = time.monotonic()
    workers = workers or client.FreshWorkers(options.unsafe_no_sandbox)
    result = workers.run(request, compile_result.cubin, timeout_s=wall_timeout(request, options))
    if not result.device:
        result = replace(result, device=how.local)
    if how.message:
        result = replace(result, note="; ".join(n for n in (how.message, result.note) if n))
    checked = {"canary", "gpu_unhealthy"} & set(result.extra)  # a pool checks the GPU itself
    if Verdict(result.verdict).needs_health_check and not checked:
        try:
            canary = {"canary": ensure_healthy(options)}
        except EnvironmentProblem as exc:  # the loop saves this attempt, then stops the run
            canary = {"gpu_unhealthy": str(exc)}
        result = replace(result, extra={**result.extra, **canary})
    result = extra_checks(result, request, compile_result, options, workers)
    return replace(result, seconds=round(time.monotonic() - started, 3))


def extra_checks(result: Evaluation, request: EvalRequest, compiled: CompileResult,
                 options: EvalOptions, workers: client.Workers) -> Evaluation:
    """The checks after the verdict: a profile of a candidate that passed, the sanitizer on one
    that came back wrong, crashed or failed in its launch (not after a GPU fault the canary did
    not clear). Each runs on the GPU that judged it, while `workers` keeps other candidates off
    that GPU: ncu replays the kernel many times, and a timing beside it would be skewed."""
    binary = compiled.cubin
    if binary is None:
        return result
    if options.profile and result.passed and request.bench_sizes:
        with workers.holding(result) as env:
            found = profile.collect(replace(request, bench_sizes=request.bench_sizes[:1]),
                                    binary, timeout_s=options.profile_timeout_s,
                                    unsafe=options.unsafe_no_sandbox, env=env)
        return replace(result, profile=found)
    launched = result.verdict != "launch_error" or result.message.startswith("launching")
    if options.sanitize and result.verdict in sanitizer.SANITIZED and launched \
            and "gpu_unhealthy" not in result.extra:
        with workers.holding(result) as env:
            report = sanitizer.check(request, binary, result.verdict, result.extra.get("sizes"),
                                     compiled.ptx, timeout_s=options.sanitize_timeout_s,
                                     budget_s=2.5 * options.sanitize_timeout_s,
                                     unsafe=options.unsafe_no_sandbox, env=env)
        return replace(result, sanitizer=report)
    return result


def profile_only(compile_result: CompileResult, contract: Contract, spec: OpSpec, arch: Arch, *,
                 options: EvalOptions | None = None) -> Profile | None:
    """One launch under Nsight Compute at the first bench size, no validation (`kgen profile`);
    None when it cannot run here."""
    how = plan(arch)
    if not how.runnable or compile_result.cubin is None:
        return None
    options = options or EvalOptions()
    request = make_request(spec, contract, options)
    return profile.collect(replace(request, bench_sizes=request.bench_sizes[:1]),
                           compile_result.cubin, timeout_s=options.profile_timeout_s,
                           unsafe=options.unsafe_no_sandbox)


def make_request(spec: OpSpec, contract: Contract, options: EvalOptions) -> EvalRequest:
    bench = spec.bench_sizes if options.bench_sizes is None else options.bench_sizes
    by_work = sorted(spec.test_sizes, key=spec.flop_count)
    revalidate = (by_work[len(by_work) // 2], by_work[-1]) if len(by_work) > 1 else tuple(by_work)
    seed = options.seed if options.seed is not None else secrets.randbits(31)
    return EvalRequest(spec, contract, contract.dtype, spec.test_sizes, tuple(bench), seed,
                       options.input_sets, options.kernel_timeout_s, options.bench_budget_s,
                       revalidate if bench else (), options.compile_baseline and bool(bench))


def wall_timeout(request: EvalRequest, options: EvalOptions) -> float:
    """Enough for start-up, every check and the timing loops; an endless kernel stops sooner."""
    if options.timeout_s is not None:
        return options.timeout_s
    # torch.compile's first call compiles (inductor, Triton): up to minutes for a large model.
    compiling = 240.0 * len(request.bench_sizes) if request.compile_baseline else 0.0
    return 90.0 + len(request.bench_sizes) * (2 * request.bench_budget_s + 60.0) + compiling


def ensure_healthy(options: EvalOptions, attempts: int = 2) -> str:
    """Run the canary until it passes (a second try after a pause); EnvironmentProblem if not."""
    last = None
    for attempt in range(attempts):
        if attempt:
            time.sleep(3.0)
        last = client.check_health(unsafe=options.unsafe_no_sandbox)
        if last.passed:
            return f"GPU healthy after the failure (canary passed on {last.device})"
    raise EnvironmentProblem("the GPU did not pass the canary kernel after a candidate failed "
                             f"({last.verdict if last else '?'}: {last.message if last else ''});"
                             " stopping rather than blaming the next candidate")
