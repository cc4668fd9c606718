"""What running a candidate on the GPU found: a verdict, a description for the model, timings."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

VERDICTS = ("pass", "wrong", "crash", "timeout", "launch_error", "suspicious")


@dataclass(frozen=True)
class Timing:
    """One benchmark size: the candidate against the library baseline, timed the same way."""

    sizes: dict[str, int]
    ms: float
    p20_ms: float
    p80_ms: float
    baseline: str = ""  # "cuBLAS (torch.matmul)"
    baseline_ms: float | None = None
    tflops: float | None = None
    gbps: float | None = None
    roofline_fraction: float | None = None  # of the measured peak that bounds this op

    @property
    def speedup(self) -> float | None:
        return self.baseline_ms / self.ms if self.baseline_ms and self.ms > 0 else None


@dataclass(frozen=True)
class RunResult:
    """The outcome of one candidate in one worker; failures are verdicts, never exceptions."""

    verdict: str
    message: str = ""  # for `wrong`: how many off, max errors, where; for crashes: the CUDA error
    timings: tuple[Timing, ...] = ()
    device: str = ""  # the GPU it ran on ("NVIDIA H200, sm_90")
    note: str = ""  # e.g. "timings are for the local sm_90 through embedded PTX, not sm_89"
    checks: tuple[str, ...] = ()  # what was validated, for the report
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunResult:
        timings = tuple(Timing(**t) for t in data.get("timings", ()))
        return cls(**{**data, "timings": timings, "checks": tuple(data.get("checks", ()))})
