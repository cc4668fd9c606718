"""What checking a candidate on the GPU found: a verdict, a description for the model, timings.

One definition of the verdicts (what passes, what fails, what makes kgen re-check the GPU, how
each is shown) and of how a timing is written, for the worker, the loop, the search and the report.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from kgen.findings import Profile, SanitizerReport


class Verdict(StrEnum):
    PASS = "pass"
    WRONG = "wrong"  # ran, but an output (or a guard band, or an input) is off
    CRASH = "crash"  # illegal address, a sticky CUDA error, the worker died
    TIMEOUT = "timeout"  # a launch or the whole worker ran past its time
    LAUNCH_ERROR = "launch_error"  # could not be loaded or launched as the contract says
    SUSPICIOUS = "suspicious"  # faster than the roofline allows: it cannot have done the work

    @property
    def passed(self) -> bool:
        return self is Verdict.PASS

    @property
    def needs_health_check(self) -> bool:
        """After these the GPU is re-checked with a canary before the next candidate."""
        return self in (Verdict.CRASH, Verdict.TIMEOUT, Verdict.LAUNCH_ERROR)


# An attempt's status is a verdict, or one of these when it never reached the GPU.
NOT_RUN = ("no code", "contract error", "compile error", "compiled", "not compiled")
_COLORS = {"pass": "green", "compiled": "green", "suspicious": "yellow", "compile error": "yellow",
           "contract error": "yellow", "no code": "yellow"}


def status_color(status: str) -> str:
    """The colour a status is shown in (failed verdicts red)."""
    return _COLORS.get(status, "red" if status in Verdict.__members__.values() else "white")


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
    bound: str = ""  # which peak bounds it: "memory" (copy bandwidth) or "compute" (matmul rate)
    compiled_ms: float | None = None  # torch.compile of the baseline, where timed and it worked
    params: dict[str, Any] = field(default_factory=dict)  # parameters this entry overrides
    geomean_of: int = 1  # > 1: this stands for that many bench sizes (see `overall`)

    @property
    def speedup(self) -> float | None:
        return self.baseline_ms / self.ms if self.baseline_ms and self.ms > 0 else None

    def beats(self, other: Timing, margin: float = 0.01) -> bool:
        """Faster beyond the noise: at least `margin` faster at the median, and the two measured
        spreads (p20-p80) do not overlap. A change within the noise never counts, so the same
        search budget ends on the same best configuration run after run."""
        return self.ms < other.ms * (1 - margin) and self.p80_ms < other.p20_ms

    @property
    def size_label(self) -> str:
        if self.geomean_of > 1:
            return f"geometric mean of {self.geomean_of} bench sizes"
        overrides = "".join(f" {k}={v}" for k, v in self.params.items())
        return "x".join(str(v) for v in self.sizes.values()) + overrides

    def short(self) -> str:
        """`1.920 ms, 0.41x of baseline`: for progress lines and table cells."""
        text = f"{self.ms:.3f} ms"
        if self.tflops:
            text += f", {self.tflops:.1f} TFLOP/s"
        if self.speedup:
            text += f", {self.speedup:.2f}x of {self.baseline or 'baseline'}"
        if self.geomean_of > 1:
            text += f" ({self.size_label})"
        return text

    def describe(self) -> str:
        """The `time` record the model gets: size, ms, rate, ratio to the baseline, roofline."""
        rate = f" = {self.tflops:.1f} TFLOP/s" if self.tflops else (
            f" = {self.gbps:.0f} GB/s" if self.gbps else "")
        base = ""
        if self.baseline_ms:
            base = (f", {self.speedup:.2f}x of {self.baseline or 'baseline'} "
                    f"({self.baseline_ms:.3f} ms)")
        roof = f", {self.roofline_fraction:.0%} of roofline" if self.roofline_fraction else ""
        if roof and self.bound:
            roof += f" ({self.bound}-bound)"
        compiled = (f", {self.compiled_ms / self.ms:.2f}x of torch.compile "
                    f"({self.compiled_ms:.3f} ms)" if self.compiled_ms and self.ms > 0 else "")
        spread = f" (p20-p80 {self.p20_ms:.3f}-{self.p80_ms:.3f})"
        return f"time   {self.size_label}: {self.ms:.3f} ms{spread}{rate}{base}{compiled}{roof}"


def overall(timings: Sequence[Timing]) -> Timing | None:
    """What a candidate's speed is judged by: its one timing, or for several bench sizes the
    geometric mean of each measure, so that every size weighs the same whatever its scale, and
    the ratio of two candidates' overalls is the geometric mean of their per-size ratios. The
    spread is the geometric mean of the sizes' p20 and p80, so `beats` still asks for a gain
    beyond a size's typical noise. None when nothing was timed."""
    if len(timings) <= 1:
        return timings[0] if timings else None

    def mean(values: Sequence[float]) -> float:
        return math.exp(sum(math.log(max(v, 1e-12)) for v in values) / len(values))

    bases = [t.baseline_ms for t in timings]
    shares = [t.roofline_fraction for t in timings]
    bounds = {t.bound for t in timings}
    return Timing({}, mean([t.ms for t in timings]), mean([t.p20_ms for t in timings]),
                  mean([t.p80_ms for t in timings]), timings[0].baseline,
                  mean([b for b in bases if b]) if all(bases) else None,
                  roofline_fraction=min(s for s in shares if s) if all(shares) else None,
                  bound=bounds.pop() if len(bounds) == 1 else "", geomean_of=len(timings))


@dataclass(frozen=True)
class Evaluation:
    """The outcome of checking one candidate in one worker; failures are verdicts, not raises."""

    verdict: str  # a Verdict value
    message: str = ""  # for `wrong`: how many off, max errors, where; for crashes: the CUDA error
    timings: tuple[Timing, ...] = ()
    device: str = ""  # the GPU it ran on ("NVIDIA H200, sm_90")
    note: str = ""  # e.g. "timings are for the local sm_90 through embedded PTX, not sm_89"
    checks: tuple[str, ...] = ()  # what was validated, for the report
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    profile: Profile | None = None  # Nsight Compute summary of a passing candidate
    sanitizer: SanitizerReport | None = None  # compute-sanitizer findings of a failing one

    @property
    def kind(self) -> Verdict:
        return Verdict(self.verdict)

    @property
    def passed(self) -> bool:
        return self.verdict == Verdict.PASS

    def describe(self, source: str = "") -> str:
        """Records such as `wrong float16 M=127 ...`, `time 4096x4096x4096 ...`, `profile ...`
        and `sanitizer ...` for the model (`source` shows the lines sanitizer findings name)."""
        lines = [f"{self.verdict}  {self.message}".rstrip()]
        if (hint := _drift_hint(self, source)) is not None:
            lines.append(hint)
        if self.note:
            lines.append(f"note  {self.note}")
        lines += [t.describe() for t in self.timings]
        if self.sanitizer is not None:
            lines.append(self.sanitizer.describe(source))
        if self.profile is not None:
            lines.append(self.profile.describe())
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["verdict"] = str(self.verdict)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Evaluation:
        """Read back a record (a worker's result.json, a results.jsonl line); ValueError if bad."""
        if not isinstance(data, dict) or data.get("verdict") not in set(Verdict):
            raise ValueError("not an evaluation record")
        timings = tuple(Timing(**t) for t in data.get("timings", ()))
        known = {"verdict", "message", "device", "note", "seconds", "extra"}
        fields = {k: v for k, v in data.items() if k in known}
        profile = Profile.from_json(data["profile"]) if data.get("profile") else None
        sanitizer = (SanitizerReport.from_json(data["sanitizer"]) if data.get("sanitizer")
                     else None)
        return cls(**fields, timings=timings, checks=tuple(data.get("checks", ())),
                   profile=profile, sanitizer=sanitizer)


# A float32 kernel on the TF32 tensor cores that is off by little: each mma's sum is rounded
# toward zero, so one accumulator chained through every k-step drifts in one direction over a
# long K. kgen's own 3xTF32 kernel failed so at 4096^3 (75 of 16.8M outputs, at most 3.7e-3 off;
# twentieth session) and passed once each k-slice was summed into a fresh fragment.
DRIFT_HINT = ("hint  a small error from TF32 tensor cores at a long K: each mma rounds its sum "
              "toward zero, so an accumulator chained through every k-step drifts one way; sum "
              "each k-slice (one shared tile) into a fresh fragment and add that to a float32 "
              "accumulator with an ordinary add")
_MAX_ABS = re.compile(r"max abs ([0-9.eE+-]+)")


def _drift_hint(result: Evaluation, source: str) -> str | None:
    """DRIFT_HINT for a wrong float32 answer, off by less than 0.1, from a kernel that uses
    .tf32 mma; None otherwise."""
    found = _MAX_ABS.search(result.message)
    if result.verdict != Verdict.WRONG or not result.message.startswith("float32") \
            or ".tf32" not in source or found is None:
        return None
    try:
        small = float(found.group(1)) < 0.1
    except ValueError:
        return None
    return DRIFT_HINT if small else None
