"""What the two extra checks of the GPU stage found: an Nsight Compute profile summary of a passing
candidate, and compute-sanitizer findings for a failing one; each renders the few lines the model
reads. Values only: collecting and parsing live in kgen.gpu.profile and kgen.gpu.sanitizer.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

# Bottleneck classes (ncu-feedback.md §8), with what each one means for the next change.
HINTS = {
    "compute_tensor": "the tensor pipe is the limit: only less work or a better tile shape helps",
    "memory_dram": "DRAM bandwidth is the limit: only fewer bytes (reuse, fusion, smaller "
                   "types) helps",
    "memory_onchip": "an on-chip memory level is the limit: more reuse in registers, wider "
                     "(16-byte) accesses, fewer shared-memory round trips",
    "compute_alu": "the SIMT pipes are the limit: tensor cores, or fewer instructions per result",
    "latency_small_grid": "the grid cannot fill the GPU: more blocks (smaller tiles, split-K) or "
                          "a persistent grid sized to the SM count",
    "latency_occupancy": "too few warps to hide latency: fewer registers or less shared memory "
                         "per block, or another block size",
    "latency_stalls": "warps wait on dependencies: more independent work per thread (ILP), "
                      "deeper prefetch",
}
STALL_HINTS = {
    "long_scoreboard": "waiting on global/local memory: more loads in flight, a deeper cp.async "
                       "pipeline, 16-byte coalesced loads",
    "barrier": "waiting at __syncthreads: fewer barriers or more work between them",
    "mio_throttle": "shared-memory pipe pressure: fix bank conflicts, use wider shared accesses",
    "short_scoreboard": "waiting on shared memory: fix bank conflicts, use ldmatrix or wider "
                        "accesses",
    "wait": "fixed-latency dependency chains: unroll for more independent instructions",
    "math_pipe_throttle": "a math pipe is full: fine when compute-bound",
    "lg_throttle": "too many global memory instructions: vectorize (float4)",
}
# DRAM the busiest unit but below its roof (85%, ncu-feedback.md §8): on an H100 a copy with one
# float per thread in flight moved 70% of peak with long_scoreboard 87% of stalls, where four
# float4 loads per thread reach the roof. Fewer bytes is not the first lever there.
DRAM_BELOW_ROOF = ("DRAM is the busiest unit but below its roof: more bytes in flight per SM "
                   "(16-byte loads, several independent loads per thread before the first use) "
                   "can still raise it; once at the roof, only fewer bytes (reuse, fusion, "
                   "smaller types) help")


@dataclass(frozen=True)
class Profile:
    """A compact Nsight Compute summary of one launch, with a bottleneck class and evidence."""

    kernel: str = ""
    sizes: dict[str, int] = field(default_factory=dict)
    time_us: float | None = None
    grid: str = ""
    block: str = ""
    registers: int | None = None
    sol_compute: float | None = None  # % of peak, sm__throughput
    sol_memory: float | None = None  # % of peak, max of DRAM/L2/L1/shared
    dram: float | None = None  # % of peak DRAM throughput
    dram_bytes: float | None = None
    l1_throughput: float | None = None
    l2_throughput: float | None = None
    l1_hit: float | None = None
    l2_hit: float | None = None
    occupancy: float | None = None  # achieved, % of the maximum warps
    occupancy_limit: float | None = None  # theoretical, %
    limiter: str = ""  # registers | shared memory | warps | blocks
    waves: float | None = None
    conflicts_ld: float | None = None
    conflicts_st: float | None = None
    conflict_ratio: float | None = None  # conflicts / wavefronts of shared loads or stores,
    #                                      the worse of the two (0 none, 0.97 32-way)
    tensor: float | None = None  # % of peak tensor pipe (HMMA and HGMMA)
    issue: float | None = None  # % of issue slots used
    stalls: tuple[tuple[str, float], ...] = ()  # largest first, % of warp cycles
    bottleneck: str = ""  # a HINTS key
    at_roofline: bool = False
    evidence: tuple[str, ...] = ()
    others: tuple[str, ...] = ()  # the other launches of a multi-launch candidate
    missing: tuple[str, ...] = ()  # metrics ncu did not return
    error: str = ""  # why there is no profile (no ncu, ERR_NVGPUCTRPERM, ...)
    unavailable: bool = False  # the machine's fault (no ncu, no permission), not the kernel's
    seconds: float = 0.0  # the profile's own wall time, ncu's start to its end
    waited_s: float = 0.0  # before it, for the host's profile lock (another profile was running)

    @property
    def bank_conflicts(self) -> bool:
        """Shared-memory bank conflicts worth removing (a fifth of the wavefronts or more)."""
        return self.conflict_ratio is not None and self.conflict_ratio >= 0.2

    def short(self) -> str:
        """`memory_dram (dram 87%, at roofline)`: for table cells."""
        if self.error:
            return "no profile"
        head = ", ".join(self.evidence[:1]) + (", at roofline" if self.at_roofline else "")
        return f"{self.bottleneck} ({head})" if head else self.bottleneck

    def describe(self) -> str:
        """The `profile` record the model gets: a few lines, numbers pre-digested."""
        if self.error:
            return f"profile  none: {self.error}"
        where = "x".join(str(v) for v in self.sizes.values())
        time = f"{self.time_us:.1f} us" if self.time_us is not None else "?"
        lines = [f"profile  {self.kernel} at {where} (Nsight Compute, one launch, {time}): "
                 f"{self.bottleneck}{' at the roofline' if self.at_roofline else ''} — "
                 + "; ".join(self.evidence)]
        lines.append("  speed of light: " + _pairs(
            ("compute", self.sol_compute), ("memory", self.sol_memory), ("DRAM", self.dram),
            ("L1", self.l1_throughput), ("L2", self.l2_throughput), ("tensor pipe", self.tensor),
            ("issue slots", self.issue)) + "; hit rates " + _pairs(("L1", self.l1_hit),
                                                                    ("L2", self.l2_hit)))
        occ = (f"  occupancy {_pct(self.occupancy)} achieved of {_pct(self.occupancy_limit)} "
               f"theoretical" + (f" (limited by {self.limiter})" if self.limiter else "")
               + (f", {self.registers} registers/thread" if self.registers else "")
               + (f"; {_waves(self.waves)} waves" if self.waves is not None else ""))
        lines.append(occ)
        if not (self.conflicts_ld or self.conflicts_st):
            if self.conflicts_ld is not None or self.conflicts_st is not None:
                lines.append("  shared-memory bank conflicts: none")
        else:
            share = (f" (worse side: {self.conflict_ratio:.0%} of its wavefronts)"
                     if self.conflict_ratio is not None else "")
            lines.append(f"  shared-memory bank conflicts: {_count(self.conflicts_ld)} on loads, "
                         f"{_count(self.conflicts_st)} on stores{share}"
                         + ("; significant: pad or swizzle the shared tile"
                            if self.bank_conflicts else ""))
        if self.stalls:
            lines.append("  top stalls: " + ", ".join(f"{n} {v:.0f}%" for n, v in self.stalls))
        lines.append(f"  hint: {self.hint()}")
        lines += [f"  also launched: {o}" for o in self.others]
        if self.missing:
            lines.append(f"  not measured: {', '.join(self.missing[:6])}")
        return "\n".join(lines)

    def hint(self) -> str:
        text = HINTS.get(self.bottleneck, "")
        if self.bottleneck == "memory_dram" and not self.at_roofline:
            text = DRAM_BELOW_ROOF
        if self.bottleneck == "latency_stalls" and self.stalls:
            text = STALL_HINTS.get(self.stalls[0][0], text)
        return text + (" (at the roofline: little is left to gain)" if self.at_roofline else "")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Profile:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        for name in ("evidence", "others", "missing"):
            values[name] = tuple(values.get(name, ()))
        values["stalls"] = tuple((str(n), float(v)) for n, v in values.get("stalls", ()))
        return cls(**values)


@dataclass(frozen=True)
class Finding:
    """One problem compute-sanitizer found, mapped to a source line and a buffer."""

    tool: str  # memcheck | racecheck | initcheck
    what: str  # "out-of-bounds __global__ write of 4 bytes", "shared-memory race", ...
    line: int | None = None
    file: str = ""
    kernel: str = ""
    thread: str = ""
    block: str = ""
    where: str = ""  # "4 bytes (1 element) past the end of C, which has 21 elements"
    other_line: int | None = None  # a race's other access
    count: int = 1

    def describe(self, source: str = "") -> str:
        at = f"line {self.line}" if self.line else (f"{self.file or 'no source line'}")
        if self.other_line and self.line:
            at = f"lines {self.line} and {self.other_line}"
        who = f", thread {self.thread} block {self.block}" if self.thread else ""
        many = f" [x{self.count}]" if self.count > 1 else ""
        text = f"sanitizer  {self.tool}: {self.what} at {at}{who}"
        text += f": {self.where}" if self.where else ""
        text += many
        for n in (self.line, self.other_line):
            code = _line(source, n)
            if code:
                text += f"\n  {n} | {code}"
        return text


@dataclass(frozen=True)
class SanitizerReport:
    """compute-sanitizer at the smallest failing size: the tools run and what they found."""

    sizes: dict[str, int] = field(default_factory=dict)
    tools: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    error: str = ""
    note: str = ""
    seconds: float = 0.0
    blind_to: str = ""  # memory a tool could not look at ("shared memory"): no verdict on it

    def short(self) -> str:
        """`memcheck: out-of-bounds __global__ write of 4 bytes, line 11`: for table cells."""
        if not self.findings:
            return "sanitizer: not run" if not self.tools else f"{'/'.join(self.tools)}: clean"
        first = self.findings[0]
        return f"{first.tool}: {first.what}" + (f", line {first.line}" if first.line else "")

    def describe(self, source: str = "", most: int = 4) -> str:
        where = " ".join(f"{k}={v}" for k, v in self.sizes.items())
        if not self.tools:
            return f"sanitizer  not run: {self.error}"
        head = f"sanitizer  {', '.join(self.tools)} at {where}"
        if not self.findings:
            if self.error:
                text = f"{head}: nothing found ({self.error})"
            elif self.blind_to:
                text = f"{head}: no invalid access, race or uninitialized read found"
            else:
                text = (f"{head}: no invalid access, race or uninitialized read found; the fault "
                        "is in the arithmetic or the indexing of the values")
            return text + (f"\n  note: {self.note}" if self.note else "")
        lines = [f.describe(source) for f in self.findings[:most]]
        if len(self.findings) > most:
            lines.append(f"sanitizer  ... {len(self.findings) - most} more findings")
        if self.note:
            lines.append(f"  note: {self.note}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SanitizerReport:
        found = tuple(Finding(**f) for f in data.get("findings", ()))
        return cls(dict(data.get("sizes", {})), tuple(data.get("tools", ())), found,
                   data.get("error", ""), data.get("note", ""), float(data.get("seconds", 0.0)),
                   data.get("blind_to", ""))


def _pct(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f}%"


def _pairs(*items: tuple[str, float | None]) -> str:
    return ", ".join(f"{name} {_pct(v)}" for name, v in items if v is not None) or "?"


def _waves(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.0f}"


def _count(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value / 1e6:.1f}M" if value >= 1e6 else f"{value:,.0f}"


def _line(source: str, number: int | None) -> str:
    lines = source.splitlines()
    if not number or not 0 < number <= len(lines):
        return ""
    text = lines[number - 1].strip()
    return text if len(text) <= 120 else text[:117] + "..."
