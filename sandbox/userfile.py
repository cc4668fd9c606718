"""Inside the worker: a user's Python file (a spec's reference.py, a KernelBench problem) run as a
module of its own.

The module is registered in sys.modules under a name made from its text: torch.compile (dynamo)
looks a function's module up by its `__name__` and fails on a namespace no import could find.
"""

from __future__ import annotations

import hashlib
import sys
import types
from typing import Any

from kgen.sandbox.rejected import Rejected

_LOADED: dict[str, dict[str, Any]] = {}  # source text -> its module's namespace


def load(text: str, filename: str, what: str) -> dict[str, Any]:
    """The file's namespace, executed once per worker; a file that fails is the candidate's
    `launch_error` (the user's file, named as `what`), never a crash of the worker."""
    if text not in _LOADED:
        name = "kgen_user_" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        module = types.ModuleType(name)
        module.__file__ = filename
        sys.modules[name] = module
        try:
            exec(compile(text, filename, "exec"), module.__dict__)
        except Exception as exc:
            del sys.modules[name]
            raise Rejected("launch_error", f"{what} does not run: "
                           f"{type(exc).__name__}: {exc}") from exc
        _LOADED[text] = module.__dict__
    return _LOADED[text]
