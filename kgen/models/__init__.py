"""The model registry: `builtin`, `openai`, `scripted`, plus backends from the `kgen.models` entry
point group (`NAME = "module:factory"`, the factory taking the keyword settings of get_model)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from kgen.errors import UsageError
from kgen.models.base import Message, Model, Reply, Request, Usage

__all__ = ["Message", "Model", "Reply", "Request", "Usage", "get_model", "known_models",
           "resolve_model", "endpoint_configured"]

# A key alone names no model: with only OPENAI_API_KEY set, kgen stays offline with `builtin`.
ENDPOINT_ENV = ("KGEN_BASE_URL", "OPENAI_BASE_URL", "KGEN_MODEL")


def _builtin(**settings: Any) -> Model:
    from kgen.models.builtin import BuiltinModel

    return BuiltinModel()


def _builtin_random(**settings: Any) -> Model:
    from kgen.models.builtin import RandomAuthorModel

    return RandomAuthorModel(int(settings.get("seed") or 0))


def _openai(**settings: Any) -> Model:
    from kgen.models.openai_backend import OpenAIModel

    keys = ("model", "base_url", "api_key", "timeout", "max_retries", "reasoning", "temperature",
            "max_tokens", "env")
    return OpenAIModel(**{k: v for k, v in settings.items() if k in keys and v is not None})


def _scripted(**settings: Any) -> Model:
    from kgen.models.scripted import ScriptedModel, load_script

    replies = settings.get("replies")
    if replies is None:
        env = settings.get("env") or os.environ
        script = env.get("KGEN_SCRIPT")
        if not script:
            raise UsageError("the scripted model needs replies: set KGEN_SCRIPT to a JSON list "
                             "of replies or a folder of reply files")
        replies = load_script(Path(script))
    return ScriptedModel(replies)


_BUILTINS: dict[str, Callable[..., Model]] = {
    "builtin": _builtin, "builtin-random": _builtin_random, "openai": _openai,
    "scripted": _scripted}


def _plugins() -> dict[str, Any]:
    """Entry points of the `kgen.models` group, not yet loaded."""
    return {ep.name: ep for ep in entry_points(group="kgen.models")}


def known_models() -> list[str]:
    """Every backend name get_model accepts."""
    return [*_BUILTINS, *sorted(set(_plugins()) - set(_BUILTINS))]


def get_model(name: str, *, model: str | None = None, base_url: str | None = None,
              api_key: str | None = None, timeout: float | None = None, **settings: Any) -> Model:
    """The backend called `name`, built with these settings; UsageError lists the known names."""
    options = {"model": model, "base_url": base_url, "api_key": api_key, "timeout": timeout,
               **settings}
    if name in _BUILTINS:
        return _BUILTINS[name](**options)
    plugin = _plugins().get(name)
    if plugin is None:
        raise UsageError(f"unknown model backend {name!r}; known: {', '.join(known_models())}")
    return plugin.load()(**options)


def endpoint_configured(model: str | None = None, base_url: str | None = None,
                        env: Mapping[str, str] | None = None) -> bool:
    """True when the user named a model or an endpoint, by option or environment."""
    env = os.environ if env is None else env
    return bool(model or base_url or any(env.get(k) for k in ENDPOINT_ENV))


def resolve_model(backend: str | None = None, model: str | None = None,
                  base_url: str | None = None, api_key: str | None = None, *,
                  timeout: float | None = None, env: Mapping[str, str] | None = None,
                  **settings: Any) -> Model:
    """The model for a run: an explicit backend; `--model builtin` (any backend name) picks that
    backend; otherwise `openai` when an endpoint is configured, else the offline `builtin`."""
    env = os.environ if env is None else env
    named = model or env.get("KGEN_MODEL")
    if backend is None and named in known_models():
        backend, model = named, None
    if backend is None:
        configured = endpoint_configured(model, base_url, env)
        backend = "openai" if configured else "builtin"
    return get_model(backend, model=model, base_url=base_url, api_key=api_key, timeout=timeout,
                     env=env, **settings)
