"""What the parent hands the worker (as job.json in the worker's own folder), and back.

The worker gets only this: the binary, the launch contract, the op spec, sizes, seeds and budgets.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kgen.candidate import Contract, Launch
from kgen.errors import KgenError
from kgen.spec import OpSpec, Tensor, Tolerance

JOB_FILE = "job.json"
RESULT_FILE = "result.json"
BINARY_FILE = "kernel.cubin"  # a cubin, or a fatbin carrying PTX


@dataclass(frozen=True)
class Job:
    """One candidate's evaluation; sizes are dicts of the spec's size symbols."""

    spec: OpSpec
    contract: Contract
    dtype: str
    test_sizes: tuple[dict[str, int], ...]
    bench_sizes: tuple[dict[str, int], ...]
    seed: int
    input_sets: int = 3  # fresh random input sets per test size
    kernel_timeout_s: float = 10.0  # one launch (or one multi-launch group) may take this long
    bench_budget_s: float = 2.0  # timing loop per bench size (candidate + baseline together)
    revalidate_sizes: tuple[dict[str, int], ...] = field(default=())  # after timing, fresh inputs

    def to_json(self) -> dict[str, Any]:
        return {"spec": spec_to_json(self.spec), "contract": contract_to_json(self.contract),
                "dtype": self.dtype, "test_sizes": list(self.test_sizes),
                "bench_sizes": list(self.bench_sizes), "seed": self.seed,
                "input_sets": self.input_sets, "kernel_timeout_s": self.kernel_timeout_s,
                "bench_budget_s": self.bench_budget_s,
                "revalidate_sizes": list(self.revalidate_sizes)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Job:
        return cls(spec_from_json(data["spec"]), contract_from_json(data["contract"]),
                   data["dtype"], tuple(data["test_sizes"]), tuple(data["bench_sizes"]),
                   int(data["seed"]), int(data["input_sets"]), float(data["kernel_timeout_s"]),
                   float(data["bench_budget_s"]), tuple(data["revalidate_sizes"]))

    def write(self, folder: Path, binary: bytes) -> None:
        (folder / BINARY_FILE).write_bytes(binary)
        (folder / JOB_FILE).write_text(json.dumps(self.to_json()))


def spec_to_json(spec: OpSpec) -> dict[str, Any]:
    data = asdict(spec)
    data["folder"] = str(spec.folder)
    return data


def spec_from_json(data: dict[str, Any]) -> OpSpec:
    return OpSpec(data["name"], data["description"], tuple(data["sizes"]),
                  tuple(Tensor(t["name"], tuple(t["shape"]), t["role"]) for t in data["tensors"]),
                  {k: Tolerance(**v) for k, v in data["dtypes"].items()}, data["reference"],
                  tuple(data["test_sizes"]), tuple(data["bench_sizes"]), data["flops"],
                  data["bytes"], Path(data["folder"]))


def contract_to_json(contract: Contract) -> dict[str, Any]:
    return asdict(contract)


def contract_from_json(data: dict[str, Any]) -> Contract:
    launches = tuple(Launch(d["kernel"], tuple(d["grid"]), tuple(d["block"]), d["smem"],
                            tuple(d["args"]), int(d["line"])) for d in data["launches"])
    return Contract(data["op"], data["dtype"], launches, data.get("choices", ""))


class Rejected(KgenError):
    """Raised inside the worker to stop at the first failed check; carries the verdict."""

    def __init__(self, verdict: str, message: str):
        super().__init__(message)
        self.verdict = verdict
        self.message = message
