"""The builtin author's search: pick the next untried configuration of the op's template family
(kgen.author.families: gemm, elementwise, rowwise, transpose) from the history, with a stated
reason. Deterministic (ties break by the space's fixed order), never random.

Rules, in order: nothing tried yet -> the family's default for the arch/dtype (and op); the last
attempt hit a resource limit -> shrink; it spilled -> fewer registers; it was wrong/crashed ->
move away from it (a wrong answer from a template of another arithmetic, 3xTF32, leaves that
template at once: its error is the split's, the same in every configuration); a template of
another arithmetic not yet tried, once something has been timed -> its default; the fastest is at
the roofline by its profile (DRAM or tensor pipe) and at
ROOFLINE_STOP of its roofline at the other bench sizes by its timings, or a
memory-bound op's timings reach ROOFLINE_STOP of the measured copy bandwidth at every bench
size -> stop and say so; the last attempt is the fastest and its profile shows bank conflicts ->
the swizzled (gemm) or padded (transpose) shared layout, or occupancy limited by registers ->
fewer registers per thread; some attempt was timed -> an untried neighbour of the fastest; no
timings -> rank by ptxas resources and the family's cost model (and say so).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kgen.arch import Arch
from kgen.author import costmodel
from kgen.author.families import GEMM, Family
from kgen.author.seen import Seen, noise_aware_order, read_attempt
from kgen.author.simt import SimtParams
from kgen.author.space import ALTERNATIVE_TEMPLATES
from kgen.loop.attempt import Attempt

Params = Any  # a configuration of one of the family's templates (frozen dataclass)
# A memory-bound op timed at this share of the measured copy bandwidth at every bench size is
# done: what is left is noise and the last few percent no parameter choice moves.
ROOFLINE_STOP = 0.9


@dataclass(frozen=True)
class Proposal:
    """The next configuration (None when the space is exhausted) and why it was chosen."""

    params: Params | None
    reason: str


@dataclass(frozen=True)
class Scope:
    """What is searched: one family's templates for one arch and dtype, and what has been seen."""

    family: Family
    arch: Arch
    dtype: str
    seen: tuple[Seen, ...]

    def neighbours(self, p: Params) -> list[Params]:
        return self.family.neighbours(p, self.arch, self.dtype)

    def registers(self, p: Params) -> int:
        return self.family.registers(p)

    def estimate(self, p: Params) -> Any:
        scale = costmodel.register_scale(self.seen, p, self.family.registers)
        return self.family.estimate(p, self.arch, self.dtype, scale)

    def rank(self, pool) -> list[Params]:
        """Best first by the cost model; stable, so ties keep the space's order."""
        return sorted(pool, key=lambda p: -self.estimate(p).score)

    def closest(self, origin: Params, pool) -> Params | None:
        """Among pool, an untried neighbour of origin if any (best by the model), else the best."""
        near = [p for p in self.neighbours(origin) if p in set(pool)]
        ranked = self.rank(near or pool)
        return ranked[0] if ranked else None


def propose(arch: Arch, dtype: str, history: tuple[Attempt, ...],
            family: Family = GEMM) -> Proposal:
    """The next configuration to try for this arch/dtype given everything tried so far."""
    seen = [s for a in history if (s := read_attempt(a, family)) is not None]
    tried = {s.params for s in seen}
    pool = [p for t in family.templates(arch, dtype) for p in family.space(arch, dtype, t)
            if p not in tried]
    if any(isinstance(s.params, SimtParams) and s.params.swz for s in seen):
        # the swizzled layout has been tried: its neighbours are part of the space from now on
        pool += [q for p in pool if isinstance(p, SimtParams)
                 and (q := replace(p, swz=1)) not in tried]
    if not pool:
        return Proposal(None, f"the search space is exhausted: all {len(tried)} valid "
                              "configurations of the builtin templates have been tried")
    first, why = family.first(arch, dtype)
    if not seen and first in pool:
        return Proposal(first, why)
    scope = Scope(family, arch, dtype, tuple(seen))
    last = seen[-1] if seen else None
    for rule in (_after_resource_error, _after_spill, _after_failure):
        if last is not None and (found := rule(last, pool, scope)) is not None:
            return found
    if any(s.ms is not None for s in seen) and (
            other := family.alternative(arch, dtype, {s.params.template for s in seen})):
        return Proposal(*other)
    stop = _at_roofline(seen) or _at_copy_bandwidth(seen)
    if stop is not None:
        return stop
    if last is not None and (found := _from_profile(last, pool, tried, scope)):
        return found
    if any(s.ms is not None for s in seen):
        return _toward_fastest(pool, scope)
    return _by_model(pool, scope)


def _after_resource_error(last: Seen, pool, scope: Scope) -> Proposal | None:
    if last.kind != "resource":
        return None
    smaller = [p for p in pool if type(p) is type(last.params)
               and p.smem_bytes < last.params.smem_bytes
               and scope.registers(p) <= scope.registers(last.params)]
    pick = scope.closest(last.params, smaller)
    if pick is None:
        return None
    return Proposal(pick, f"attempt {last.number} hit a resource limit at "
                          f"{last.params.choices} ({last.detail}); shrinking to "
                          f"{_diff(last.params, pick)}")


def _after_spill(last: Seen, pool, scope: Scope) -> Proposal | None:
    if last.kind != "spill":
        return None
    lighter = [p for p in pool if type(p) is type(last.params)
               and scope.registers(p) < scope.registers(last.params)]
    pick = scope.closest(last.params, lighter)
    if pick is None:
        return None
    return Proposal(pick, f"attempt {last.number} spilled {last.detail} at "
                          f"{last.params.choices}; trying fewer registers per thread: "
                          f"{_diff(last.params, pick)}")


def _after_failure(last: Seen, pool, scope: Scope) -> Proposal | None:
    if last.kind not in ("bad", "failed"):
        return None
    failed = [s.params for s in scope.seen if s.kind in ("bad", "failed")]
    counts = {t: sum(q.template == t for q in failed) for t in {p.template for p in failed}}
    bad_templates = {t for t, n in counts.items() if n >= 2}
    if last.kind == "bad" and last.detail.startswith("wrong") \
            and last.params.template in ALTERNATIVE_TEMPLATES:
        bad_templates.add(last.params.template)  # its accuracy, not this configuration
    near_bad = {n for p in failed for n in scope.neighbours(p)}
    # One failure: stay with the template (its other corners may be fine); two: leave it.
    away = [p for p in pool if p.template not in bad_templates and p not in near_bad]
    same = [p for p in away if p.template == last.params.template]
    choice = same or away or pool
    pick = scope.rank(choice)[0]
    where = ("another template" if pick.template != last.params.template
             else "a configuration not adjacent to any failed one")
    return Proposal(pick, f"attempt {last.number} failed ({last.detail}) at "
                          f"{last.params.choices}; moving away to {where}: {pick.choices}")


def _at_roofline(seen: list[Seen]) -> Proposal | None:
    """Stop when the fastest attempt's profile puts it at a roofline parameters cannot move, and
    its timings at the other bench sizes (the profile saw one) are at ROOFLINE_STOP of their
    roofline too."""
    timed = [s for s in seen if s.ms is not None]
    best = min(timed, key=lambda s: s.ms or 0.0) if timed else None
    p = best.profile if best is not None else None
    if best is None or p is None or p.error or not p.at_roofline \
            or p.bottleneck not in ("memory_dram", "compute_tensor"):
        return None
    if any(t.sizes != p.sizes and t.roofline_fraction is not None
           and t.roofline_fraction < ROOFLINE_STOP for t in best.timings):
        return None
    what = "DRAM-bound" if p.bottleneck == "memory_dram" else "tensor-pipe-bound"
    return Proposal(None, f"stopping: attempt {best.number} ({best.time} at "
                          f"{best.params.choices}) is {what} at the roofline by its profile "
                          f"({', '.join(p.evidence[:2])}); no tile, stage or warp choice can "
                          "beat that, only " + ("fewer bytes" if what == "DRAM-bound"
                                                else "less work"))


def _at_copy_bandwidth(seen: list[Seen]) -> Proposal | None:
    """Stop when a memory-bound op's fastest attempt moves its bytes at ROOFLINE_STOP or more of
    the measured copy bandwidth at every bench size (its timings say so; no profile needed)."""
    timed = noise_aware_order([s for s in seen if s.timing is not None])
    best = timed[0] if timed else None
    if best is None or not best.timings or any(
            t.bound != "memory" or (t.roofline_fraction or 0.0) < ROOFLINE_STOP
            for t in best.timings):
        return None
    shares = ", ".join(f"{t.roofline_fraction:.0%}" for t in best.timings)
    return Proposal(None, f"stopping: attempt {best.number} ({best.time} at "
                          f"{best.params.choices}) moves its bytes at {shares} of the measured "
                          f"copy bandwidth (memory-bound, at least {ROOFLINE_STOP:.0%} at each of "
                          f"the {len(best.timings)} bench size(s) timed); what is left is noise, "
                          "and only fewer bytes would help")


def _from_profile(last: Seen, pool, tried, scope: Scope) -> Proposal | None:
    """The newest attempt is the fastest and was profiled: answer its bottleneck."""
    p = last.profile
    fastest = min((s.ms for s in scope.seen if s.ms is not None), default=None)
    if p is None or p.error or last.ms is None or last.ms != fastest:
        return None
    if p.bank_conflicts and (twin := _conflict_free_twin(last.params)) is not None:
        if twin not in tried and not scope.family.problems(twin, scope.arch, scope.dtype):
            how = "swizzled" if isinstance(twin, SimtParams) else "padded"
            return Proposal(twin, f"attempt {last.number}'s profile shows shared-memory bank "
                                  f"conflicts ({p.conflict_ratio:.0%} of the worse side's "
                                  f"wavefronts): trying the {how} shared layout, "
                                  f"{twin.choices}")
    if p.limiter == "registers" and p.bottleneck.startswith("latency"):
        lighter = [q for q in pool if type(q) is type(last.params)
                   and _tile(q, scope) < _tile(last.params, scope)
                   and scope.registers(q) < scope.registers(last.params)]
        pick = scope.closest(last.params, lighter)
        if pick is not None:
            return Proposal(pick, f"attempt {last.number}'s profile: occupancy "
                                  f"{p.occupancy or 0:.0f}% of {p.occupancy_limit or 0:.0f}% "
                                  f"possible, limited by registers ({p.registers} per thread); "
                                  f"trying {_lighter(scope)}: {_diff(last.params, pick)}")
    return None


def _lighter(scope: Scope) -> str:
    return "a smaller thread tile" if scope.family.name == "gemm" else \
        "fewer values per thread"


def _conflict_free_twin(params: Params) -> Params | None:
    """The same configuration with the layout that avoids bank conflicts, if it has one."""
    if isinstance(params, SimtParams) and not params.swz:
        return replace(params, swz=1)
    if getattr(params, "template", "") == "transpose" and params.pad == 0:
        return replace(params, pad=1)
    return None


def _tile(p: Params, scope: Scope) -> int:
    """Outputs each thread accumulates: the thread tile (SIMT) or the warp tile's share (mma);
    for the memory-bound templates, the values a thread holds (its napkin registers)."""
    if isinstance(p, SimtParams):
        return p.tm * p.tn
    return p.acc_per_thread if hasattr(p, "acc_per_thread") else scope.registers(p)


def _toward_fastest(pool, scope: Scope) -> Proposal:
    timed = noise_aware_order([s for s in scope.seen if s.timing is not None])
    for best in timed:
        near = [p for p in scope.neighbours(best.params) if p in set(pool)]
        if near:
            pick = scope.rank(near)[0]
            rank = "the fastest" if best is timed[0] else "the fastest with untried neighbours"
            return Proposal(pick, f"attempt {best.number} is {rank} so far ({best.time} at "
                                  f"{best.params.choices}); trying its neighbour "
                                  f"{_diff(best.params, pick)}")
    pick = scope.rank(pool)[0]
    return Proposal(pick, "every neighbour of the timed configurations has been tried; taking the "
                          f"best untried by the {_model(scope)} model: {pick.choices}")


def _model(scope: Scope) -> str:
    return ("occupancy/intensity" if scope.family.name == "gemm"
            else "occupancy/bytes-in-flight")


def _by_model(pool, scope: Scope) -> Proposal:
    pick = scope.rank(pool)[0]
    what = ("an occupancy/arithmetic-intensity model" if scope.family.name == "gemm" else
            "an occupancy/bytes-in-flight model of the memory-bound template")
    return Proposal(pick, "no timings yet (no GPU has run these): ranking untried configurations "
                          f"by ptxas resources and {what}; {pick.choices} scores best "
                          f"({scope.estimate(pick).describe()})")


def _diff(a: Params, b: Params) -> str:
    """What changed between two configurations, e.g. `stages 3 -> 2`."""
    if type(a) is not type(b):
        return b.choices
    changes = [f"{k} {v} -> {getattr(b, k)}" for k, v in a.__dict__.items() if getattr(b, k) != v]
    return f"{', '.join(changes)} ({b.choices})"
