"""Op spec values: what an op computes, its tensors, sizes, dtypes and tolerances. Frozen and
serializable; loading and validating a spec file lives in `kgen.ops`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kgen import expr
from kgen.dtypes import DTYPES
from kgen.errors import UsageError


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[str, ...]  # expressions over the size symbols
    role: str  # "input" or "output"


@dataclass(frozen=True)
class Tolerance:
    reference: str  # dtype the reference is computed in
    atol: float
    rtol: float


@dataclass(frozen=True)
class OpSpec:
    """Everything kgen knows about one op."""

    name: str
    description: str
    sizes: tuple[str, ...]
    tensors: tuple[Tensor, ...]
    dtypes: dict[str, Tolerance]
    reference: str  # a torch expression over the input names
    test_sizes: tuple[dict[str, int], ...]
    bench_sizes: tuple[dict[str, int], ...]
    flops: str
    bytes: str
    folder: Path

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        return tuple(t for t in self.tensors if t.role == "input")

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        return tuple(t for t in self.tensors if t.role == "output")

    def shape(self, tensor: Tensor, sizes: dict[str, int]) -> tuple[int, ...]:
        return tuple(expr.evaluate(dim, sizes) for dim in tensor.shape)

    def flop_count(self, sizes: dict[str, int]) -> int:
        return expr.evaluate(self.flops, sizes)

    def byte_count(self, sizes: dict[str, int], dtype: str) -> int:
        return expr.evaluate(self.bytes, {**sizes, "ELEM": DTYPES[dtype].size})

    def reference_kernels(self) -> list[Path]:
        return sorted(self.folder.glob("[0-9][0-9]_*.cu"))

    def check_dtype(self, dtype: str) -> None:
        if dtype not in self.dtypes:
            raise UsageError(f"op {self.name} has no dtype {dtype!r}; it has: "
                             f"{', '.join(self.dtypes)}")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["folder"] = str(self.folder)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OpSpec:
        return cls(data["name"], data["description"], tuple(data["sizes"]),
                   tuple(Tensor(t["name"], tuple(t["shape"]), t["role"])
                         for t in data["tensors"]),
                   {k: Tolerance(**v) for k, v in data["dtypes"].items()}, data["reference"],
                   tuple(data["test_sizes"]), tuple(data["bench_sizes"]), data["flops"],
                   data["bytes"], Path(data["folder"]))
