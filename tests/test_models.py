"""The model registry, the default choice of model, and the scripted model."""

from __future__ import annotations

import json

import pytest

import kgen.models as models
from kgen.arch import parse_arch
from kgen.errors import ModelFatal, UsageError
from kgen.loop.task import Task
from kgen.models.base import Reply, Request, Usage
from kgen.models.openai_backend import OpenAIModel
from kgen.models.scripted import ScriptedModel, ScriptExhausted, load_script
from kgen.ops import load_op


def _request(text: str = "write") -> Request:
    task = Task("generate", parse_arch("sm_89", check_nvcc=False), load_op("gemm"), "float32")
    return Request(({"role": "user", "content": text},), task, ())


def test_unknown_backend_lists_the_known_ones():
    with pytest.raises(UsageError, match="unknown model backend 'gpt9'; known: builtin, "
                                         "builtin-random, openai, scripted"):
        models.get_model("gpt9")


def test_openai_backend_takes_the_settings():
    model = models.get_model("openai", model="m", base_url="http://127.0.0.1:9/v1",
                             api_key="sk-x-123456", timeout=7.0, max_retries=1, env={})
    assert isinstance(model, OpenAIModel)
    assert (model.model, model.base_url, model.timeout, model.max_retries) == (
        "m", "http://127.0.0.1:9/v1", 7.0, 1)


@pytest.mark.parametrize("env, kwargs", [
    ({"KGEN_BASE_URL": "http://127.0.0.1:9/v1"}, {}),
    ({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, {}),
    ({"KGEN_MODEL": "qwen2.5-coder"}, {}),
    ({}, {"model": "gpt-4o"}),
    ({}, {"base_url": "http://127.0.0.1:9/v1"}),
])
def test_a_configured_endpoint_selects_openai(env, kwargs):
    assert isinstance(models.resolve_model(env=env, **kwargs), OpenAIModel)


@pytest.mark.parametrize("env", [{}, {"OPENAI_API_KEY": "sk-abcdef"}, {"KGEN_API_KEY": "sk-x"}])
def test_no_model_or_endpoint_named_selects_builtin(env):
    model = models.resolve_model(env=env)  # a key alone names no model: stay offline
    assert model.name == "builtin" and model.is_language_model is False


def test_a_backend_name_as_model_selects_that_backend(tmp_path):
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(["one", "two"]))
    env = {"OPENAI_API_KEY": "sk-abcdef", "KGEN_SCRIPT": str(script)}
    model = models.resolve_model(model="scripted", env=env)
    assert isinstance(model, ScriptedModel)
    assert model.complete(_request()).text == "one"
    assert isinstance(models.resolve_model("openai", model="x", env={}), OpenAIModel)


def test_scripted_without_replies_is_a_usage_error():
    with pytest.raises(UsageError, match="KGEN_SCRIPT"):
        models.get_model("scripted", env={})


def test_entry_point_backends_are_found(monkeypatch):
    made = {}

    class FakeEntryPoint:
        name = "mine"

        def load(self):
            def factory(**settings):
                made.update(settings)
                return ScriptedModel(["from plugin"], name="mine")
            return factory

    monkeypatch.setattr(models, "_plugins", lambda: {"mine": FakeEntryPoint()})
    assert models.known_models() == ["builtin", "builtin-random", "openai", "scripted", "mine"]
    model = models.get_model("mine", model="m7", timeout=3.0)
    assert model.complete(_request()).text == "from plugin"
    assert made["model"] == "m7" and made["timeout"] == 3.0


def test_scripted_plays_back_in_order_and_records_requests():
    reply = Reply("counted", "scripted", Usage(10, 5))
    model = ScriptedModel(["first", reply, ModelFatal("endpoint down")])
    assert model.complete(_request("a")).text == "first"
    assert model.complete(_request("b")).usage.total == 15
    with pytest.raises(ModelFatal, match="endpoint down"):
        model.complete(_request("c"))
    assert [r.messages[0]["content"] for r in model.requests] == ["a", "b", "c"]
    with pytest.raises(ScriptExhausted, match="ran out of replies: asked for reply 4, the "
                                              "script has 3") as caught:
        model.complete(_request("d"))
    assert caught.value.exit_code == 4


def test_load_script_from_folder_and_json(tmp_path):
    (tmp_path / "02.md").write_text("second")
    (tmp_path / "01.md").write_text("first")
    assert load_script(tmp_path) == ["first", "second"]
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    with pytest.raises(UsageError, match="JSON list"):
        load_script(bad)
    with pytest.raises(UsageError, match="cannot read"):
        load_script(tmp_path / "missing.json")
