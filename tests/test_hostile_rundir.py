"""A run directory is data: hostile or damaged run.json and results.jsonl, prompt sets and
endpoints named only by the folder, two processes at once, and colliding default names."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import fenced, kernel

from kgen import cli
from kgen.errors import UsageError
from kgen.loop import prompts
from kgen.loop.results import CORRUPT_FILE
from kgen.loop.rundir import RunDir, default_run_dir
from kgen.loop.session import ResumeOptions, Run, RunConfig
from kgen.models.scripted import ScriptedModel

pytestmark = pytest.mark.nvcc

GOOD = kernel("gemm_naive_f32.cu")
BROKEN = GOOD.replace("acc += A", "acc += AA")
KEY = "sk-hostile-rundir-key-123456"


@pytest.fixture
def run_path(tmp_path):
    """A finished two-attempt run (both compile errors), its lock let go."""
    config = RunConfig("generate", "sm_89", op="gemm", dtype="float32", no_gpu=True, rounds=2,
                       backend="builtin")
    run = Run.start(config, tmp_path / "run", ScriptedModel([fenced(BROKEN), fenced(BROKEN)]))
    run.execute()
    run.run_dir.release()
    return run.run_dir.path


def _edit_config(path: Path, **changes) -> None:
    meta = json.loads((path / "run.json").read_text())
    meta["config"].update(changes)
    (path / "run.json").write_text(json.dumps(meta))


def _resume(path: Path, **options):
    return Run.resume(path, ResumeOptions(backend="builtin", **options))


def invoke(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli.main, list(args), env={"KGEN_MODEL": "", **(env or {})})


@pytest.mark.parametrize("text", ["{not json", "[]", '{"config": 3}', "\xff\xfe"])
def test_unreadable_run_json_is_one_line(run_path, text):
    (run_path / "run.json").write_bytes(text.encode("latin-1"))
    with pytest.raises(UsageError, match="run.json"):
        _resume(run_path)


@pytest.mark.parametrize("changes, field", [
    ({"rounds": "8"}, "rounds"), ({"rounds": True}, "rounds"), ({"rounds": 10**9}, "rounds"),
    ({"mode": "rm -rf"}, "mode"), ({"input_path": ["x"]}, "input_path"),
    ({"wall_seconds": float("nan")}, "wall_seconds"), ({"no_gpu": "yes"}, "no_gpu"),
    ({"prompt_set": {"a": 1}}, "prompt_set"), ({"tokens": -5}, "tokens"),
    ({"compile_baseline": 0}, "compile_baseline"),
])
def test_mistyped_config_fields_are_named(run_path, changes, field):
    _edit_config(run_path, **changes)
    with pytest.raises(UsageError, match=f"config.{field}|{field}"):
        _resume(run_path)


def test_hostile_prompt_set_is_refused_in_one_line(run_path, tmp_path):
    evil = tmp_path / "evil"
    evil.mkdir()
    marker = tmp_path / "pwned"
    (evil / "system.md.j2").write_text(
        "{{ cycler.__init__.__globals__.os.system('touch " + str(marker) + "') }}")
    _edit_config(run_path, prompt_set=str(evil))
    result = invoke("generate", "--resume", str(run_path))
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "does not ship" in result.output and "--prompt-set" in result.output
    # Named by the user now, it is used: rendered in the sandbox, where it cannot run anything.
    with pytest.raises(UsageError, match="unsafe|not safely|access to attribute"):
        run = _resume(run_path, prompt_set=str(evil))
        prompts.build_messages(run.task, (), run.config.prompt_set)
    assert not marker.exists()


def test_saved_endpoint_never_gets_the_key_unless_named_now(run_path, monkeypatch):
    _edit_config(run_path, base_url="http://attacker.example/v1", backend="openai")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for name in ("KGEN_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(UsageError, match="--base-url"):
        Run.resume(run_path, ResumeOptions(model="m"))
    run = Run.resume(run_path, ResumeOptions(model="m", base_url="http://127.0.0.1:9/v1"))
    assert run.config.base_url == "http://127.0.0.1:9/v1"
    monkeypatch.setenv("KGEN_BASE_URL", "http://127.0.0.1:8/v1")  # named now, by environment
    run = Run.resume(run_path, ResumeOptions(model="m"))
    assert run.model.base_url == "http://127.0.0.1:8/v1"  # type: ignore[attr-defined]


def test_unsafe_no_sandbox_comes_only_from_the_command_line(run_path):
    _edit_config(run_path, unsafe_no_sandbox=True)
    assert _resume(run_path).config.unsafe_no_sandbox is False
    assert _resume(run_path, unsafe_no_sandbox=True).config.unsafe_no_sandbox is True


def test_op_files_and_problems_named_only_by_run_json_are_refused(run_path, tmp_path):
    """A KernelBench problem is Python kgen runs (in the probe, outside the sandbox); an op file
    is text sent to the model: run.json cannot name either (seen as a hole in review)."""
    marker = tmp_path / "pwned"
    evil = tmp_path / "19_evil.py"
    evil.write_text(f"import pathlib; pathlib.Path({str(marker)!r}).touch()\n")
    _edit_config(run_path, kernelbench=str(evil), op=None)
    result = invoke("generate", "--resume", str(run_path))
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "data, not code" in result.output and "--kernelbench" in result.output
    assert not marker.exists()
    _edit_config(run_path, kernelbench=None, op=None, op_file=str(tmp_path / "other.yaml"))
    with pytest.raises(UsageError, match="name it yourself: --op-file"):
        _resume(run_path)


def test_an_op_file_named_again_resumes_and_another_is_refused(tmp_path):
    spec = Path(__file__).parent / "data" / "specs" / "scale.yaml"
    config = RunConfig("generate", "sm_89", op_file=str(spec), no_gpu=True, rounds=1,
                       backend="builtin")
    run = Run.start(config, tmp_path / "run", ScriptedModel(["no code"]))
    run.execute()
    run.run_dir.release()
    with pytest.raises(UsageError, match="not the file this run started with"):
        _resume(run.run_dir.path, op_file=str(tmp_path / "scale.yaml"))
    resumed = _resume(run.run_dir.path, op_file=str(spec))
    assert resumed.task.spec is not None and resumed.config.op_file == str(spec.resolve())
    resumed.run_dir.release()
    with pytest.raises(UsageError, match="not started with --kernelbench"):
        _resume(run.run_dir.path, op_file=str(spec), kernelbench=str(spec))


def test_fix_resume_reads_only_the_runs_own_input(tmp_path):
    source = tmp_path / "k.cu"
    source.write_text(BROKEN)
    secret = tmp_path / "secret.txt"
    secret.write_text("the user's private notes\n")
    config = RunConfig("fix", "sm_89", input_path=str(source), rounds=1, patience=0,
                       backend="builtin")
    run = Run.start(config, tmp_path / "run", ScriptedModel(["no code"]))
    run.run_dir.release()
    _edit_config(run.run_dir.path, input_path=str(secret))
    with pytest.raises(UsageError, match="not the file this run started from"):
        _resume(run.run_dir.path)


def test_torn_last_line_is_repaired_and_that_attempt_redone(run_path):
    results = run_path / "results.jsonl"
    whole = results.read_bytes()
    results.write_bytes(whole[: len(whole) - 40])  # attempt 2 cut off mid-write
    run = _resume(run_path)
    assert [a.number for a in run.history] == [1]
    assert any("cut off" in n and "attempt 2 is redone" in n for n in run.run_dir.notices)
    assert results.read_bytes().endswith(b"\n") and len(results.read_bytes().splitlines()) == 1


def test_corrupt_middle_line_is_refused_by_number_or_set_aside(run_path):
    results = run_path / "results.jsonl"
    lines = results.read_bytes().splitlines()
    results.write_bytes(lines[0] + b"\n" + b'{"attempt": 2, "round": "x"}\n' + lines[1] + b"\n")
    with pytest.raises(UsageError, match="line 2 .*--skip-corrupt"):
        _resume(run_path)
    run = _resume(run_path, skip_corrupt=True)
    assert [a.number for a in run.history] == [1, 2]
    assert (run_path / CORRUPT_FILE).read_text().strip() == '{"attempt": 2, "round": "x"}'
    assert any("set aside 1" in n for n in run.run_dir.notices)


@pytest.mark.parametrize("bad", [
    b'{"attempt": 1, "round": 1}{"attempt": 2, "round": 1}',  # two records glued together
    b'{"attempt": 1, "round": 1, "problems": [{"line": "7"}]}',
    b'{"attempt": 1, "round": 1, "evaluation": {"verdict": "pass", "timings": [{"ms": "x"}]}}',
    b'{"attempt": 0, "round": 1}', b'[1, 2]', b"\xff\xfe",
])
def test_records_of_the_wrong_shape_are_corrupt(run_path, bad):
    results = run_path / "results.jsonl"
    results.write_bytes(bad + b"\n" + results.read_bytes())
    with pytest.raises(UsageError, match="line 1 is not a valid attempt record"):
        _resume(run_path)


def test_skipped_record_keeps_its_folder(run_path):
    results = run_path / "results.jsonl"
    lines = results.read_bytes().splitlines()
    results.write_bytes(lines[0] + b"\n" + b"garbage\n")  # attempt 2's record is lost
    run = _resume(run_path, skip_corrupt=True)
    run.model = ScriptedModel([fenced(GOOD)])
    run.config = RunConfig(**{**run.config.__dict__, "rounds": 3})
    run.execute()
    numbers = [json.loads(x)["attempt"] for x in results.read_text().splitlines()]
    assert numbers == [1, 3]  # after attempt 2's folder, which stays as it was
    assert "AA" in (run_path / "attempts" / "002" / "kernel.cu").read_text()


def test_a_second_process_is_kept_out_and_named(run_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time\n"
         f"fd = os.open({str(run_path / '.lock')!r}, os.O_RDWR | os.O_CREAT)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\nos.ftruncate(fd, 0)\n"
         "os.write(fd, str(os.getpid()).encode())\nprint('locked', flush=True)\n"
         "time.sleep(30)\n"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(UsageError, match=f"in use by another kgen process \\(pid "
                                             f"{holder.pid}\\)"):
            RunDir.open(run_path)
    finally:
        holder.kill()
        holder.wait()
    RunDir.open(run_path).release()


def test_lock_is_held_while_a_run_writes(tmp_path):
    run_dir = RunDir.create(tmp_path / "run", {"test": True})
    fd = os.open(tmp_path / "run" / ".lock", os.O_RDWR)
    with pytest.raises(BlockingIOError):
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.close(fd)
    assert (tmp_path / "run" / ".lock").read_text() == str(os.getpid())
    run_dir.release()


def test_torn_transcript_does_not_swallow_the_next_call(run_path):
    transcript = run_path / "transcript.jsonl"
    transcript.write_bytes(transcript.read_bytes()[:-20])
    RunDir.open(run_path).log_call({"attempt": 3})
    assert json.loads(transcript.read_text().splitlines()[-1]) == {"attempt": 3}


def test_non_utf8_kernel_in_an_attempt_folder_loads(run_path):
    (run_path / "attempts" / "001" / "kernel.cu").write_bytes(b"// \xff\xfe\n" + BROKEN.encode())
    assert _resume(run_path).history[0].source.startswith("// \ufffd")


def test_default_run_directories_never_collide():
    names = {default_run_dir("gemm-sm_89") for _ in range(200)}
    assert len(names) == 200
    assert all(p.parent == Path("runs") for p in names)
    assert default_run_dir("../../etc").parent == Path("runs")
