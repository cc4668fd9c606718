"""Op spec values: what an op computes, its tensors, sizes, scalar parameters, dtypes and
tolerances. Frozen and serializable; loading and validating a spec file lives in `kgen.ops`.

A test or bench entry is a dict of the size symbols, optionally overriding parameter values
(`{M: 7, N: 3, eps: 1e-3}`); `sizes_of` and `params_at` split it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from kgen import expr
from kgen.dtypes import DTYPES
from kgen.errors import UsageError

ROLES = ("input", "weight", "output")  # weight: a model parameter the kernel only reads
DISTS = {"uniform": ("low", "high"), "normal": ("mean", "std"), "randint": ("low", "high")}
PARAM_DTYPES = ("float32", "float64", "int32", "int64")
CHECKS = {"row_sums": "every row (last dim) of the first output sums to 1, within the output "
                      "dtype's rounding (2 eps, at least 1e-4) and never looser than atol + rtol",
          "log_row_sums": "the exp of every row (last dim) of the first output sums to 1 (rows "
                          "of log-probabilities), within the same tolerance as row_sums"}
REFERENCE_KINDS = ("expression", "file", "kernelbench")
Entry = dict[str, Any]  # size symbols -> int, and any parameter overrides -> their values


@dataclass(frozen=True)
class Init:
    """How a tensor's random values are drawn: uniform [low, high), normal(mean, std), or
    integers in [low, high) (stored in the tensor's dtype)."""

    dist: str = "uniform"
    a: float = -1.0  # low, or mean
    b: float = 1.0  # high, or std

    def to_json(self) -> dict[str, Any]:
        first, second = DISTS[self.dist]
        return {"dist": self.dist, first: self.a, second: self.b}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Init:
        first, second = DISTS[data["dist"]]
        return cls(data["dist"], data[first], data[second])

    def describe(self) -> str:
        if self.dist == "normal":
            return f"normal (mean {self.a:g}, std {self.b:g})"
        if self.dist == "randint":
            return f"integers in [{self.a:g}, {self.b:g})"
        return f"uniform in [{self.a:g}, {self.b:g})"


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[str, ...]  # expressions over the size symbols; () is a scalar tensor
    role: str  # one of ROLES
    dtype: str | None = None  # a fixed dtype (int64 indices); None: the run's dtype
    init: Init = Init()
    attribute: str = ""  # KernelBench weights: the Model attribute it is (`conv.weight`)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "role": self.role,
                "dtype": self.dtype, "init": self.init.to_json(), "attribute": self.attribute}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tensor:
        return cls(data["name"], tuple(data["shape"]), data["role"], data.get("dtype"),
                   Init.from_json(data["init"]) if data.get("init") else Init(),
                   data.get("attribute", ""))


@dataclass(frozen=True)
class Param:
    """A scalar kernel argument with its value (`eps`), passed by name in the contract's args."""

    name: str
    dtype: str  # one of PARAM_DTYPES
    value: float | int


@dataclass(frozen=True)
class Tolerance:
    reference: str  # dtype the reference is computed in
    atol: float
    rtol: float


@dataclass(frozen=True)
class Reference:
    """What the outputs must be: a torch expression, a `reference` function in a Python file
    beside the spec, or a KernelBench problem's Model; files travel as their text."""

    kind: str  # one of REFERENCE_KINDS
    text: str  # the expression, or the file's Python source
    file: str = ""  # the file as the spec names it (kinds file and kernelbench)

    def describe(self) -> str:
        if self.kind == "expression":
            return self.text
        if self.kind == "file":
            return f"reference() in {self.file}"
        return f"Model.forward of {Path(self.file).name}"


@dataclass(frozen=True)
class Baseline:
    """What a candidate is timed against: a torch expression in the run's dtype; "" means the
    reference itself (for a KernelBench problem: the eager Model)."""

    label: str = ""
    expression: str = ""


@dataclass(frozen=True)
class Reduction:
    """`reduce: {op: sum, dim: 1}`: the op reduces its one operand over one dim, or over several
    adjacent ones (`dim: [1, 2]`: `count` dims from `dim`), or divides it by a norm over them
    (l1norm, l2norm, rmsnorm with its eps; kgen.ops.reduction); op "" is none."""

    op: str = ""
    dim: int = 0
    eps: float = 0.0  # rmsnorm's: x / sqrt(mean(x^2) + eps)
    count: int = 1  # adjacent dims reduced together, from `dim`

    @property
    def dims(self) -> tuple[int, ...]:
        return tuple(range(self.dim, self.dim + self.count))


@dataclass(frozen=True)
class OpSpec:
    """Everything kgen knows about one op."""

    name: str
    description: str
    sizes: tuple[str, ...]
    tensors: tuple[Tensor, ...]
    dtypes: dict[str, Tolerance]
    reference: Reference
    test_sizes: tuple[Entry, ...]
    bench_sizes: tuple[Entry, ...]
    flops: str
    bytes: str
    folder: Path
    params: tuple[Param, ...] = ()
    checks: tuple[str, ...] = ()
    baseline: Baseline = field(default_factory=Baseline)
    # A shipped op this one computes the same thing as, its operands and output bound in order
    # (`same_as: gemm`: the first input is A, the second B, the output C; kgen.ops.sameas).
    same_as: str = ""
    # Or: the op is Y = EXPR(X) element by element, over one operand and one output
    # (kgen.ops.pointwise), which the builtin author writes with its elementwise template.
    pointwise: str = ""
    # Or: the op reduces its one operand over one dim (kgen.ops.reduction), which the builtin
    # author writes with its dim-reduction template.
    reduce: Reduction = field(default_factory=Reduction)

    def _role(self, role: str) -> tuple[Tensor, ...]:
        return tuple(t for t in self.tensors if t.role == role)

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        return self._role("input")

    @property
    def weights(self) -> tuple[Tensor, ...]:
        return self._role("weight")

    @property
    def operands(self) -> tuple[Tensor, ...]:
        """What the kernel reads (inputs and weights), in the spec's order."""
        return tuple(t for t in self.tensors if t.role != "output")

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        return self._role("output")

    def tensor_dtype(self, tensor: Tensor, run_dtype: str) -> str:
        return tensor.dtype or run_dtype

    def sizes_of(self, entry: Entry) -> dict[str, int]:
        return {k: int(entry[k]) for k in self.sizes}

    def params_at(self, entry: Entry | None = None) -> dict[str, float | int]:
        """Parameter values at this entry: the spec's, unless the entry overrides them."""
        entry = entry or {}
        return {p.name: entry.get(p.name, p.value) for p in self.params}

    def shape(self, tensor: Tensor, sizes: Entry) -> tuple[int, ...]:
        return tuple(expr.evaluate(dim, self.sizes_of(sizes)) for dim in tensor.shape)

    def flop_count(self, sizes: Entry) -> int:
        return expr.evaluate(self.flops, self.sizes_of(sizes))

    def byte_count(self, sizes: Entry, dtype: str) -> int:
        return expr.evaluate(self.bytes, {**self.sizes_of(sizes), "ELEM": DTYPES[dtype].size})

    def reference_kernels(self) -> list[Path]:
        return sorted(self.folder.glob("[0-9][0-9]_*.cu"))

    def check_dtype(self, dtype: str) -> None:
        if dtype not in self.dtypes:
            raise UsageError(f"op {self.name} has no dtype {dtype!r}; it has: "
                             f"{', '.join(self.dtypes)}")

    def with_tolerances(self, atol: float, rtol: float) -> OpSpec:
        """The same op with every dtype's tolerances replaced."""
        return replace(self, dtypes={k: Tolerance(t.reference, atol, rtol)
                                     for k, t in self.dtypes.items()})

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "sizes": list(self.sizes),
                "tensors": [t.to_json() for t in self.tensors],
                "dtypes": {k: asdict(v) for k, v in self.dtypes.items()},
                "reference": asdict(self.reference), "test_sizes": list(self.test_sizes),
                "bench_sizes": list(self.bench_sizes), "flops": self.flops, "bytes": self.bytes,
                "folder": str(self.folder), "params": [asdict(p) for p in self.params],
                "checks": list(self.checks), "baseline": asdict(self.baseline),
                "same_as": self.same_as, "pointwise": self.pointwise,
                "reduce": asdict(self.reduce)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OpSpec:
        return cls(data["name"], data["description"], tuple(data["sizes"]),
                   tuple(Tensor.from_json(t) for t in data["tensors"]),
                   {k: Tolerance(**v) for k, v in data["dtypes"].items()},
                   Reference(**data["reference"]), tuple(data["test_sizes"]),
                   tuple(data["bench_sizes"]), data["flops"], data["bytes"],
                   Path(data["folder"]), tuple(Param(**p) for p in data.get("params", ())),
                   tuple(data.get("checks", ())), Baseline(**data.get("baseline", {})),
                   data.get("same_as", ""), data.get("pointwise", ""),
                   Reduction(**data.get("reduce", {})))
