"""The openai backend over a real socket: retries, fatal errors, reasoning handling, usage."""

from __future__ import annotations

import socket
import sys

import pytest
from chat_server import (
    ChatServer,
    Response,
    auth_error,
    completion,
    http_error,
    model_not_found,
)

from kgen.arch import parse_arch
from kgen.errors import EnvironmentProblem, ModelFatal, UsageError
from kgen.loop.task import Task
from kgen.models.base import Request, strip_reasoning
from kgen.models.openai_backend import OpenAIModel, is_reasoning_model
from kgen.ops import load_op

pytest.importorskip("openai")  # a GPU machine without registries may lack it (README)

KEY = "sk-test-0123456789abcdef-secret"
CODE = "```cuda\nextern \"C\" __global__ void k() {}\n```"


@pytest.fixture
def server():
    with ChatServer() as s:
        yield s


def _request(*extra: dict[str, str]) -> Request:
    task = Task("generate", parse_arch("sm_89", check_nvcc=False), load_op("gemm"), "float32")
    messages = ({"role": "system", "content": "be brief"}, {"role": "user", "content": "write"})
    return Request(messages + extra, task, ())


def _model(server: ChatServer, name: str = "test-model", **kw) -> OpenAIModel:
    kw.setdefault("max_retries", 2)
    kw.setdefault("timeout", 10.0)
    return OpenAIModel(name, server.base_url, KEY, env={}, **kw)


def test_500_then_success_is_retried_and_usage_recorded(server):
    server.push(http_error(500), completion("here it is\n" + CODE, usage=(321, 55)))
    reply = _model(server).complete(_request())
    assert len(server.completions) == 2
    assert CODE in reply.text
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (321, 55)
    assert reply.model == "test-model"
    assert reply.latency_s > 0


def test_429_and_dropped_connection_are_retried(server):
    server.push(http_error(429, "slow down", type="rate_limit_error"), Response(drop=True),
                completion(CODE))
    reply = _model(server).complete(_request())
    assert CODE in reply.text
    assert len(server.completions) == 3


def test_retries_exhausted_is_fatal_with_exit_code_4(server):
    server.push(*[http_error(503, "overloaded")] * 3)
    with pytest.raises(ModelFatal) as caught:
        _model(server, max_retries=2).complete(_request())
    assert "retries exhausted" in str(caught.value)
    assert "503" in str(caught.value)
    assert caught.value.exit_code == 4
    assert len(server.completions) == 3  # first try + 2 retries, then no more


def test_timeout_is_retried_then_fatal(server):
    server.push(Response(delay_s=1.5, body={}), Response(delay_s=1.5, body={}))
    with pytest.raises(ModelFatal, match="retries exhausted"):
        _model(server, max_retries=1, timeout=0.4).complete(_request())
    assert len(server.completions) == 2


def test_401_is_fatal_at_once_without_the_key(server):
    # OpenAI echoes part of a wrong key; whatever the server says, the key must not come back.
    server.push(auth_error(f"Incorrect API key provided: {KEY}. Find your key at ..."))
    with pytest.raises(ModelFatal) as caught:
        _model(server).complete(_request())
    message = str(caught.value)
    assert caught.value.exit_code == 4
    assert "authentication failed" in message and "401" in message
    assert KEY not in message and "0123456789abcdef" not in message
    assert "Incorrect API key provided" in message  # the server's words, minus the key
    assert "\n" not in message
    assert len(server.completions) == 1  # never retried
    assert server.completions[0].headers.get("authorization") == f"Bearer {KEY}"


def test_403_is_fatal_too(server):
    server.push(http_error(403, "not allowed", type="permission_error"))
    with pytest.raises(ModelFatal, match="authentication failed"):
        _model(server).complete(_request())
    assert len(server.completions) == 1


def test_unknown_model_is_fatal_and_names_it(server):
    server.push(model_not_found("gpt-imaginary"))
    with pytest.raises(ModelFatal) as caught:
        _model(server, name="gpt-imaginary").complete(_request())
    assert "unknown model 'gpt-imaginary'" in str(caught.value)
    assert caught.value.exit_code == 4
    assert len(server.completions) == 1


def test_think_text_and_reasoning_fields_are_stripped(server):
    server.push(completion("<think>secret plan A</think>\nDone.\n" + CODE,
                           reasoning_content="secret plan B", reasoning="secret plan C"))
    reply = _model(server).complete(_request())
    assert "secret plan" not in reply.text
    assert reply.text.startswith("Done.") and CODE in reply.text


def test_reasoning_text_is_never_sent_back(server):
    server.push(completion(CODE))
    earlier = {"role": "assistant", "content": "<think>private musing</think>Here is v1."}
    _model(server).complete(_request(earlier, {"role": "user", "content": "again"}))
    sent = server.completions[0].messages
    assert all("private musing" not in m["content"] for m in sent)
    assert sent[2] == {"role": "assistant", "content": "Here is v1."}


def test_reasoning_model_gets_no_temperature_and_max_completion_tokens(server):
    server.push(completion(CODE), completion(CODE))
    _model(server, name="o3-mini").complete(_request())
    _model(server, name="plain-model", max_tokens=1000).complete(_request())
    reasoning, plain = (r.body for r in server.completions)
    assert "temperature" not in reasoning and "max_tokens" not in reasoning
    assert reasoning["max_completion_tokens"] > 0 and reasoning["model"] == "o3-mini"
    assert plain["max_tokens"] == 1000 and "temperature" in plain
    assert "max_completion_tokens" not in plain


def test_reasoning_flag_forces_the_reasoning_form(server):
    server.push(completion(CODE))
    _model(server, name="my-local-model", reasoning=True).complete(_request())
    body = server.completions[0].body
    assert "temperature" not in body and "max_completion_tokens" in body


def test_unsupported_max_tokens_switches_to_reasoning_form(server):
    server.push(http_error(400, "Unsupported parameter: 'max_tokens' is not supported with this "
                           "model. Use 'max_completion_tokens' instead.",
                           type="invalid_request_error"), completion(CODE))
    model = _model(server, name="new-reasoner-x")
    model._reasoning = False  # as if the name had fooled the detection
    assert CODE in model.complete(_request()).text
    first, second = (r.body for r in server.completions)
    assert "max_tokens" in first and "max_completion_tokens" in second


def test_context_overflow_drops_the_token_limit(server):
    server.push(http_error(400, "This model's maximum context length is 4096 tokens. However, "
                           "you requested 8292 tokens (100 in the messages, 8192 in the "
                           "completion).", type="invalid_request_error"), completion(CODE))
    assert CODE in _model(server).complete(_request()).text
    first, second = (r.body for r in server.completions)
    assert first["max_tokens"] == 8192 and "max_tokens" not in second


def test_a_400_that_persists_after_adapting_is_fatal(server):
    overflow = http_error(400, "maximum context length is 4096 tokens",
                          type="invalid_request_error")
    server.push(overflow, overflow)
    with pytest.raises(ModelFatal, match="rejected the request .*maximum context length"):
        _model(server).complete(_request())
    assert len(server.completions) == 2


def test_other_400_is_fatal_with_the_server_message(server):
    server.push(http_error(400, "messages[1].role must be one of system, user, assistant",
                           type="invalid_request_error"))
    with pytest.raises(ModelFatal, match=r"rejected the request \(HTTP 400\): messages\[1\]"):
        _model(server).complete(_request())
    assert len(server.completions) == 1


def test_model_name_comes_from_the_endpoint_when_it_serves_one(server):
    server.models = ["only-model"]
    server.push(completion(CODE))
    model = OpenAIModel(None, server.base_url, None, env={}, max_retries=0)
    model.complete(_request())
    assert server.completions[0].body["model"] == "only-model"
    assert server.completions[0].headers.get("authorization") == "Bearer kgen-no-key"


def test_missing_usage_counts_zero(server):
    server.push(completion(CODE, usage=None))
    reply = _model(server).complete(_request())
    assert reply.usage.total == 0


def test_environment_settings_and_no_key_in_repr():
    env = {"OPENAI_BASE_URL": "http://a.example/v1", "KGEN_BASE_URL": "http://b.example/v1",
           "OPENAI_API_KEY": "sk-openai-aaaa1111", "KGEN_API_KEY": KEY, "KGEN_MODEL": "m1"}
    model = OpenAIModel(env=env)
    assert model.base_url == "http://b.example/v1" and model.model == "m1"
    assert model._key == KEY
    assert KEY not in repr(model) and KEY not in model.describe()
    assert OpenAIModel("m2", "http://c.example/v1", env=env).base_url == "http://c.example/v1"


def test_reasoning_name_detection_and_think_stripping():
    for name in ("o1", "o3-mini", "openai/o4-mini", "gpt-5", "deepseek-reasoner",
                 "qwen3-30b-thinking", "DeepSeek-R1-Distill", "QwQ-32B"):
        assert is_reasoning_model(name), name
    for name in ("gpt-4o", "llama-3.1-70b", "qwen2.5-coder", "mistral-large"):
        assert not is_reasoning_model(name), name
    assert strip_reasoning("<think>a</think>b<THINK>c</THINK>d") == "bd"
    assert strip_reasoning("hidden reasoning</think>answer") == "answer"
    assert strip_reasoning("answer<think>cut off") == "answer"


def test_numeric_settings_from_the_environment():
    env = {"KGEN_TIMEOUT": "12.5", "KGEN_MAX_RETRIES": "0", "KGEN_MAX_TOKENS": "2048"}
    model = OpenAIModel("m", "http://127.0.0.1:9/v1", env=env)
    assert (model.timeout, model.max_retries, model.max_tokens) == (12.5, 0, 2048)
    assert model.parameters()["max_tokens"] == 2048
    assert OpenAIModel("m", env=env, timeout=3.0, max_retries=2).max_retries == 2
    with pytest.raises(UsageError, match="KGEN_TIMEOUT='soon' is not a number"):
        OpenAIModel("m", env={"KGEN_TIMEOUT": "soon"})


def test_missing_openai_package_is_an_environment_problem(monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)  # makes `import openai` fail
    with pytest.raises(EnvironmentProblem, match="openai package is not installed") as caught:
        OpenAIModel("m", "http://127.0.0.1:9/v1", env={}).complete(_request())
    assert caught.value.exit_code == 3


def test_nothing_listening_is_retries_exhausted():
    with socket.socket() as sock:  # a port that was free a moment ago: connection refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = OpenAIModel("m", f"http://127.0.0.1:{port}/v1", env={}, max_retries=0)
    with pytest.raises(ModelFatal, match=r"exhausted: 1 attempt\(s\) .* APIConnectionError"):
        model.complete(_request())


def test_probe_says_whether_the_endpoint_answers(server):
    server.models = ["a-model", "test-model"]
    ok, text = _model(server).probe()
    assert ok and "answers: 2 model(s) (a-model, test-model)" in text
    ok, text = _model(server, name="other").probe()
    assert ok and "'other' is not among them" in text
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ok, text = OpenAIModel("m", f"http://127.0.0.1:{port}/v1", KEY, env={}).probe()
    assert not ok and "1 attempt(s)" in text and "APIConnectionError" in text
    assert KEY not in text


def test_doctor_reports_an_answering_endpoint(server, monkeypatch):
    from kgen import doctor

    server.models = ["test-model"]
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    check = doctor.check_endpoint()
    assert check.status == "ok" and "answers: 1 model(s) (test-model)" in check.detail
    assert KEY not in check.detail and "key set" in check.detail
