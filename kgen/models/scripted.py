"""A model that plays back a fixed list of replies (for tests); it records what it was asked."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from kgen.errors import ModelFatal, UsageError
from kgen.models.base import Reply, Request

ScriptItem = str | Reply | BaseException


class ScriptExhausted(ModelFatal):
    """The script has no reply left: the run asked for more turns than the test planned."""


class ScriptedModel:
    """Each `complete` returns the next scripted reply (an exception in the list is raised)."""

    is_language_model = True

    def __init__(self, replies: Sequence[ScriptItem], name: str = "scripted") -> None:
        self.name = name
        self._replies = list(replies)
        self.requests: list[Request] = []

    def describe(self) -> str:
        return f"scripted model: {len(self._replies)} canned replies (for tests, not a real model)"

    def complete(self, request: Request) -> Reply:
        """Record the request and return the next reply; ScriptExhausted when none is left."""
        self.requests.append(request)
        index = len(self.requests) - 1
        if index >= len(self._replies):
            raise ScriptExhausted(f"scripted model ran out of replies: asked for reply "
                                  f"{index + 1}, the script has {len(self._replies)}")
        item = self._replies[index]
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, Reply):
            return item
        return Reply(text=item, model=self.name)


def load_script(path: Path) -> list[str]:
    """Replies from a JSON list of strings, or from the files of a folder in name order."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        return [p.read_text() for p in files]
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"cannot read the script {path}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise UsageError(f"script {path} is not JSON: {exc}") from exc
    if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
        raise UsageError(f"script {path} must hold a JSON list of reply strings")
    return data
