"""YAML from a file kgen does not trust, loaded with limits: size before parsing, UTF-8 only,
nesting depth, and the size of the document with every alias expanded (a "billion laughs" file
is refused before anything walks it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kgen.errors import UsageError

MAX_BYTES = 256 * 1024  # a spec is a few KiB
MAX_DEPTH = 16  # nested mappings and lists
MAX_NODES = 20_000  # nodes with aliases expanded


class _TooBig(yaml.YAMLError):
    """A limit was reached while composing the document."""


class _LimitedLoader(yaml.SafeLoader):
    """SafeLoader that counts nesting as it composes (so deep input never recurses far)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _TooBig(f"nested more than {MAX_DEPTH} levels deep")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _expanded(node: yaml.Node, memo: dict[int, int]) -> int:
    """How many nodes the document holds once every alias is expanded (shared nodes counted each
    time they are referred to, computed once each)."""
    if id(node) in memo:
        return memo[id(node)]
    memo[id(node)] = 1  # a node that refers to itself counts once (construction refuses it)
    total = 1
    if isinstance(node, yaml.SequenceNode):
        total += sum(_expanded(child, memo) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        total += sum(_expanded(k, memo) + _expanded(v, memo) for k, v in node.value)
    memo[id(node)] = min(total, MAX_NODES + 1)
    return memo[id(node)]


def load_yaml(path: Path, what: str = "spec") -> Any:
    """The document in `path`; UsageError (one line, naming the file) for anything amiss."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    if len(data) > MAX_BYTES:
        raise UsageError(f"{what} {path} is larger than {MAX_BYTES // 1024} KiB; a spec is a "
                         "few KiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} {path} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                         f"{exc.start})") from None
    loader = _LimitedLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None and _expanded(node, {}) > MAX_NODES:
            raise _TooBig(f"more than {MAX_NODES} values once its aliases are expanded")
        return loader.construct_document(node) if node is not None else None
    except _TooBig as exc:
        raise UsageError(f"{what} {path} is refused: {exc}") from None
    except (yaml.YAMLError, RecursionError) as exc:
        first = " ".join(str(exc).split())[:200]
        raise UsageError(f"{what} {path} is not valid YAML: {first}") from None
    finally:
        loader.dispose()
