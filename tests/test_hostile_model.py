"""Everything a model (or an endpoint) sends is bounded and escaped: replies normalized before
they are written, contracts parsed within limits and checked against the target, response bodies
checked, a wall-clock deadline per call, and no control sequence or markup reaches the terminal."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from chat_server import ChatServer, Response, completion
from click.testing import CliRunner
from helpers import kernel

from kgen import cli
from kgen.arch import parse_arch
from kgen.errors import ModelFatal
from kgen.loop.candidate import parse_contract
from kgen.loop.geometry import launch_problems
from kgen.loop.task import Task
from kgen.models.base import Request
from kgen.ops import load_op
from kgen.textsafe import clean_reply, terminal

GOOD = kernel("gemm_naive_f32.cu")
SPEC = load_op("gemm")
ESC = "\x1b[2J\x1b[H\x1b]0;owned\x07\x1b[32m0 errors\x1b[0m"
LAUNCH = "grid=(cdiv(N,16), cdiv(M,16)) block=(16,16)"


def _task() -> Task:
    return Task("generate", parse_arch("sm_89", check_nvcc=False), SPEC, "float32")


# --- replies and terminal text -------------------------------------------------------------

@pytest.mark.parametrize("text", [ESC, "\ud800lone", "nul\x00byte", "bell\x07", "\x9b31mC1",
                                  "bidi\u202eevil", "del\x7f"])
def test_terminal_text_has_no_control_sequences(text):
    shown = terminal(text)
    assert not any(ch in shown for ch in "\x1b\x00\x07\x9b\x7f\u202e")
    assert "\ud800" not in shown


def test_markup_is_escaped_for_rich(capsys):
    from rich.console import Console

    Console(stderr=True).print(terminal("[bold red]x[/] \\[y] [link=file:///etc]z", markup=True))
    assert "[bold red]x[/] \\[y] [link=file:///etc]z" in capsys.readouterr().err


def test_replies_are_normalized_before_they_are_written():
    text = clean_reply("a\ud800b\x00c" + ESC + "\r\n\tend")
    assert text == "a\ufffdbc0 errors\r\n\tend"
    text.encode("utf-8")  # writable anywhere


# --- contracts from a model ----------------------------------------------------------------

def _contract(launch_line: str):
    source = GOOD.replace(GOOD.splitlines()[2], launch_line)
    return parse_contract(source, SPEC)


@pytest.mark.parametrize("grid", [
    "(" + "+".join(["1"] * 100_000) + ")",  # 100k terms
    "(" + "(" * 5000 + "1" + ")" * 5000 + ")",  # deep nesting
    "(" + "*".join(["99999999999"] * 40) + ")",  # huge intermediate ints
    "(N ** 99999999)",
])
def test_contract_expressions_are_bounded(grid):
    started = time.monotonic()
    contract, problems = _contract(f"// kgen: launch gemm_naive grid={grid} block=(16,16) "
                                   "args=(A, B, C, M, N, K)")
    assert contract is None and len(problems) == 1 and problems[0].category == "contract"
    assert time.monotonic() - started < 1.0 and len(problems[0].message) < 400


def test_ten_thousand_launch_lines_are_read_in_linear_time():
    line = f"// kgen: launch gemm_naive {LAUNCH} args=(A, B, C, M, N, K)\n"
    started = time.monotonic()
    contract, problems = parse_contract(line * 10_000 + GOOD, SPEC)
    assert time.monotonic() - started < 2.0
    assert contract is None and any("more than 64 launch lines" in p.message for p in problems)


@pytest.mark.parametrize("launch, words", [
    ("grid=(0 - cdiv(N,16)) block=(16,16)", "grid=(-"),
    ("grid=(cdiv(N,16)) block=(16,16) smem=-4", "negative"),
    ("grid=(cdiv(N, M - M)) block=(16,16)", "cdiv by zero"),
    ("grid=(cdiv(N,16)) block=(16,16) smem=200000", "shared memory exceed"),
    ("grid=(1, M * 1000) block=(16,16)", "exceeds CUDA's limits"),
    ("grid=(cdiv(N,16)) block=(M, 16)", "not launchable"),
])
def test_impossible_launches_are_contract_errors_before_any_run(launch, words):
    contract, problems = _contract(f"// kgen: launch gemm_naive {launch} args=(A, B, C, M, N, K)")
    assert contract is not None and not problems
    found = launch_problems(contract, SPEC, parse_arch("sm_89", check_nvcc=False))
    assert len(found) == 1 and words in found[0].message and found[0].line == 3


# --- response bodies and time ----------------------------------------------------------------

@pytest.fixture
def server():
    with ChatServer() as s:
        yield s


def _model(server, **kw):
    from kgen.models.openai_backend import OpenAIModel

    pytest.importorskip("openai")
    kw.setdefault("max_retries", 0)
    return OpenAIModel("test-model", server.base_url, "sk-x", env={}, timeout=5.0, **kw)


@pytest.mark.parametrize("response, words", [
    (Response(200, "<!DOCTYPE html><html><body>Sign in</body></html>",
              content_type="text/html"), "web page"),
    (Response(200, "<html>no content type</html>"), "web page"),
    (Response(200, 'data: {"choices": []}\n\ndata: [DONE]\n\n',
              content_type="text/event-stream"), "event stream"),
    (Response(200, "not json at all"), "not JSON"),
    (Response(200, {"choices": "yes"}), "no 'choices' list"),
    (Response(200, {"choices": [{"message": "hi"}]}), "no 'message' object"),
    (Response(200, {"choices": [{"message": {"content": 42}}]}), "neither text nor null"),
    (Response(200, [1, 2]), "a JSON list"),
    (Response(200, {"error": {"message": "overloaded"}}), "overloaded"),
    (Response(200, b"\xff\xfe\x00garbage"), "not JSON"),
])
def test_bodies_that_are_not_chat_completions_are_one_fatal_line(server, response, words):
    server.push(response)
    with pytest.raises(ModelFatal, match=words) as caught:
        _model(server).complete(Request((), _task(), ()))
    assert caught.value.exit_code == 4 and "\n" not in str(caught.value)


def test_a_trickling_server_cannot_hold_a_call_past_its_deadline(server):
    server.push(Response(200, completion("```cuda\nx\n```").body, trickle_s=0.3))
    started = time.monotonic()
    with pytest.raises(ModelFatal, match="KGEN_DEADLINE"):
        _model(server, deadline=2.0).complete(Request((), _task(), ()))
    assert time.monotonic() - started < 4.0


def test_a_silent_server_is_bounded_by_the_deadline_with_retries(server):
    server.push(*[Response(200, {}, delay_s=3.0)] * 4)
    started = time.monotonic()
    with pytest.raises(ModelFatal, match="within 2 s"):
        _model(server, deadline=2.0, max_retries=3).complete(Request((), _task(), ()))
    assert time.monotonic() - started < 3.5


def test_a_served_name_with_escape_sequences_reaches_doctor_plain(server, monkeypatch):
    from kgen import doctor

    pytest.importorskip("openai")
    server.models = [f"evil{ESC}[bold]model"]
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setattr(doctor, "run_checks", lambda unsafe=False: [doctor.check_endpoint()])
    result = CliRunner().invoke(cli.main, ["doctor"])
    assert "evil" in result.output and "\x1b" not in result.output and "\x07" not in result.output


# --- the run end to end ----------------------------------------------------------------------

def _reply(source: str, prose: str) -> str:
    return f"{prose}\n\n```cuda\n{source}```\n"


@pytest.mark.nvcc
def test_a_hostile_model_run_ends_with_exit_1_and_a_report(server, tmp_path):
    pytest.importorskip("openai")
    broken = GOOD.replace("acc += A", "acc += AA")
    huge = "+".join(["1"] * 100_000)
    server.push(
        completion(_reply(broken.replace("// kgen: choices naive", f"// kgen: choices {ESC}"),
                          f"Done! {ESC}[bold green]0 errors[/]")),
        completion(_reply(broken, "Here \ud800 it is \x00 with a lone surrogate")),
        completion(_reply(GOOD.replace("grid=(", f"grid=({huge}+", 1), "A 100k-term grid.")))
    run = tmp_path / "run"
    result = CliRunner().invoke(cli.main, [
        "generate", "--op", "gemm", "--arch", "sm_89", "--no-gpu", "--rounds", "3", "--out",
        str(run), "--model", "test-model", "--base-url", server.base_url],
        env={"KGEN_API_KEY": "sk-hostile-e2e-123456789", "OPENAI_API_KEY": None,
             "KGEN_BASE_URL": None, "OPENAI_BASE_URL": None, "KGEN_MODEL": None})
    assert result.exit_code == 1, result.output
    assert "\x1b" not in result.output and "\x00" not in result.output
    assert "all 3 rounds used" in result.output
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "finished"
    report = (run / "report.md").read_text()
    assert "contract error" in report and "compile error" in report
    for path in Path(run).rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert b"\x1b" not in data and b"\x00" not in data, path
            data.decode("utf-8")  # every file is valid UTF-8: the surrogate became U+FFFD
    assert (run / "attempts" / "003" / "kernel.cu").stat().st_size > 100_000
    assert len((run / "results.jsonl").read_text()) < 50_000  # the contract's diagnostic is short
