"""`kgen generate` and `kgen fix` from the command line, offline with the builtin author."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import fenced

from kgen import cli
from kgen.arch import parse_arch
from kgen.compile import compile_source
from kgen.loop.candidate import parse_contract
from kgen.models.scripted import ScriptedModel
from kgen.ops import load_op
from tests.conftest import HAVE_GPU

pytestmark = pytest.mark.nvcc
FIXABLE = Path(__file__).parent / "data" / "fixable"


def invoke(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli.main, list(args), env={"KGEN_MODEL": "", **(env or {})})


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_generate_offline_ends_with_a_compiling_best_cu(tmp_path, dtype):
    result = invoke("generate", "--op", "gemm", "--arch", "sm_89", "--dtype", dtype, "--no-gpu",
                    "--out", str(tmp_path / "run"), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["ok"] and not summary["validated"] and summary["attempts"] >= 1
    best = Path(summary["best"]).read_text()
    contract, problems = parse_contract(best, load_op("gemm"))
    assert not problems and contract.dtype == dtype
    assert compile_source(best, parse_arch("sm_89")).ok
    assert "not a language model" in json.loads((tmp_path / "run/run.json").read_text())[
        "config"]["model_description"]


@pytest.mark.skipif(HAVE_GPU, reason="the arch comes from the local GPU here")
def test_generate_without_arch_or_gpu_is_one_clear_error(tmp_path):
    result = invoke("generate", "--op", "gemm", "--out", str(tmp_path / "run"))
    assert result.exit_code == 2
    assert "pass --arch" in result.output and "Traceback" not in result.output


@pytest.mark.skipif(HAVE_GPU, reason="the arch comes from the local GPU here")
@pytest.mark.parametrize("args, words", [(["generate", "--op", "softmaxx"], "unknown op"),
                                         (["generate", "--op", "gemm", "--dtype", "int8"],
                                          "no dtype"),
                                         (["fix", "missing.cu"], "no such file")])
def test_a_typo_is_named_before_the_missing_arch(tmp_path, args, words):
    result = invoke(*args, "--out", str(tmp_path / "run"))
    assert result.exit_code == 2 and words in result.output, result.output
    assert "pass --arch" not in result.output


def test_generate_bad_inputs_exit_2(tmp_path):
    bad = tmp_path / "spec.yaml"
    bad.write_text("name: x\nsizes: [N]\ntensors: {}\n")
    for args, words in [(["--op", "softmaxx"], "unknown op"),
                        (["--op-file", str(bad)], "invalid spec"),
                        (["--dtype", "int8"], "no dtype"),
                        (["--arch", "sm_42"], "unknown architecture")]:
        result = invoke("generate", "--arch", "sm_89", *args, "--out", str(tmp_path / "r"))
        assert result.exit_code == 2 and words in result.output, (args, result.output)


def test_fix_writes_a_new_file_and_shows_the_diff(tmp_path):
    broken = tmp_path / "k.cu"
    shutil.copy(FIXABLE / "missing_semicolon.cu", broken)
    before = broken.read_text()
    result = invoke("fix", str(broken), "--arch", "sm_89", "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    fixed = tmp_path / "k.fixed.cu"
    assert broken.read_text() == before  # never overwritten without --in-place
    assert compile_source(fixed.read_text(), parse_arch("sm_89")).ok
    assert "(fixed)" in result.output and "wrote" in result.output


def test_fix_in_place_keeps_a_backup(tmp_path):
    broken = tmp_path / "k.cu"
    shutil.copy(FIXABLE / "missing_semicolon.cu", broken)
    before = broken.read_text()
    result = invoke("fix", str(broken), "--arch", "sm_89", "--in-place",
                    "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "k.cu.orig").read_text() == before
    assert compile_source(broken.read_text(), parse_arch("sm_89")).ok


def test_fix_beyond_the_builtin_fixer_fails_plainly(tmp_path):
    broken = tmp_path / "k.cu"
    broken.write_text("extern \"C\" __global__ void k(float* x) { x[0] = sqrtf(x[0], 2); }\n")
    result = invoke("fix", str(broken), "--arch", "sm_89", "--out", str(tmp_path / "run"), "--json")
    assert result.exit_code == 1
    assert "--base-url" in result.output  # points to an LLM endpoint
    assert not (tmp_path / "k.fixed.cu").exists()


def test_interrupt_exits_130_and_resume_continues(tmp_path, monkeypatch):
    from kgen.author.space import default, render

    good = render(default(parse_arch("sm_89"), "float32"), "float32")
    broken = good.replace("__global__", "__global__ __global_", 1)
    # One reply with a broken kernel, then the user presses Ctrl-C while the model thinks.
    model = ScriptedModel([fenced(broken), KeyboardInterrupt()])
    monkeypatch.setattr("kgen.models.resolve_model", lambda *a, **k: model)
    run = tmp_path / "run"
    result = invoke("generate", "--arch", "sm_89", "--no-gpu", "--out", str(run))
    assert result.exit_code == 130 and "--resume" in result.output
    assert json.loads((run / "run.json").read_text())["status"] == "interrupted"
    assert len((run / "results.jsonl").read_text().splitlines()) == 1
    assert "compile error" in (run / "report.md").read_text()  # the report covers what ran

    model = ScriptedModel([fenced(good)])
    result = invoke("generate", "--resume", str(run), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["attempts"] == 2 and summary["best"].endswith("best.cu")
    assert "resuming" in result.output


def test_unwritable_output_is_one_line_not_a_traceback(tmp_path):
    source = tmp_path / "k.cu"
    source.write_text('extern "C" __global__ void k(float* x) { x[0] = 1.f; }\n')
    result = invoke("compile", str(source), "--arch", "sm_89", "-o", str(tmp_path / "no/x.cubin"))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "No such file or directory" in result.output


def test_model_text_is_never_read_as_markup(capsys):
    from kgen.cli.progress import Progress
    from kgen.loop.attempt import Attempt
    from kgen.loop.loop import Trajectory

    attempt = Attempt(1, 1, "x", choices="tile=[/x] [bold]", notes="")
    Progress().attempt(attempt, Trajectory([attempt]))
    assert "tile=[/x] [bold]" in capsys.readouterr().err


def test_fix_resumes_without_file_from_another_folder(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(FIXABLE / "missing_semicolon.cu", work / "k.cu")
    monkeypatch.chdir(work)
    (tmp_path / "script.json").write_text(json.dumps(["no code"]))
    result = invoke("fix", "k.cu", "--arch", "sm_89", "--max-attempts", "1", "--out", "run",
                    "--backend", "scripted", env={"KGEN_SCRIPT": str(tmp_path / "script.json")})
    assert result.exit_code == 1, result.output
    saved = json.loads((work / "run/run.json").read_text())["config"]
    assert saved["input_path"] == str(work / "k.cu")  # absolute: resumable from anywhere
    monkeypatch.chdir(tmp_path)
    result = invoke("fix", "--resume", str(work / "run"), "--backend", "builtin")
    assert result.exit_code == 1 and "resuming" in result.output, result.output
    assert "all 1 rounds used" in result.output  # the saved budget holds


def test_credentials_in_the_base_url_stay_out_of_run_json(tmp_path, monkeypatch):
    from kgen.loop.session import Run, RunConfig

    config = RunConfig("generate", "sm_89", op="gemm", backend="builtin",
                       base_url="http://user:s3cretpassw0rd@localhost:8000/v1")
    run = Run.start(config, tmp_path / "run")
    text = (run.run_dir.path / "run.json").read_text()
    assert "s3cretpassw0rd" not in text and "localhost:8000/v1" in text


def test_fix_output_naming_the_input_keeps_a_backup(tmp_path):
    broken = tmp_path / "k.cu"
    shutil.copy(FIXABLE / "missing_semicolon.cu", broken)
    before = broken.read_text()
    result = invoke("fix", str(broken), "--arch", "sm_89", "-o", str(broken),
                    "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "k.cu.orig").read_text() == before
