"""The launch contract a candidate carries in `// kgen:` comments, as values (parsed in
`kgen.loop.candidate`); the worker launches by it.

  // kgen: op=gemm dtype=float16
  // kgen: launch gemm_f16 grid=(cdiv(N,128),cdiv(M,128)) block=(256) smem=49152 args=(A,B,C,M,N,K)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from kgen import expr


@dataclass(frozen=True)
class Launch:
    kernel: str
    grid: tuple[str, ...]
    block: tuple[str, ...]
    smem: str
    args: tuple[str, ...]
    line: int  # where it was declared, for error messages

    def dims(self, sizes: dict[str, int]) -> tuple[tuple[int, ...], tuple[int, ...], int]:
        """(grid, block, dynamic shared bytes) for these sizes."""
        grid = tuple(expr.evaluate(g, sizes) for g in self.grid)
        block = tuple(expr.evaluate(b, sizes) for b in self.block)
        return grid, block, expr.evaluate(self.smem, sizes)


@dataclass(frozen=True)
class Contract:
    op: str
    dtype: str
    launches: tuple[Launch, ...]
    choices: str = ""  # free text the author gives about its key choices (tile=..., warps=...)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Contract:
        launches = tuple(Launch(d["kernel"], tuple(d["grid"]), tuple(d["block"]), d["smem"],
                                tuple(d["args"]), int(d["line"])) for d in data["launches"])
        return cls(data["op"], data["dtype"], launches, data.get("choices", ""))
