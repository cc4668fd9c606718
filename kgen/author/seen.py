"""The history as the builtin search reads it: each past attempt of one of the family's
configurations classified (resource limit, spill, wrong or crashed, timed, compiled), and the
timed ones ordered so that noise cannot change what is explored next."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgen.author.families import GEMM, Family
from kgen.findings import Profile
from kgen.loop.attempt import Attempt
from kgen.verdict import Timing, Verdict


@dataclass(frozen=True)
class Seen:
    """One past attempt of ours, as the search reads it."""

    number: int
    params: Any  # a configuration of one of the family's templates
    kind: str  # resource | spill | bad | timed | compiled | failed
    detail: str = ""
    ms: float | None = None  # timing's median
    registers: int | None = None
    timing: Timing | None = None  # what it is judged by (the geometric mean over bench sizes)
    profile: Profile | None = None  # Nsight Compute's summary, where it ran
    timings: tuple[Timing, ...] = ()  # every bench size

    @property
    def time(self) -> str:
        """`0.134 ms`, with what it stands for when it is a mean over several bench sizes."""
        if self.ms is None:
            return "not timed"
        over = self.timing.geomean_of if self.timing is not None else 1
        return f"{self.ms:.3f} ms" + (f", geometric mean of {over} bench sizes" if over > 1
                                      else "")


def read_attempt(a: Attempt, family: Family = GEMM) -> Seen | None:
    """Classify one attempt; None when it is not one of the family's configurations."""
    params = family.parse(a.choices) or (family.parse(a.source or "") if a.source else None)
    if params is None:
        return None
    comp = a.compile
    if comp is not None and not comp.ok:
        text = " ".join(d.message for d in comp.errors)
        if any(d.category == "resource" for d in comp.errors) or _is_resource(text):
            return Seen(a.number, params, "resource", text[:120])
        return Seen(a.number, params, "failed", text[:120])
    usage = next(iter(comp.resources.values()), None) if comp is not None else None
    regs = usage.registers if usage else None
    ran = a.evaluation
    if ran is not None and ran.verdict == Verdict.LAUNCH_ERROR and _is_resource(ran.message):
        return Seen(a.number, params, "resource", ran.message[:120], registers=regs)
    if ran is not None and not Verdict(ran.verdict).passed:  # every verdict but pass is bad
        return Seen(a.number, params, "bad", f"{ran.verdict}: {ran.message[:100]}",
                    registers=regs)
    if usage is not None and usage.spill_stores > 0:
        return Seen(a.number, params, "spill", f"{usage.spill_stores} bytes of spill stores",
                    registers=regs)
    if a.timing is not None and ran is not None:
        return Seen(a.number, params, "timed", ms=a.timing.ms, registers=regs,
                    timing=a.timing, profile=ran.profile, timings=tuple(ran.timings))
    return Seen(a.number, params, "compiled", registers=regs)


def _is_resource(text: str) -> bool:
    text = text.lower()
    return any(w in text for w in ("too much shared data", "shared memory", "too many resources",
                                   "registers", "uses too much"))


def noise_aware_order(timed: list[Seen]) -> list[Seen]:
    """The leader first (a later attempt leads only when it beats the leader beyond the noise,
    as best_attempt decides), then the rest by median time: noise cannot change what is explored
    next, so the same budget ends on the same configuration."""
    leader: Seen | None = None
    for s in timed:
        assert s.timing is not None
        if leader is None or (leader.timing is not None and s.timing.beats(leader.timing)):
            leader = s
    rest = sorted((s for s in timed if s is not leader), key=lambda s: s.ms or 0.0)
    return [leader, *rest] if leader is not None else []
