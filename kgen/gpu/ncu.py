"""Nsight Compute's raw CSV -> a Profile: the curated metrics (names verified on an H200 with ncu
2025.3, ncu-feedback.md §4), the CSV quirks (§6: `==PROF==` lines, a units row, thousands
separators, a column per metric only when it is valid) and the bottleneck rule (§8), which checks
the tensor pipe before memory so a GEMM's shared-memory traffic is not read as memory-bound."""

from __future__ import annotations

import csv
from collections.abc import Mapping

from kgen.findings import Profile

STALLS = ("long_scoreboard", "barrier", "mio_throttle", "short_scoreboard", "wait",
          "math_pipe_throttle", "lg_throttle")
_STALL = "smsp__warp_issue_stalled_{}_per_warp_active.pct"
M = {  # our name -> ncu metric
    "time_ns": "gpu__time_duration.sum",
    "sm": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "mem": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_read": "dram__bytes_read.sum",
    "dram_write": "dram__bytes_write.sum",
    "l2_hit": "lts__t_sector_hit_rate.pct",
    "l1_hit": "l1tex__t_sector_hit_rate.pct",
    "l1": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "l2": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "occ": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "occ_max": "sm__maximum_warps_per_active_cycle_pct",
    "tensor": "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "conf_ld": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "conf_st": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "wave_ld": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "wave_st": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "issue": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "grid": "launch__grid_size",
    "regs": "launch__registers_per_thread",
    "waves": "launch__waves_per_multiprocessor",
    "lim_registers": "launch__occupancy_limit_registers",
    "lim_shared memory": "launch__occupancy_limit_shared_mem",
    "lim_warps": "launch__occupancy_limit_warps",
    "lim_blocks": "launch__occupancy_limit_blocks",
    **{f"stall_{s}": _STALL.format(s) for s in STALLS},
}
METRICS = tuple(M.values())
SMS = "device__attribute_multiprocessor_count"  # a free column of --page raw


def parse_csv(text: str) -> list[dict[str, str]]:
    """One dict per profiled launch, keyed by column name (never by position)."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        return []
    rows = list(csv.reader(lines[start:]))
    header, data = rows[0], rows[2:]  # rows[1] holds the units
    return [dict(zip(header, row, strict=False)) for row in data if len(row) >= len(header) // 2]


def number(text: str | None) -> float | None:
    """`"1,370,848"` -> 1370848.0; "n/a", "" and anything else -> None."""
    if text is None:
        return None
    try:
        return float(text.replace(",", "").strip())
    except ValueError:
        return None


def values(row: Mapping[str, str]) -> tuple[dict[str, float | None], tuple[str, ...]]:
    """Our names -> numbers, and the metrics ncu gave no column for (invalid here)."""
    out = {name: number(row.get(metric)) for name, metric in M.items()}
    missing = tuple(metric for metric in M.values() if metric not in row)
    out["sms"] = number(row.get(SMS))
    return out, missing


def summarize(row: Mapping[str, str], sizes: dict[str, int], ideal_bytes: int | None = None
              ) -> Profile:
    """One launch's row -> Profile, with its bottleneck class and the numbers behind it."""
    v, missing = values(row)
    cls, at_roof, evidence = classify(v)
    # Conflicts are the extra wavefronts: conflicts / wavefronts is 0 without, 1 - 1/n n-way.
    # The worse of loads and stores: a few conflicted stores hide in a load-heavy total.
    sides = [(c or 0.0) / w for c, w in ((v["conf_ld"], v["wave_ld"]), (v["conf_st"], v["wave_st"]))
             if w]
    ratio = max(sides) if sides else None
    dram_bytes = (v["dram_read"] or 0) + (v["dram_write"] or 0) if v["dram_read"] is not None \
        else None
    if cls == "memory_dram" and dram_bytes and ideal_bytes:
        evidence += (f"DRAM traffic {dram_bytes / ideal_bytes:.1f}x the minimum bytes",)
    return Profile(
        kernel=row.get("Kernel Name", "?"), sizes=dict(sizes),
        time_us=v["time_ns"] / 1e3 if v["time_ns"] is not None else None,
        grid=row.get("Grid Size", ""), block=row.get("Block Size", ""),
        registers=int(v["regs"]) if v["regs"] is not None else None,
        sol_compute=v["sm"], sol_memory=v["mem"], dram=v["dram"], dram_bytes=dram_bytes,
        l1_throughput=v["l1"], l2_throughput=v["l2"], l1_hit=v["l1_hit"], l2_hit=v["l2_hit"],
        occupancy=v["occ"], occupancy_limit=v["occ_max"], limiter=limiter(v),
        waves=v["waves"], conflicts_ld=v["conf_ld"], conflicts_st=v["conf_st"],
        conflict_ratio=ratio, tensor=v["tensor"], issue=v["issue"], stalls=top_stalls(v),
        bottleneck=cls, at_roofline=at_roof, evidence=evidence, missing=missing)


def classify(v: Mapping[str, float | None]) -> tuple[str, bool, tuple[str, ...]]:
    """(class, at the roofline, evidence): ncu-feedback.md §8's rule, in that order."""
    sm, mem, dram, tc = (v.get(k) or 0.0 for k in ("sm", "mem", "dram", "tensor"))
    occ, occ_max = v.get("occ") or 0.0, v.get("occ_max") or 100.0
    grid, waves, sms = v.get("grid"), v.get("waves"), v.get("sms") or 0
    if v.get("sm") is None and v.get("mem") is None:
        return "unknown", False, ("the speed-of-light metrics were not measured",)
    at_roof = max(sm, mem) >= 95
    ev: tuple[str, ...]
    if tc >= 60:
        cls, ev = "compute_tensor", (f"tensor pipe {tc:.0f}%", f"DRAM {dram:.0f}%")
        at_roof = at_roof or tc >= 90
    elif dram >= 60 and dram >= sm:
        cls, ev = "memory_dram", (f"DRAM {dram:.0f}% of peak", f"compute {sm:.0f}%")
        at_roof = at_roof or dram >= 85
    elif max(sm, mem) >= 60:
        cls = "memory_onchip" if mem > sm else "compute_alu"
        ev = ((f"memory {mem:.0f}% of peak ({_level(v)})", f"compute {sm:.0f}%",
               f"DRAM {dram:.0f}%") if mem > sm else
              (f"compute {sm:.0f}% of peak", f"memory {mem:.0f}%", f"tensor pipe {tc:.0f}%"))
    elif (grid is not None and sms and grid < sms) or (waves is not None and waves < 0.5):
        cls = "latency_small_grid"
        ev = (f"grid of {_n(grid)} blocks" + (f" for {sms:.0f} SMs" if sms else ""),
              f"{waves:.2g} waves" if waves is not None else "waves ?",
              f"compute {sm:.0f}%, memory {mem:.0f}%")
    elif occ < 0.6 * occ_max:
        cls = "latency_occupancy"
        ev = (f"occupancy {occ:.0f}% of {occ_max:.0f}% possible",
              f"limited by {limiter(v) or '?'}", f"compute {sm:.0f}%, memory {mem:.0f}%")
    else:
        stalls = top_stalls(v)
        cls = "latency_stalls"
        ev = ((f"top stall {stalls[0][0]} {stalls[0][1]:.0f}%",) if stalls else ()) + (
            f"compute {sm:.0f}%, memory {mem:.0f}%", f"occupancy {occ:.0f}%")
    return cls, at_roof, ev


def _n(x: float | None) -> str:
    return "?" if x is None else f"{x:.0f}"


def _level(v: Mapping[str, float | None]) -> str:
    """Which on-chip level drives memory SOL: `L1 92%` or `L2 71%`."""
    l1, l2 = v.get("l1"), v.get("l2")
    if l1 is None and l2 is None:
        return "level not measured"
    if (l1 or 0) >= (l2 or 0):
        return f"L1/shared {l1:.0f}%"
    return f"L2 {l2:.0f}%"


def limiter(v: Mapping[str, float | None]) -> str:
    """What caps theoretical occupancy: the launch__occupancy_limit_* with the fewest blocks
    (registers first on a tie), or "" when occupancy is not limited below 100%."""
    if (v.get("occ_max") or 100.0) >= 99.9:
        return ""
    limits = [(v.get(f"lim_{n}"), n) for n in ("registers", "shared memory", "warps", "blocks")]
    known = [(lim, n) for lim, n in limits if lim is not None]
    return min(known, key=lambda x: x[0])[1] if known else ""


def top_stalls(v: Mapping[str, float | None], most: int = 3) -> tuple[tuple[str, float], ...]:
    found = [(s, v.get(f"stall_{s}")) for s in STALLS]
    ranked = sorted(((s, x) for s, x in found if x), key=lambda p: -p[1])
    return tuple((s, round(x, 1)) for s, x in ranked[:most])
