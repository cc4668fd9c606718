"""A chat-completion response body read as untrusted data: one clear ModelFatal when it is not
one (HTML, an event stream, not JSON, the wrong shape), else the reply's text and usage."""

from __future__ import annotations

import json
from typing import Any

from kgen.errors import ModelFatal
from kgen.models.base import Reply, Usage, strip_reasoning

ROOT_HINT = "is --base-url the API's root (often ending in /v1)?"


def completion_body(text: str, content_type: str, where: str) -> dict[str, Any]:
    """The parsed body of a 200 answer, or ModelFatal saying what came instead."""
    head = text.lstrip()[:64].lower()
    if "text/event-stream" in content_type or head.startswith(("data:", "event:", ":")):
        raise ModelFatal(f"{where} answered with an event stream (SSE), not a chat completion; "
                         f"kgen does not ask for streaming: {ROOT_HINT}")
    if "html" in content_type or head.startswith(("<!doctype", "<html", "<?xml", "<head")):
        raise ModelFatal(f"{where} answered with a web page, not a chat completion: this is not "
                         f"an OpenAI-compatible endpoint; {ROOT_HINT}")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise ModelFatal(f"{where} answered with something that is not JSON, not a chat "
                         f"completion: {ROOT_HINT}") from None
    problem = _shape_problem(data)
    if problem and problem.startswith("an error object"):
        raise ModelFatal(f"{where} answered (HTTP 200) with {problem}")
    if problem:
        raise ModelFatal(f"{where} answered with JSON that is not a chat completion ({problem}): "
                         f"{ROOT_HINT}")
    return data


def _shape_problem(data: Any) -> str | None:
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not an object"
    if "choices" not in data and isinstance(data.get("error"), (dict, str)):
        error = data["error"]
        message = error.get("message") if isinstance(error, dict) else error
        return f"an error object: {' '.join(str(message).split())[:200]}"
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        return "no 'choices' list"
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        return "choices[0] has no 'message' object"
    if not isinstance(message.get("content"), (str, list, type(None))):
        return "choices[0].message.content is neither text nor null"
    return None


def reply_from(data: dict[str, Any], model: str, latency: float) -> Reply:
    """The reply in a checked body; reasoning fields are never read, <think> text is dropped."""
    content = data["choices"][0]["message"].get("content") or ""
    if isinstance(content, list):  # content parts: keep the text ones
        content = "".join(p.get("text", "") for p in content
                          if isinstance(p, dict) and isinstance(p.get("text"), str))
    usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
    served = data.get("model") if isinstance(data.get("model"), str) else None
    return Reply(strip_reasoning(content), served or model,
                 Usage(_count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))),
                 latency)


def _count(value: Any) -> int:
    return value if type(value) is int and 0 <= value < 10**12 else 0
