"""SIGTERM and SIGHUP end a run as Ctrl-C does: the run is marked interrupted, report.md is
written, temp folders are removed, and nvcc's whole process tree is killed, with bubblewrap and
without it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest
from chat_server import ChatServer, Response, completion
from helpers import fenced, kernel

from kgen import process, toolkit
from kgen.arch import parse_arch
from kgen.compile import deps
from kgen.compile import isolation as compile_isolation
from kgen.errors import Signalled
from kgen.loop.session import Run, RunConfig
from kgen.models.scripted import ScriptedModel

pytestmark = pytest.mark.nvcc
GOOD = kernel("gemm_naive_f32.cu")
ROOT = Path(__file__).resolve().parent.parent


def _alive_with(token: str) -> list[int]:
    """Processes whose command line holds `token` (only ones this test started have it)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if token.encode() in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return [pid for pid in found if pid != os.getpid()]


def _fake_toolkit(tmp_path: Path, token: str) -> Path:
    """A CUDA root whose nvcc lists dependencies for real, then compiles forever in two
    processes (a parent and a child), as a pathological kernel would."""
    real = Path(str(shutil.which("nvcc"))).resolve()
    root = tmp_path / "cuda"
    (root / "bin").mkdir(parents=True)
    fake = root / "bin" / "nvcc"
    fake.write_text(f'#!/bin/sh\ncase " $* " in *" -cubin "*|*" -fatbin "*) ;; '
                    f'*) exec {real} "$@";; esac\nsleep 1{token} &\nsleep 2{token}\n')
    fake.chmod(0o755)
    return root


@pytest.mark.parametrize("isolated", [True, False], ids=["bubblewrap", "limits-only"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_closes_the_run_and_kills_nvcc_with_its_children(tmp_path, monkeypatch,
                                                                  isolated, signum):
    if isolated and process.bwrap_path() is None:
        pytest.skip("bubblewrap not usable here")
    real = Path(str(shutil.which("nvcc"))).resolve()
    if isolated and not real.is_relative_to("/usr"):
        pytest.skip("the real nvcc is not visible inside the compile sandbox's /usr")
    deps.system_dirs()  # remember the real toolkit's facts first
    parse_arch("sm_89")
    token = str(uuid.uuid4().int % 10**8 + 10**8)
    root = _fake_toolkit(tmp_path, token)
    monkeypatch.setattr(toolkit, "nvcc_path", lambda: root / "bin" / "nvcc")
    monkeypatch.setattr(toolkit, "cuda_root", lambda: root)
    if not isolated:
        monkeypatch.setattr(process, "bwrap_path", lambda: None)
        monkeypatch.setattr(compile_isolation, "bwrap_path", lambda: None)
    monkeypatch.setenv("KGEN_CACHE_DIR", str(tmp_path / "cache"))  # nvcc must really run
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    config = RunConfig("generate", "sm_89", op="gemm", dtype="float32", no_gpu=True, rounds=2,
                       backend="builtin")
    run = Run.start(config, tmp_path / "run", ScriptedModel([fenced(GOOD)]))
    timer = threading.Timer(2.0, os.kill, (os.getpid(), signum))
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(Signalled) as caught:
            run.execute()
    finally:
        timer.cancel()
    assert caught.value.exit_code == 128 + signum
    assert time.monotonic() - started < 20
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["status"] == "interrupted"
    assert meta["stop_reason"] == f"interrupted by {signal.Signals(signum).name}"
    assert (tmp_path / "run" / "report.md").is_file()
    assert not _alive_with(f"1{token}") and not _alive_with(f"2{token}")
    assert not list(scratch.glob("kgen-nvcc-*"))  # its temp folder is gone
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL or callable(
        signal.getsignal(signal.SIGTERM))  # the handlers were put back


@pytest.mark.slow
def test_sigterm_during_a_model_call_exits_143_with_the_run_closed(tmp_path):
    pytest.importorskip("openai")
    broken = GOOD.replace("acc += A", "acc += AA")
    with ChatServer() as server:
        server.push(completion(f"```cuda\n{broken}```"), Response(200, {}, delay_s=60))
        env = {**os.environ, "PYTHONPATH": f"{ROOT}:{os.environ.get('PYTHONPATH', '')}",
               "KGEN_API_KEY": "sk-shutdown-test-1234567"}
        env.pop("OPENAI_BASE_URL", None)
        env.pop("KGEN_BASE_URL", None)
        run = tmp_path / "run"
        proc = subprocess.Popen(
            [sys.executable, "-m", "kgen", "generate", "--op", "gemm", "--arch", "sm_89",
             "--no-gpu", "--rounds", "3", "--out", str(run), "--model", "test-model",
             "--base-url", server.base_url], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while len(server.completions) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)  # the second call is the one that hangs
        assert len(server.completions) == 2, proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert "stopped by SIGTERM" in err and "--resume" in err
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "interrupted" and "SIGTERM" in meta["stop_reason"]
    assert "compile error" in (run / "report.md").read_text()
