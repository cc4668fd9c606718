"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang, Ollama, llama.cpp, DeepSeek, ...).

The client retries 408/409/429/5xx and connection errors itself (`max_retries`, exponential backoff,
honouring Retry-After); what is left after that, and authentication or unknown-model errors, end
the run with one ModelFatal line. The API key never appears in a message, a repr or a log.

Time: KGEN_TIMEOUT (default 300 s) is the client's timeout for each request (a server silent
that long is retried); KGEN_DEADLINE (default the larger of 600 s and twice KGEN_TIMEOUT) is the
wall-clock limit of one model call, retries included, enforced outside the client, so neither a
server that never answers nor one that trickles bytes can hold kgen longer. Every 200 body is
checked before it is read (kgen.models.response): HTML, an event stream, not JSON, or not the
shape of a chat completion is one ModelFatal line.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from kgen.errors import EnvironmentProblem, ModelFatal, UsageError
from kgen.models.base import Message, Reply, Request, strip_reasoning
from kgen.models.deadline import DeadlinePassed, within
from kgen.models.response import completion_body, reply_from

DEFAULT_BASE_URL = "https://api.openai.com/v1"
NO_KEY = "kgen-no-key"  # local servers ignore the key, but the client insists on one
_REASONING = re.compile(r"(^|[/:])o[134]([-_.:]|$)|gpt-5|reasoner|thinking|deepseek-r1|qwq",
                        re.IGNORECASE)
# Whatever a server echoes back: provider-style keys, bearer tokens, long opaque strings.
_KEYLIKE = re.compile(r"\b(sk|pk|rk|gsk|xai)[-_][A-Za-z0-9_*.\-]{6,}|Bearer\s+\S+|"
                      r"\b[A-Za-z0-9]{32,}\b", re.IGNORECASE)
_CONTEXT = re.compile(r"context length|context window|maximum context|too many tokens",
                      re.IGNORECASE)
_UNSUPPORTED = re.compile(r"(unsupported|not supported|does not support|unrecognized|unknown)"
                          r".{0,80}(max_tokens|temperature)|(max_tokens|temperature).{0,80}"
                          r"(unsupported|not supported|max_completion_tokens)",
                          re.IGNORECASE | re.DOTALL)


def is_reasoning_model(name: str) -> bool:
    """o1/o3/o4, gpt-5, deepseek-reasoner/-r1, QwQ and *-thinking take no temperature."""
    return bool(_REASONING.search(name))


def clean_messages(messages: tuple[Message, ...] | list[Message]) -> list[dict[str, str]]:
    """Only role and content go out; reasoning text in an assistant turn is never sent back."""
    out = []
    for m in messages:
        content = m["content"]
        if m["role"] == "assistant":
            content = strip_reasoning(content)
        out.append({"role": m["role"], "content": content})
    return out


def safe_url(url: str) -> str:
    """The URL without any user:password part."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit(parts._replace(netloc=netloc))
    return url


class OpenAIModel:
    """Chat completions over the `openai` package (imported on first use)."""

    name = "openai"
    is_language_model = True

    def __init__(self, model: str | None = None, base_url: str | None = None,
                 api_key: str | None = None, *, timeout: float | None = None,
                 max_retries: int | None = None, reasoning: bool | None = None,
                 temperature: float | None = 0.2, max_tokens: int | None = None,
                 deadline: float | None = None, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        self.model = model or env.get("KGEN_MODEL") or env.get("OPENAI_MODEL") or None
        self.base_url = (base_url or env.get("KGEN_BASE_URL") or env.get("OPENAI_BASE_URL")
                         or DEFAULT_BASE_URL).rstrip("/")
        self._key = api_key or env.get("KGEN_API_KEY") or env.get("OPENAI_API_KEY") or NO_KEY
        self.timeout = timeout if timeout is not None else _number(env, "KGEN_TIMEOUT", 300.0)
        self.deadline = deadline if deadline is not None else _number(
            env, "KGEN_DEADLINE", max(600.0, 2 * self.timeout))
        self.max_retries = max_retries if max_retries is not None else int(
            _number(env, "KGEN_MAX_RETRIES", 4))
        flag = env.get("KGEN_REASONING", "").strip().lower()
        self._reasoning = reasoning if reasoning is not None else (
            {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}
            .get(flag))
        self.temperature = temperature
        self.max_tokens = max_tokens or (int(_number(env, "KGEN_MAX_TOKENS", 0)) or None)
        self._send_limit = True  # dropped when the endpoint says the limit overflows its context
        self._switched = False
        self._client: Any = None

    def __repr__(self) -> str:
        return f"OpenAIModel(model={self.model!r}, base_url={safe_url(self.base_url)!r})"

    def describe(self) -> str:
        kind = ", reasoning model" if self.model and self.reasoning else ""
        return (f"OpenAI-compatible endpoint {safe_url(self.base_url)}, model "
                f"{self.model or '(the one the endpoint serves)'}{kind}")

    @property
    def reasoning(self) -> bool:
        if self._reasoning is not None:
            return self._reasoning
        return is_reasoning_model(self.model or "")

    def complete(self, request: Request) -> Reply:
        """One chat completion; transient errors are retried by the client, the rest are fatal."""
        client = self._connect()  # first: it explains a missing openai package
        import openai

        model = self.model or self._served_model(client)
        messages = clean_messages(request.messages)
        started = time.monotonic()
        try:
            raw = self._bounded(lambda: self._create(client, model, messages), self.deadline)
        except openai.OpenAIError as exc:
            raise self._fatal(exc, model) from None
        http = raw.http_response
        body = completion_body(http.text, http.headers.get("content-type", ""),
                               f"the endpoint {safe_url(self.base_url)}")
        return reply_from(body, model, time.monotonic() - started)

    def _bounded(self, call: Any, seconds: float) -> Any:
        """call() within `seconds` of wall clock, retries included; ModelFatal after that."""
        def abandon() -> None:
            client, self._client = self._client, None  # the next call connects afresh
            try:
                client.close()
            except Exception:  # noqa: BLE001 - it is being dropped either way
                pass

        try:
            return within(seconds, call, abandon)
        except DeadlinePassed:
            raise ModelFatal(f"no complete answer from {safe_url(self.base_url)} within "
                             f"{seconds:g} s (KGEN_DEADLINE: the limit of one model call, "
                             "retries included); the endpoint is stalled or far too slow") \
                from None

    def _create(self, client: Any, model: str, messages: list[dict[str, str]]) -> Any:
        """The raw response, so its body can be checked before anything reads it."""
        import openai

        while True:
            try:
                return client.chat.completions.with_raw_response.create(
                    model=model, messages=messages, **self.parameters())
            except openai.BadRequestError as exc:
                if not self._adapt(_server_message(exc)):
                    raise

    def _adapt(self, message: str) -> bool:
        """Change the parameters once per kind of 400 that names them; False if nothing to do."""
        if _UNSUPPORTED.search(message) and not self._switched:
            # It rejects max_tokens/temperature: it wants the reasoning-model form (or the
            # reverse). Switch once and keep it for the rest of the run.
            self._switched = True
            self._reasoning = not self.reasoning
            return True
        if _CONTEXT.search(message) and self._send_limit:
            # A small-context local model: let the server fit the reply to what is left.
            self._send_limit = False
            return True
        return False

    def parameters(self) -> dict[str, Any]:
        """Sampling parameters: reasoning models get max_completion_tokens and no temperature."""
        params: dict[str, Any] = {}
        if self.reasoning:
            if self._send_limit:
                params["max_completion_tokens"] = self.max_tokens or 32768
            return params
        if self._send_limit:
            params["max_tokens"] = self.max_tokens or 8192
        if self.temperature is not None:
            params["temperature"] = self.temperature
        return params

    def _connect(self) -> Any:
        if self._client is None:
            try:
                import openai
            except ImportError as exc:
                raise EnvironmentProblem("the openai package is not installed "
                                         "(pip install openai)") from exc
            self._client = openai.OpenAI(
                api_key=self._key, base_url=self.base_url, max_retries=self.max_retries,
                timeout=openai.Timeout(self.timeout, connect=min(10.0, self.timeout)))
        return self._client

    def probe(self) -> tuple[bool, str]:
        """Does the endpoint answer? One quick GET /models, no retries (for `kgen doctor`)."""
        import openai

        seconds = min(10.0, self.timeout)
        try:
            client = self._connect().with_options(max_retries=0, timeout=seconds)
            served = self._bounded(lambda: _served(client), seconds + 5)
        except openai.OpenAIError as exc:
            return False, str(self._fatal(exc, self.model or "(listing models)", tries=1))
        except ModelFatal as exc:
            return False, str(exc)
        listed = ", ".join(served[:5]) + (" ..." if len(served) > 5 else "")
        found = "" if not self.model or self.model in served else (
            f"; {self.model!r} is not among them")
        return True, (f"{safe_url(self.base_url)} answers: {len(served)} model(s) "
                      f"({listed or 'none listed'}){found}")

    def _served_model(self, client: Any) -> str:
        """No --model given: use the endpoint's model if it serves exactly one."""
        import openai

        try:
            served = self._bounded(lambda: _served(client), self.deadline)
        except openai.OpenAIError as exc:
            raise self._fatal(exc, "(listing models)") from None
        if len(served) != 1:
            listed = ", ".join(served[:8]) + (" ..." if len(served) > 8 else "")
            raise UsageError(f"no model name given: pass --model NAME or set KGEN_MODEL "
                             f"(the endpoint serves: {listed or 'nothing'})")
        self.model = served[0]
        return self.model

    def _fatal(self, exc: Exception, model: str, tries: int | None = None) -> ModelFatal:
        """One clear line for an error the client gave up on; the key never appears in it."""
        import openai

        where = safe_url(self.base_url)
        detail = self._redact(_server_message(exc))
        status = getattr(exc, "status_code", None)
        if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
            line = (f"authentication failed at {where} (HTTP {status}): {detail}; check "
                    "KGEN_API_KEY / OPENAI_API_KEY")
        elif isinstance(exc, openai.NotFoundError):
            line = (f"unknown model {model!r} at {where} (HTTP 404): {detail}; check --model "
                    "and that --base-url ends where the API starts (often /v1)")
        elif isinstance(exc, (openai.RateLimitError, openai.InternalServerError,
                              openai.APIConnectionError, openai.ConflictError)):
            what = f"HTTP {status}" if status else type(exc).__name__
            tries = tries or self.max_retries + 1
            line = (f"retries exhausted: {tries} attempt(s) at {where} failed, the "
                    f"last with {what}: {detail}")
        elif isinstance(exc, openai.APIStatusError):
            line = f"the endpoint {where} rejected the request (HTTP {status}): {detail}"
        else:
            line = f"the endpoint {where} failed: {type(exc).__name__}: {detail}"
        return ModelFatal(line)

    def _redact(self, text: str) -> str:
        if self._key and self._key != NO_KEY and len(self._key) >= 4:
            text = text.replace(self._key, "[redacted]")
        text = _KEYLIKE.sub("[redacted]", text)
        return " ".join(text.split())[:300]


def _served(client: Any) -> list[str]:
    """The model names an endpoint lists, as text (a served name is data, checked here)."""
    return sorted(str(getattr(m, "id", ""))[:200] for m in client.models.list())


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    """A numeric setting from the environment; a malformed one is a usage error naming it."""
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{name}={text!r} is not a number") from None
    if value < 0:
        raise UsageError(f"{name}={text!r} must not be negative")
    return value


def _server_message(exc: Exception) -> str:
    """The server's own words: the `message` of an OpenAI-shaped error body, else str(exc)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(getattr(exc, "message", None) or exc)
