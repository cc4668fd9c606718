"""How a check inside the worker stops the evaluation: raise Rejected with the verdict."""

from __future__ import annotations


class Rejected(Exception):
    """Raised inside the worker at the first failed check; carries the verdict and the words."""

    def __init__(self, verdict: str, message: str):
        super().__init__(message)
        self.verdict = verdict
        self.message = message
