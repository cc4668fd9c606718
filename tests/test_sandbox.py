"""The parent side of the sandbox with stand-in workers: timeouts, crashes, output caps, a clean
environment; plus the job format, the GPU-less paths of evaluate/bench/doctor. No GPU needed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgen import doctor
from kgen.arch import Arch, parse_arch
from kgen.cli import KgenGroup
from kgen.cli.gpu_cmds import bench, profile_cmd
from kgen.cli.gpu_cmds import doctor as doctor_cmd
from kgen.gpu import client, evaluate
from kgen.loop.candidate import parse_contract
from kgen.ops import load_op
from kgen.verdict import Evaluation, Timing
from kgen.wire import RESULT_FILE, EvalRequest

CHEATS = Path(__file__).parent / "data" / "cheats"
SPEC = load_op("gemm")
PY = sys.executable


def _py(code: str) -> list[str]:
    return [PY, "-c", code]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _sleepers(tag: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and tag in (proc / "cmdline").read_text() and _alive(
                    int(proc.name)):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.mark.slow
@pytest.mark.parametrize("unsafe", [True, False], ids=["plain", "bubblewrap"])
def test_endless_worker_is_timed_out_with_its_process_group(tmp_path, unsafe):
    if not unsafe and __import__("kgen.process").process.bwrap_path() is None:
        pytest.skip("bubblewrap not usable here")
    # the stand-in starts a grandchild, like a worker whose kernel never ends
    tag = f"{os.getpid() % 1000 + 1000}{int(unsafe)}7"
    code = (f"import subprocess, time; p = subprocess.Popen(['sleep', '{tag}']); "
            "open('child.pid', 'w').write(str(p.pid)); time.sleep(1000)")
    start = time.monotonic()
    result = client.run_worker(None, None, timeout_s=2, unsafe=unsafe, command=_py(code),
                               workdir=tmp_path)
    assert result.verdict == "timeout"
    assert "did not finish within" in result.message and "process group" in result.message
    assert time.monotonic() - start < 20
    assert (tmp_path / "child.pid").exists()  # the grandchild did start
    time.sleep(0.5)
    assert _sleepers(f"sleep\0{tag}") == []


def test_worker_that_exits_nonzero_is_a_crash_with_its_last_words():
    result = client.run_worker(None, None, timeout_s=30, unsafe=True,
                               command=_py("import sys; print('CUDA went away'); sys.exit(3)"))
    assert result.verdict == "crash"
    assert "exited with code 3" in result.message and "CUDA went away" in result.message


def test_worker_killed_by_a_signal_names_the_signal():
    result = client.run_worker(None, None, timeout_s=30, unsafe=True,
                               command=_py("import os, signal; os.kill(os.getpid(), "
                                           "signal.SIGSEGV)"))
    assert result.verdict == "crash" and "SIGSEGV" in result.message


def test_worker_output_is_capped():
    code = "import sys\nfor i in range(200000): print('x' * 100)\nsys.exit(1)"
    result = client.run_worker(None, None, timeout_s=60, unsafe=True, command=_py(code))
    assert result.verdict == "crash"
    assert "output truncated" in result.message
    assert len(result.message) < 1000 and len(result.extra["output"]) <= 2000


def test_worker_environment_holds_no_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("HF_TOKEN", "hf-secret")
    monkeypatch.setenv("KGEN_API_KEY", "k-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    code = "import json, os; json.dump(dict(os.environ), open('env.json', 'w'))"
    client.run_worker(None, None, timeout_s=30, unsafe=True, command=_py(code),
                      workdir=tmp_path)
    env = json.loads((tmp_path / "env.json").read_text())
    assert "secret" not in json.dumps(env)
    assert env["HOME"] == str(tmp_path)
    assert str(Path(client.__file__).resolve().parents[2]) in env["PYTHONPATH"]


def test_a_result_file_is_read_back_and_notes_are_added(tmp_path):
    data = Evaluation("wrong", "3 of 9 outputs off", (Timing({"M": 1}, 1.0, 0.9, 1.1),)).to_json()
    code = f"import json; json.dump({data!r}, open({RESULT_FILE!r}, 'w'))"
    result = client.run_worker(None, None, timeout_s=30, unsafe=True, command=_py(code),
                               workdir=tmp_path)
    assert result.verdict == "wrong" and result.message == "3 of 9 outputs off"
    assert result.timings[0].p80_ms == 1.1
    assert "UNSAFE" in result.note and result.extra["isolation"] == "none"


def test_a_forged_verdict_is_not_trusted(tmp_path):
    code = f"import json; json.dump({{'verdict': 'great'}}, open({RESULT_FILE!r}, 'w'))"
    result = client.run_worker(None, None, timeout_s=30, unsafe=True, command=_py(code),
                               workdir=tmp_path)
    assert result.verdict == "crash"


def test_job_round_trips_through_json(tmp_path):
    source = (CHEATS / "correct_two_launch.cu").read_text()
    contract, problems = parse_contract(source, SPEC)
    assert contract is not None and not problems
    job = EvalRequest(SPEC, contract, "float32", SPEC.test_sizes, SPEC.bench_sizes[:1], 42)
    job.write(tmp_path, b"\x7fELF")
    again = EvalRequest.from_json(json.loads((tmp_path / "request.json").read_text()))
    assert again == job
    assert again.contract.launches[1].dims({"M": 100, "N": 40, "K": 8}) == ((3, 7, 4), (16, 16), 0)


def test_the_real_worker_reports_a_missing_gpu_stack_as_a_verdict(tmp_path):
    source = (CHEATS / "correct_tiled.cu").read_text()
    contract, _ = parse_contract(source, SPEC)
    EvalRequest(SPEC, contract, "float32", SPEC.test_sizes[:1], (), 1).write(tmp_path, b"junk")
    env = client.worker_env(tmp_path)
    # no cupy here (or no GPU): the worker must still write a verdict, never hang or raise
    done = subprocess.run(client.worker_command(tmp_path), env=env, cwd=tmp_path, timeout=120,
                          capture_output=True)
    assert done.returncode == 0
    result = Evaluation.from_json(json.loads((tmp_path / RESULT_FILE).read_text()))
    assert result.verdict in ("launch_error", "crash") and result.message


def test_a_worker_that_cannot_start_is_an_environment_problem(tmp_path):
    from kgen.errors import EnvironmentProblem

    EvalRequest(SPEC, parse_contract((CHEATS / "correct_tiled.cu").read_text(), SPEC)[0],
                "float32", SPEC.test_sizes[:1], (), 1).write(tmp_path, b"junk")
    # Through run_worker, the missing GPU stack (or a missing module) is never a verdict.
    with pytest.raises(EnvironmentProblem, match="cannot run here|could not start"):
        client.run_worker(None, None, timeout_s=120, unsafe=True, workdir=tmp_path)
    with pytest.raises(EnvironmentProblem, match="could not start"):
        client.run_worker(None, None, timeout_s=30, unsafe=True,
                          command=[PY, "-m", "kgen_no_such_module"])


@pytest.mark.skipif(__import__("kgen.process").process.bwrap_path() is None,
                    reason="bubblewrap not usable here")
@pytest.mark.slow
def test_the_worker_sandbox_binds_a_python_environment_under_tmp(tmp_path):
    """A virtual environment under /tmp must stay visible under the sandbox's private /tmp."""
    venv = Path(tempfile.mkdtemp(prefix="kgen-venv-", dir="/tmp"))
    try:
        subprocess.run([PY, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        # The packages this test runs with, whether they sit in the system's site-packages or in
        # a virtual environment of their own (a venv made from a venv would not see the latter).
        site = next(venv.glob("lib/python*/site-packages"))
        (site / "parent.pth").write_text("\n".join(p for p in sys.path if Path(p).is_dir()))
        inner = ("import kgen.sandbox.worker, json; "
                 "json.dump({'verdict': 'pass'}, open('result.json', 'w'))")
        code = ("import sys, tempfile, pathlib; from kgen.gpu import client; "
                "w = pathlib.Path(tempfile.mkdtemp()); "
                "r = client.run_worker(None, None, timeout_s=60, workdir=w, "
                f"command=[sys.executable, '-c', {inner!r}]); "
                "print(r.verdict, r.extra['isolation'])")
        done = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True,
                              text=True, timeout=120, cwd=tmp_path)
        assert done.stdout.split() == ["pass", "bubblewrap"], done.stdout + done.stderr
    finally:
        shutil.rmtree(venv, ignore_errors=True)


def test_quick_options_time_every_bench_size_briefly():
    options = evaluate.EvalOptions.quick(SPEC)
    contract, _ = parse_contract((CHEATS / "correct_tiled.cu").read_text(), SPEC)
    job = evaluate.make_request(SPEC, contract, options)
    assert job.bench_sizes == SPEC.bench_sizes and len(job.bench_sizes) == 3
    assert options.bench_budget_s < evaluate.EvalOptions().bench_budget_s and job.input_sets == 3
    assert len(job.test_sizes) == len(SPEC.test_sizes) and len(job.revalidate_sizes) == 2
    assert job.seed != evaluate.make_request(SPEC, contract, options).seed  # fresh inputs


def test_plan_for_mismatched_archs(monkeypatch):
    monkeypatch.setattr(evaluate, "local_gpu", lambda: ("NVIDIA H200", Arch("sm_90", 90, "")))
    monkeypatch.setattr(evaluate, "missing_stack", lambda: ["cupy"])
    lacking = evaluate.plan(parse_arch("sm_90", check_nvcc=False))
    assert not lacking.runnable and "cupy not installed" in lacking.message
    monkeypatch.setattr(evaluate, "missing_stack", lambda: [])
    assert evaluate.plan(parse_arch("sm_90", check_nvcc=False)).mode == "native"
    ptx = evaluate.plan(parse_arch("sm_89", check_nvcc=False))
    assert ptx.embed_ptx and "timings are for the local GPU" in ptx.message
    no = evaluate.plan(parse_arch("sm_100", check_nvcc=False))
    assert not no.runnable and "cannot run on the local GPU (NVIDIA H200, sm_90)" in no.message
    monkeypatch.setattr(evaluate, "local_gpu", lambda: None)
    assert evaluate.plan(parse_arch("sm_90", check_nvcc=False)).mode == "no-gpu"
    assert not evaluate.gpu_available()


def _cli():
    return KgenGroup(commands={"bench": bench, "doctor": doctor_cmd, "profile": profile_cmd})


@pytest.mark.skipif(evaluate.gpu_available(), reason="checks the no-GPU path")
@pytest.mark.parametrize("command, need", [
    ("bench", "kgen bench needs one to validate and time"),
    # it once said "kgen bench needs one" too
    ("profile", "kgen profile needs one to run Nsight Compute on"),
])
def test_gpu_command_without_gpu_is_one_line_naming_itself_and_exit_3(command, need):
    result = CliRunner().invoke(_cli(), [command, str(CHEATS / "correct_tiled.cu")])
    assert result.exit_code == 3
    assert result.output.strip().splitlines() == [
        f"kgen: error: no CUDA GPU here: {need} (kgen compile works without)"]


def test_bench_refuses_a_dtype_the_file_is_not_for():
    result = CliRunner().invoke(_cli(), ["bench", str(CHEATS / "correct_tiled.cu"),
                                         "--dtype", "float16"])
    assert result.exit_code == 2 and "dtype=float32" in result.output


@pytest.mark.nvcc
def test_doctor_binary_reports_an_sm_89_cubin(tmp_path):
    cubin = tmp_path / "k.cubin"
    subprocess.run(["nvcc", "-cubin", "-arch=sm_89", "-o", str(cubin),
                    str(CHEATS / "correct_tiled.cu")], check=True, timeout=120)
    result = CliRunner().invoke(_cli(), ["doctor", "--binary", str(cubin)])
    assert "cubin; SASS: sm_89; PTX: none" in result.output
    checks = doctor.check_binary(cubin)
    assert checks[0].status == "ok"
    if not evaluate.gpu_available():
        assert checks[1].status == "missing" and result.exit_code == 0


@pytest.mark.nvcc
def test_doctor_binary_reads_fatbins_and_host_objects(tmp_path):
    src = str(CHEATS / "correct_tiled.cu")
    fat, obj = tmp_path / "k.fatbin", tmp_path / "k.o"
    gencode = ["-gencode", "arch=compute_80,code=[sm_80,compute_80]",
               "-gencode", "arch=compute_90,code=sm_90"]
    subprocess.run(["nvcc", "-fatbin", *gencode, "-o", str(fat), src], check=True, timeout=120)
    subprocess.run(["nvcc", "-c", *gencode, "-o", str(obj), src], check=True, timeout=120)
    from kgen.compile.binary import inspect

    for path, kind in ((fat, "fatbin"), (obj, "host binary")):
        info = inspect(path)
        assert (info.kind, info.sass, info.ptx) == (kind, (80, 90), (80,))
        assert info.runs_on(90) == "native" and info.runs_on(89) == "ptx"
        assert info.runs_on(75) == "no"


def test_doctor_without_gpu_reports_what_is_missing(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("KGEN_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("KGEN_API_KEY", raising=False)
    monkeypatch.setattr(doctor, "local_gpu", lambda: None)
    checks = {c.name: c for c in doctor.run_checks()}
    assert checks["gpu"].status == "missing"
    assert checks["gpu worker"].status == "missing"
    assert checks["model endpoint"].status == "missing" and "builtin" in checks[
        "model endpoint"].detail
    assert checks["torch"].status == "ok"
    assert {"nvcc", "cupy", "isolation", "ncu", "compute-sanitizer"} <= set(checks)


def test_doctor_endpoint_that_does_not_answer(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-printed")
    check = doctor.check_endpoint(timeout=2)
    assert check.status == "fail" and "does not answer" in check.detail
    assert "sk-never-printed" not in check.detail and "key set" in check.detail
    assert "127.0.0.1:9" in check.detail


def test_parent_never_imports_cupy_or_torch_to_evaluate():
    code = ("import sys, kgen.gpu.evaluate, kgen.cli.gpu_cmds, kgen.doctor, kgen.gpu.client; "
            "print(any(m in sys.modules for m in ('torch', 'cupy')))")
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ})
    assert out.stdout.strip() == "False"


@pytest.mark.skipif(__import__("kgen.process").process.bwrap_path() is None,
                    reason="bubblewrap not usable here")
def test_worker_runs_inside_bubblewrap(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    # /tmp is a private tmpfs inside the sandbox; /var/tmp is on the (read-only) root filesystem
    escape = Path(f"/var/tmp/kgen-escape-{os.getpid()}")
    code = ("import json, socket\nr = {}\n"
            f"try:\n    open({str(escape)!r}, 'w'); r['outside'] = True\n"
            "except OSError:\n    r['outside'] = False\n"
            "open('inside', 'w').write('ok')\n"
            "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=2); r['net'] = True\n"
            "except OSError:\n    r['net'] = False\n"
            "json.dump(r, open('probe.json', 'w'))")
    result = client.run_worker(None, None, timeout_s=60, command=_py(code), workdir=work)
    probe = json.loads((work / "probe.json").read_text())
    assert probe == {"outside": False, "net": False}
    escaped = escape.exists()
    escape.unlink(missing_ok=True)
    assert (work / "inside").read_text() == "ok" and not escaped
    assert result.extra["isolation"] == "bubblewrap" and "UNSAFE" not in result.note


class _FakeRuntime:
    """Stands in for cupy.cuda.runtime: eventQuery returns the scripted statuses."""

    class CUDARuntimeError(RuntimeError):
        def __init__(self, status):
            super().__init__(f"cudaError {status}")

    def __init__(self, statuses, sync_error=None):
        self.statuses = list(statuses)
        self.sync_error = sync_error

    def eventQuery(self, ptr):  # noqa: N802 - cupy's name
        return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]

    def deviceSynchronize(self):  # noqa: N802
        if self.sync_error:
            raise self.CUDARuntimeError(self.sync_error)


def _fake_cupy(monkeypatch, runtime):
    import types

    class Event:
        ptr = 1

        def __init__(self, **_):
            pass

        def record(self):
            pass

    cuda = types.SimpleNamespace(Event=Event, runtime=runtime)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=cuda))


def test_wait_turns_a_kernel_error_into_crash_not_timeout(monkeypatch):
    from kgen.sandbox.launch import NOT_READY, wait
    from kgen.sandbox.rejected import Rejected

    # the kernel runs a little, then faults (700 = cudaErrorIllegalAddress)
    _fake_cupy(monkeypatch, _FakeRuntime([NOT_READY, NOT_READY, 700], sync_error=700))
    with pytest.raises(Rejected) as err:
        wait("the kernel", timeout_s=5)
    assert err.value.verdict == "crash" and "cudaError 700" in err.value.message
    # an error the synchronize does not raise is still a crash
    _fake_cupy(monkeypatch, _FakeRuntime([716]))
    with pytest.raises(Rejected, match="cudaError 716"):
        wait("the kernel", timeout_s=5)


def test_wait_times_out_on_a_kernel_that_never_ends(monkeypatch):
    from kgen.sandbox.launch import NOT_READY, wait
    from kgen.sandbox.rejected import Rejected

    _fake_cupy(monkeypatch, _FakeRuntime([NOT_READY]))
    start = time.monotonic()
    with pytest.raises(Rejected) as err:
        wait("the kernel at float32 M=1", timeout_s=0.3)
    assert err.value.verdict == "timeout" and "did not finish within 0.3 s" in err.value.message
    assert time.monotonic() - start < 3
    _fake_cupy(monkeypatch, _FakeRuntime([NOT_READY, 0]))
    wait("the kernel", timeout_s=5)  # finished: no verdict


class _Function:
    """A stand-in for a cupy function: its static shared bytes, and the opt-in the launcher sets."""

    def __init__(self, static: int) -> None:
        self.shared_size_bytes = static
        self.max_threads_per_block = 1024
        self.max_dynamic_shared_size_bytes = 0


@pytest.mark.parametrize("dynamic, static, opted_in", [
    (49152, 64, True),    # seen on the H200: exactly 48 KiB dynamic beside 64 static bytes
    (49152, 0, False),    # the default covers it
    (49216, 0, True),
    (40000, 10000, True),
    (1024, 64, False),
])
def test_dynamic_shared_memory_is_opted_in_when_static_and_dynamic_pass_48_kib(
        dynamic, static, opted_in):
    from kgen.contract import Launch
    from kgen.sandbox.launch import check_dims

    launch = Launch("k", ("1",), ("256",), str(dynamic), (), 1)
    limits = {"threads": 1024, "smem_optin": 232448, "sms": 132}
    func = _Function(static)
    assert check_dims(launch, {}, func, limits) == ((1,), (256,), dynamic)
    assert func.max_dynamic_shared_size_bytes == (dynamic if opted_in else 0)
