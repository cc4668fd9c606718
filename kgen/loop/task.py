"""What the loop is asked to do: generate a kernel for an op, or fix an existing file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kgen.arch import Arch
from kgen.spec import OpSpec


@dataclass(frozen=True)
class Task:
    mode: str  # "generate" or "fix"
    arch: Arch
    spec: OpSpec | None  # None for `fix` on a file whose op is unknown
    dtype: str | None
    source: str | None = None  # the file being fixed
    path: Path | None = None  # where it came from (its folder is the include folder)

    @property
    def label(self) -> str:
        what = self.spec.name if self.spec else (self.path.name if self.path else "kernel")
        return f"{self.mode} {what} {self.dtype or ''} for {self.arch.name}".replace("  ", " ")
