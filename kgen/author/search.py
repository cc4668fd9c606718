"""The builtin author's search: pick the next untried gemm configuration from the history, with a
stated reason. Deterministic (ties break by the space's fixed order), never random.

Rules, in order: nothing tried yet -> the arch/dtype default; the last attempt hit a resource
limit -> shrink; it spilled -> fewer registers; it was wrong/crashed -> move away from it; the
fastest is at the roofline by its profile (DRAM or tensor pipe) -> stop and say so; the last
attempt is the fastest and its profile shows bank conflicts -> the swizzled shared layout, or
occupancy limited by registers -> a smaller thread tile; some attempt was timed -> an untried
neighbour of the fastest; no timings -> rank by ptxas resources and an occupancy/intensity model
(and say so).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kgen.arch import Arch
from kgen.author import costmodel
from kgen.author.simt import SimtParams
from kgen.author.space import (
    Params,
    default,
    estimated_registers,
    neighbours,
    parse_choices,
    problems,
    space,
    templates_for,
    wgmma_ready,
)
from kgen.findings import Profile
from kgen.loop.attempt import Attempt
from kgen.verdict import Timing, Verdict


@dataclass(frozen=True)
class Proposal:
    """The next configuration (None when the space is exhausted) and why it was chosen."""

    params: Params | None
    reason: str


@dataclass(frozen=True)
class Seen:
    """One past attempt of ours, as the search reads it."""

    number: int
    params: Params
    kind: str  # resource | spill | bad | timed | compiled | failed
    detail: str = ""
    ms: float | None = None
    registers: int | None = None
    timing: Timing | None = None
    profile: Profile | None = None  # Nsight Compute's summary, where it ran


def propose(arch: Arch, dtype: str, history: tuple[Attempt, ...]) -> Proposal:
    """The next configuration to try for this arch/dtype given everything tried so far."""
    seen = [s for a in history if (s := read_attempt(a)) is not None]
    tried = {s.params for s in seen}
    pool = [p for t in templates_for(arch, dtype) for p in space(arch, dtype, t) if p not in tried]
    if any(isinstance(s.params, SimtParams) and s.params.swz for s in seen):
        # the swizzled layout has been tried: its neighbours are part of the space from now on
        pool += [q for p in pool if isinstance(p, SimtParams)
                 and (q := replace(p, swz=1)) not in tried]
    if not pool:
        return Proposal(None, f"the search space is exhausted: all {len(tried)} valid "
                              "configurations of the builtin templates have been tried")
    first = default(arch, dtype)
    if not seen and first in pool:
        return Proposal(first, f"first candidate: the default for {dtype} on {arch.name}, the "
                               "best measured starting point that fits its limits "
                               f"({first.choices}: {first.threads} threads, "
                               f"{first.smem_bytes} bytes shared memory){_wgmma_note(arch, dtype)}")
    last = seen[-1] if seen else None
    for rule in (_after_resource_error, _after_spill, _after_failure):
        if last is not None and (found := rule(last, seen, pool, arch, dtype)) is not None:
            return found
    stop = _at_roofline(seen)
    if stop is not None:
        return stop
    if last is not None and (found := _from_profile(last, seen, pool, tried, arch, dtype)):
        return found
    if any(s.ms is not None for s in seen):
        return _toward_fastest(seen, pool, arch, dtype)
    return _by_model(seen, pool, arch, dtype)


def _wgmma_note(arch: Arch, dtype: str) -> str:
    """On plain sm_90, say why the Hopper template is not used."""
    if arch.major_minor == 90 and not wgmma_ready(arch) and "mma" in templates_for(arch, dtype):
        return ("; wgmma (Hopper's fastest tensor-core path) needs the arch-specific target: "
                "pass --arch sm_90a to use it, sm_90 keeps mma.sync")
    return ""


def read_attempt(a: Attempt) -> Seen | None:
    """Classify one attempt; None when it is not one of the builtin templates' configurations."""
    params = parse_choices(a.choices) or (parse_choices(a.source or "") if a.source else None)
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
    if a.best_ms is not None and ran is not None:
        return Seen(a.number, params, "timed", ms=a.best_ms, registers=regs,
                    timing=ran.timings[0], profile=ran.profile)
    return Seen(a.number, params, "compiled", registers=regs)


def _is_resource(text: str) -> bool:
    text = text.lower()
    return any(w in text for w in ("too much shared data", "shared memory", "too many resources",
                                   "registers", "uses too much"))


def _after_resource_error(last: Seen, seen, pool, arch, dtype) -> Proposal | None:
    if last.kind != "resource":
        return None
    smaller = [p for p in pool if type(p) is type(last.params)
               and p.smem_bytes < last.params.smem_bytes
               and estimated_registers(p) <= estimated_registers(last.params)]
    pick = _closest(last.params, smaller, seen, arch, dtype)
    if pick is None:
        return None
    return Proposal(pick, f"attempt {last.number} hit a resource limit at "
                          f"{last.params.choices} ({last.detail}); shrinking to "
                          f"{_diff(last.params, pick)}")


def _after_spill(last: Seen, seen, pool, arch, dtype) -> Proposal | None:
    if last.kind != "spill":
        return None
    lighter = [p for p in pool if type(p) is type(last.params)
               and estimated_registers(p) < estimated_registers(last.params)]
    pick = _closest(last.params, lighter, seen, arch, dtype)
    if pick is None:
        return None
    return Proposal(pick, f"attempt {last.number} spilled {last.detail} at "
                          f"{last.params.choices}; trying fewer registers per thread: "
                          f"{_diff(last.params, pick)}")


def _after_failure(last: Seen, seen, pool, arch, dtype) -> Proposal | None:
    if last.kind not in ("bad", "failed"):
        return None
    failed = [s.params for s in seen if s.kind in ("bad", "failed")]
    counts = {t: sum(q.template == t for q in failed) for t in {p.template for p in failed}}
    bad_templates = {t for t, n in counts.items() if n >= 2}
    near_bad = {n for p in failed for n in neighbours(p, arch, dtype)}
    # One failure: stay with the template (its other corners may be fine); two: leave it.
    away = [p for p in pool if p.template not in bad_templates and p not in near_bad]
    same = [p for p in away if p.template == last.params.template]
    choice = same or away or pool
    pick = _rank(choice, seen, arch, dtype)[0]
    where = ("another template" if pick.template != last.params.template
             else "a configuration not adjacent to any failed one")
    return Proposal(pick, f"attempt {last.number} failed ({last.detail}) at "
                          f"{last.params.choices}; moving away to {where}: {pick.choices}")


def _at_roofline(seen: list[Seen]) -> Proposal | None:
    """Stop when the fastest attempt's profile puts it at a roofline parameters cannot move."""
    timed = [s for s in seen if s.ms is not None]
    best = min(timed, key=lambda s: s.ms or 0.0) if timed else None
    p = best.profile if best is not None else None
    if best is None or p is None or p.error or not p.at_roofline \
            or p.bottleneck not in ("memory_dram", "compute_tensor"):
        return None
    what = "DRAM-bound" if p.bottleneck == "memory_dram" else "tensor-pipe-bound"
    return Proposal(None, f"stopping: attempt {best.number} ({best.ms:.3f} ms at "
                          f"{best.params.choices}) is {what} at the roofline by its profile "
                          f"({', '.join(p.evidence[:2])}); no tile, stage or warp choice can "
                          "beat that, only " + ("fewer bytes" if what == "DRAM-bound"
                                                else "less work"))


def _from_profile(last: Seen, seen, pool, tried, arch, dtype) -> Proposal | None:
    """The newest attempt is the fastest and was profiled: answer its bottleneck."""
    p = last.profile
    fastest = min((s.ms for s in seen if s.ms is not None), default=None)
    if p is None or p.error or last.ms is None or last.ms != fastest:
        return None
    if p.bank_conflicts and isinstance(last.params, SimtParams) and not last.params.swz:
        twin = replace(last.params, swz=1)
        if twin not in tried and not problems(twin, arch, dtype):
            return Proposal(twin, f"attempt {last.number}'s profile shows shared-memory bank "
                                  f"conflicts ({p.conflict_ratio:.0%} of the worse side's "
                                  "wavefronts): trying the swizzled shared layout, "
                                  f"{twin.choices}")
    if p.limiter == "registers" and p.bottleneck.startswith("latency"):
        lighter = [q for q in pool if type(q) is type(last.params) and _tile(q) < _tile(last.params)
                   and estimated_registers(q) < estimated_registers(last.params)]
        pick = _closest(last.params, lighter, seen, arch, dtype)
        if pick is not None:
            return Proposal(pick, f"attempt {last.number}'s profile: occupancy "
                                  f"{p.occupancy or 0:.0f}% of {p.occupancy_limit or 0:.0f}% "
                                  f"possible, limited by registers ({p.registers} per thread); "
                                  f"trying a smaller thread tile: {_diff(last.params, pick)}")
    return None


def _tile(p: Params) -> int:
    """Outputs each thread accumulates: the thread tile (SIMT) or the warp tile's share (mma)."""
    return p.tm * p.tn if isinstance(p, SimtParams) else p.acc_per_thread


def _toward_fastest(seen, pool, arch, dtype) -> Proposal:
    timed = _noise_aware_order([s for s in seen if s.timing is not None])
    for best in timed:
        near = [p for p in neighbours(best.params, arch, dtype) if p in set(pool)]
        if near:
            pick = _rank(near, seen, arch, dtype)[0]
            rank = "the fastest" if best is timed[0] else "the fastest with untried neighbours"
            return Proposal(pick, f"attempt {best.number} is {rank} so far ({best.ms:.3f} ms at "
                                  f"{best.params.choices}); trying its neighbour "
                                  f"{_diff(best.params, pick)}")
    pick = _rank(pool, seen, arch, dtype)[0]
    return Proposal(pick, "every neighbour of the timed configurations has been tried; taking the "
                          f"best untried by the occupancy/intensity model: {pick.choices}")


def _noise_aware_order(timed: list[Seen]) -> list[Seen]:
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


def _by_model(seen, pool, arch, dtype) -> Proposal:
    ranked = _rank(pool, seen, arch, dtype)
    pick = ranked[0]
    est = costmodel.estimate(pick, arch, costmodel.register_scale(seen, pick))
    return Proposal(pick, "no timings yet (no GPU has run these): ranking untried configurations "
                          "by ptxas resources and an occupancy/arithmetic-intensity model; "
                          f"{pick.choices} scores best ({est.describe()})")


def _rank(pool, seen, arch, dtype) -> list[Params]:
    """Best first by the cost model; stable, so ties keep the space's order."""
    return sorted(pool, key=lambda p: -costmodel.estimate(
        p, arch, costmodel.register_scale(seen, p)).score)


def _closest(origin: Params, pool, seen, arch, dtype) -> Params | None:
    """Among pool, an untried neighbour of origin if any (best by the model), else the best."""
    near = [p for p in neighbours(origin, arch, dtype) if p in set(pool)]
    ranked = _rank(near or pool, seen, arch, dtype)
    return ranked[0] if ranked else None


def _diff(a: Params, b: Params) -> str:
    """What changed between two configurations, e.g. `stages 3 -> 2`."""
    if type(a) is not type(b):
        return b.choices
    changes = [f"{k} {v} -> {getattr(b, k)}" for k, v in a.__dict__.items() if getattr(b, k) != v]
    return f"{', '.join(changes)} ({b.choices})"
