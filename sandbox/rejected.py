"""How a check inside the worker stops the evaluation: raise Rejected with the verdict."""

from __future__ import annotations


class Rejected(Exception):
    """Raised inside the worker at the first failed check; carries the verdict, the words and,
    once known, the sizes it failed at (where the parent re-runs it under compute-sanitizer)."""

    def __init__(self, verdict: str, message: str, sizes: dict[str, int] | None = None):
        super().__init__(message)
        self.verdict = verdict
        self.message = message
        self.sizes = sizes
