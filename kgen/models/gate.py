"""A model behind a gate: at most N requests in flight to one endpoint, however many runs share it
(an experiment's cells, a round's candidates). Retries and backoff on 429 stay the client's."""

from __future__ import annotations

import threading

from kgen.models.base import Model, Reply, Request


class Gated:
    """`model` with its calls counted against `gate` (a semaphore shared per endpoint)."""

    def __init__(self, model: Model, gate: threading.Semaphore):
        self.model = model
        self.gate = gate
        self.name = model.name
        self.is_language_model = model.is_language_model

    def describe(self) -> str:
        return self.model.describe()

    def complete(self, request: Request) -> Reply:
        """The wrapped model's reply, asked once a place at the gate is free."""
        with self.gate:
            return self.model.complete(request)
