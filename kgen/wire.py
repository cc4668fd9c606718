"""What the parent hands the GPU worker, and the files they exchange in the worker's own folder.

The worker gets only this: the binary, the launch contract, the op spec (with the text of a
reference file or KernelBench problem it names), sizes, seeds and budgets (as request.json), and
writes its Evaluation back as result.json.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgen.contract import Contract
from kgen.spec import OpSpec

REQUEST_FILE = "request.json"
RESULT_FILE = "result.json"
BINARY_FILE = "kernel.cubin"  # a cubin, or a fatbin carrying PTX
# A serving worker (`--serve`, kgen.gpu.pool): its start-up canary lands in READY_JOB/result.json;
# the peaks it measured are handed to its successor on the same GPU in PEAKS_FILE.
READY_JOB = "ready"
PEAKS_FILE = "peaks.json"
# Profile and sanitize modes (one launch under ncu or compute-sanitizer): what the worker did,
# and the address range of every buffer it allocated (to name the buffer a bad address is in).
PROBE_FILE = "probe.json"
PROFILE_WARMUP = 2  # runs of the whole contract before the one ncu measures


@dataclass(frozen=True)
class EvalRequest:
    """One candidate's evaluation; sizes are dicts of the spec's size symbols."""

    spec: OpSpec
    contract: Contract
    dtype: str
    test_sizes: tuple[dict[str, Any], ...]  # entries: size symbols, any parameter overrides
    bench_sizes: tuple[dict[str, Any], ...]
    seed: int
    input_sets: int = 3  # fresh random input sets per test size
    kernel_timeout_s: float = 10.0  # one launch (or one multi-launch group) may take this long
    bench_budget_s: float = 2.0  # timing loop per bench size (candidate + baseline together)
    revalidate_sizes: tuple[dict[str, Any], ...] = field(default=())  # after timing, fresh inputs
    compile_baseline: bool = False  # also time torch.compile of the baseline (compiles: slow)

    def to_json(self) -> dict[str, Any]:
        return {"spec": self.spec.to_json(), "contract": self.contract.to_json(),
                "dtype": self.dtype, "test_sizes": list(self.test_sizes),
                "bench_sizes": list(self.bench_sizes), "seed": self.seed,
                "input_sets": self.input_sets, "kernel_timeout_s": self.kernel_timeout_s,
                "bench_budget_s": self.bench_budget_s,
                "revalidate_sizes": list(self.revalidate_sizes),
                "compile_baseline": self.compile_baseline}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EvalRequest:
        return cls(OpSpec.from_json(data["spec"]), Contract.from_json(data["contract"]),
                   data["dtype"], tuple(data["test_sizes"]), tuple(data["bench_sizes"]),
                   int(data["seed"]), int(data["input_sets"]), float(data["kernel_timeout_s"]),
                   float(data["bench_budget_s"]), tuple(data["revalidate_sizes"]),
                   bool(data.get("compile_baseline", False)))

    def write(self, folder: Path, binary: bytes) -> None:
        (folder / BINARY_FILE).write_bytes(binary)
        (folder / REQUEST_FILE).write_text(json.dumps(self.to_json()))
