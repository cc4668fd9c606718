"""The one protocol every model backend implements, and the values that cross it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kgen.loop.attempt import Attempt
    from kgen.loop.task import Task

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Reply:
    """A model's answer. `give_up` is set when the author says the task is beyond it."""

    text: str
    model: str
    usage: Usage = Usage()
    latency_s: float = 0.0
    give_up: str | None = None


@dataclass(frozen=True)
class Request:
    """The rendered conversation (for LLMs) and the same state as values (for builtin)."""

    messages: tuple[Message, ...]
    task: Task
    history: tuple[Attempt, ...]


class Model(Protocol):
    name: str
    is_language_model: bool

    def describe(self) -> str:
        """One line saying what this model is (the builtin author says it is rule-based)."""
        ...

    def complete(self, request: Request) -> Reply:
        """Return the next reply. Retry transient failures inside; raise ModelFatal when the
        endpoint cannot serve this run (authentication, unknown model, retries exhausted)."""
        ...


def strip_reasoning(text: str) -> str:
    """Drop <think>...</think>, text before a stray </think>, and an unclosed <think> tail."""
    text = _THINK.sub("", text)
    if "</think>" in text.lower():
        text = re.split(r"</think>", text, flags=re.IGNORECASE)[-1]
    opened = re.search(r"<think>", text, re.IGNORECASE)
    return (text[:opened.start()] if opened else text).strip()
