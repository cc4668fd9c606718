"""The GPU stage's extra checks without a GPU: a tool wrapped around the real worker in its
profile mode inside bubblewrap; which verdicts get a profile or a sanitizer run and with what;
the worker's sanitize mode with a stand-in cupy (exact allocations, the layout written before the
launch)."""

from __future__ import annotations

import contextlib
import json
import sys
import types
from pathlib import Path

import pytest

from kgen.contract import Contract, Launch
from kgen.findings import Profile, SanitizerReport
from kgen.gpu import evaluate as stage
from kgen.gpu import wrapped
from kgen.ops import load_op
from kgen.process import bwrap_path
from kgen.verdict import Evaluation
from kgen.wire import PROBE_FILE, EvalRequest

SPEC = load_op("gemm")
LAUNCH = Launch("gemm_k", ("cdiv(N,16)", "cdiv(M,16)", "1"), ("16", "16", "1"), "0",
                ("A", "B", "C", "M", "N", "K"), 3)
CONTRACT = Contract("gemm", "float32", (LAUNCH,))
# A stand-in tool: writes its log where `--log-file` says, then runs the command after `--`.
FAKE_TOOL = ("import os, subprocess, sys\n"
             "args = sys.argv[1:]\n"
             "log = args[args.index('--log-file') + 1]\n"
             "open(log, 'w').write('==PROF== tool log on ' + os.environ['CUDA_VISIBLE_DEVICES'])\n"
             "sys.exit(subprocess.run(args[args.index('--') + 1:]).returncode)\n")


def _request(sizes=None) -> EvalRequest:
    return EvalRequest(SPEC, CONTRACT, "float32", SPEC.test_sizes,
                       (sizes or {"M": 64, "N": 64, "K": 64},), 7)


@pytest.mark.parametrize("sandboxed", [False, True], ids=["plain", "bubblewrap"])
def test_a_tool_wraps_the_real_worker_in_profile_mode(sandboxed):
    if sandboxed and bwrap_path() is None:
        pytest.skip("bubblewrap not usable here")
    # `python -c`: a script under /tmp would be hidden by the sandbox's private /tmp
    run = wrapped.run([sys.executable, "-c", FAKE_TOOL, "--log-file", "{log}", "--"], _request(),
                      b"not a cubin", "profile", timeout_s=120, unsafe=not sandboxed,
                      env={"CUDA_VISIBLE_DEVICES": "GPU-judge"})
    assert run.log == "==PROF== tool log on GPU-judge" and run.text == run.log
    # the worker ran in profile mode and said what it could not do here (no cupy, no GPU)
    assert run.probe["mode"] == "profile" and run.probe["sizes"] == {"M": 64, "N": 64, "K": 64}
    assert run.probe["error"] and not run.probe["launched"] and not run.timed_out


def _fake_stage(monkeypatch, verdict: str, message: str = "details", extra=None):
    """evaluate() with a stand-in worker and stand-in checks that record how they were called."""
    calls: dict = {}
    monkeypatch.setattr(stage, "plan", lambda arch: stage.Plan("native", "Fake GPU, sm_90", ""))
    monkeypatch.setattr(stage.client, "run_worker", lambda *a, **k: Evaluation(
        verdict, message, extra=dict(extra or {})))
    monkeypatch.setattr(stage, "ensure_healthy", lambda options: "healthy")

    def collect(request, binary, **kw):
        calls["profile"] = request.bench_sizes
        return Profile(kernel="gemm_k", bottleneck="memory_dram")

    def check(request, binary, verdict, sizes, ptx, **kw):
        calls["sanitize"] = (verdict, sizes, ptx)
        return SanitizerReport(sizes=sizes or {}, tools=("memcheck",))
    monkeypatch.setattr(stage.profile, "collect", collect)
    monkeypatch.setattr(stage.sanitizer, "check", check)
    return calls


def _evaluate(options: stage.EvalOptions):
    from kgen.arch import parse_arch
    from kgen.compile import CompileResult

    compiled = CompileResult("sm_90", b"cubin", ptx=".shared")
    return stage.evaluate(compiled, CONTRACT, SPEC, parse_arch("sm_90", check_nvcc=False),
                          options=options)


def test_a_pass_is_profiled_at_the_first_bench_size_only(monkeypatch):
    calls = _fake_stage(monkeypatch, "pass")
    result = _evaluate(stage.EvalOptions())
    assert calls == {"profile": (SPEC.bench_sizes[0],)}
    assert result.profile is not None and result.profile.bottleneck == "memory_dram"
    assert "profile  gemm_k" in result.describe()
    calls.clear()
    assert _evaluate(stage.EvalOptions(profile=False)).profile is None and not calls


class _HeldWorkers:
    """Stands in for the pool: judges on "gpu1.w0" and records when its GPU is held."""

    def __init__(self, verdict: str):
        self.verdict, self.held, self.seen = verdict, False, []

    def run(self, request, binary, *, timeout_s):
        return Evaluation(self.verdict, "details", extra={"worker": "gpu1.w0",
                                                          "sizes": {"M": 7, "N": 3, "K": 5}})

    @contextlib.contextmanager
    def holding(self, result):
        assert result.extra["worker"] == "gpu1.w0"
        self.held = True
        yield {"CUDA_VISIBLE_DEVICES": "GPU-bbb"}
        self.held = False


@pytest.mark.parametrize("verdict, check", [("pass", "collect"), ("wrong", "check")])
def test_the_checks_after_a_verdict_run_on_its_gpu_while_it_is_held(monkeypatch, verdict, check):
    _fake_stage(monkeypatch, verdict)
    workers, seen = _HeldWorkers(verdict), []

    def record(*args, **kw):
        seen.append((workers.held, kw["env"]))
        return Profile() if check == "collect" else SanitizerReport()
    monkeypatch.setattr(stage.profile if check == "collect" else stage.sanitizer, check, record)
    from kgen.arch import parse_arch
    from kgen.compile import CompileResult
    stage.evaluate(CompileResult("sm_90", b"cubin"), CONTRACT, SPEC,
                   parse_arch("sm_90", check_nvcc=False), workers=workers)
    assert seen == [(True, {"CUDA_VISIBLE_DEVICES": "GPU-bbb"})] and not workers.held


def test_a_wrong_result_is_sanitized_at_its_failing_size(monkeypatch):
    calls = _fake_stage(monkeypatch, "wrong", extra={"sizes": {"M": 7, "N": 3, "K": 5}})
    result = _evaluate(stage.EvalOptions())
    assert calls == {"sanitize": ("wrong", {"M": 7, "N": 3, "K": 5}, ".shared")}
    assert result.sanitizer is not None and result.profile is None
    calls.clear()
    assert _evaluate(stage.EvalOptions(sanitize=False)).sanitizer is None and not calls


@pytest.mark.parametrize("verdict, message, sanitized", [
    ("crash", "illegal address", True),
    ("launch_error", "launching gemm_k grid=(1, 1, 1): too many resources", True),
    ("launch_error", "launch gemm_k at M=1: grid=(0, 1, 1) has a dimension <= 0", False),
    ("timeout", "did not finish", False),
    ("suspicious", "faster than the roofline", False)])
def test_which_failures_are_sanitized(monkeypatch, verdict, message, sanitized):
    calls = _fake_stage(monkeypatch, verdict, message)
    _evaluate(stage.EvalOptions())
    assert ("sanitize" in calls) == sanitized and "profile" not in calls


def test_an_unhealthy_gpu_is_not_sanitized(monkeypatch):
    calls = _fake_stage(monkeypatch, "crash")

    def unhealthy(options):
        raise stage.EnvironmentProblem("canary failed")
    monkeypatch.setattr(stage, "ensure_healthy", unhealthy)
    result = _evaluate(stage.EvalOptions())
    assert "gpu_unhealthy" in result.extra and not calls


class _Runner:
    """Stands in for launch.Runner: records the pointers each launch got."""

    def __init__(self):
        self.launched = []

    def prepare(self, buffers, sizes):
        return [tuple(buffers[a].data.data_ptr() if a in buffers else sizes[a]
                      for a in LAUNCH.args)]

    def launch(self, calls):
        self.launched += calls


def test_sanitize_mode_allocates_every_tensor_exactly_and_saves_the_layout_first(monkeypatch,
                                                                               tmp_path):
    from kgen.sandbox import probe

    mallocs, copies = [], []
    runtime = types.SimpleNamespace(
        malloc=lambda n: mallocs.append(n) or 0x1000 * len(mallocs),
        memcpy=lambda dst, src, n, kind: copies.append((dst, n, kind)),
        memcpyHostToDevice=1)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(
        cuda=types.SimpleNamespace(runtime=runtime)))
    monkeypatch.setattr(probe, "wait", lambda what, timeout_s: None)
    saved = []
    runner = _Runner()
    sizes = {"M": 7, "N": 3, "K": 5}
    probe._sanitize(runner, _request(), sizes, saved.append)  # type: ignore[arg-type]
    assert mallocs == [7 * 5 * 4, 5 * 3 * 4, 7 * 3 * 4]  # A, B, C: no guard bands
    assert [(d, n) for d, n, _ in copies] == [(0x1000, 140), (0x2000, 60)]  # inputs only
    (layout,) = saved
    assert layout["buffers"]["C"] == {"start": 0x3000, "bytes": 84, "element": 4,
                                      "role": "output"}
    assert runner.launched == [(0x1000, 0x2000, 0x3000, 7, 3, 5)]


def test_probe_file_keeps_the_layout_when_the_launch_fails(monkeypatch, tmp_path):
    from kgen.sandbox import probe

    _request({"M": 1, "N": 1, "K": 1}).write(tmp_path, b"cubin")
    layout = {"buffers": {"A": {"start": 16, "bytes": 4, "element": 4, "role": "input"}}}

    def sanitize(runner, req, sizes, save):
        save(layout)
        raise probe.Rejected("crash", "illegal address")
    monkeypatch.setattr(probe, "load_module", lambda path, contract: {})
    monkeypatch.setattr(probe, "device_limits", lambda: {})
    monkeypatch.setattr(probe, "_sanitize", sanitize)
    probe.run(tmp_path, "sanitize")
    record = json.loads((Path(tmp_path) / PROBE_FILE).read_text())
    assert record["buffers"] == layout["buffers"] and record["error"] == "crash: illegal address"
    assert record["sizes"] == SPEC.test_sizes[0] and not record["launched"]


def test_profile_mode_runs_the_measured_launch_alone_inside_the_profiler_range(monkeypatch):
    """ncu runs with --profile-from-start off: it measures what runs between cudaProfilerStart
    and Stop, so the warm-up must come before the range, the measured run inside it, and the
    range must close even when that run fails."""
    from kgen.sandbox import probe

    events: list[str] = []
    profiler = types.SimpleNamespace(start=lambda: events.append("start"),
                                     stop=lambda: events.append("stop"))
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=types.SimpleNamespace(
        init=lambda: None, profiler=profiler)))
    monkeypatch.setattr(probe, "make_inputs", lambda *a, **k: {})
    monkeypatch.setattr(probe, "allocate", lambda *a: {})
    monkeypatch.setattr(probe, "load_inputs", lambda *a: None)
    monkeypatch.setattr(probe, "poison", lambda buffers: events.append("poison"))
    monkeypatch.setattr(probe, "wait", lambda what, timeout_s: events.append("wait"))

    class Runner:
        fail = False

        def prepare(self, buffers, sizes):
            return ["call"]

        def launch(self, calls):
            events.append("launch")
            if self.fail and "start" in events:
                raise probe.Rejected("crash", "illegal address")

    sizes = {"M": 7, "N": 3, "K": 5}
    probe._profile(Runner(), _request(), sizes)  # type: ignore[arg-type]
    warm = ["poison", "launch"] * probe.PROFILE_WARMUP + ["wait"]
    assert events == warm + ["poison", "start", "launch", "wait", "stop"]
    events.clear()
    failing = Runner()
    failing.fail = True
    with pytest.raises(probe.Rejected):
        probe._profile(failing, _request(), sizes)  # type: ignore[arg-type]
    assert events == warm + ["poison", "start", "launch", "stop"]
