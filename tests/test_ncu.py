"""Nsight Compute output -> Profile without a GPU: recorded `--csv --page raw` logs (the format of
ncu-feedback.md §6) through the parser and the bottleneck rule, and the profile check's command
line and error handling with a stand-in for the wrapped worker."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from kgen.contract import Contract, Launch
from kgen.findings import Profile
from kgen.gpu import ncu, profile, wrapped
from kgen.ops import load_op
from kgen.wire import EvalRequest

DATA = Path(__file__).parent / "data" / "ncu"
SPEC = load_op("gemm")
SIZES = {"M": 4096, "N": 4096, "K": 4096}


def summary(name: str) -> Profile:
    (row,) = ncu.parse_csv((DATA / name).read_text())
    return ncu.summarize(row, SIZES)


def test_rows_are_read_by_column_name_with_separators_and_prof_lines_skipped():
    (row,) = ncu.parse_csv((DATA / "copy_dram.csv").read_text())
    assert row["Kernel Name"] == "copy_f32" and row["Grid Size"] == "(1048576, 1, 1)"
    assert ncu.number(row["dram__bytes_read.sum"]) == 1_073_741_824
    assert ncu.number("n/a") is None and ncu.number(None) is None


def test_a_copy_is_dram_bound_at_the_roofline():
    p = summary("copy_dram.csv")
    assert (p.bottleneck, p.at_roofline) == ("memory_dram", True)
    assert p.evidence[0] == "DRAM 88% of peak" and p.time_us == pytest.approx(499.712)
    assert p.dram_bytes == 2 * 1_073_741_824 and not p.missing
    text = p.describe()
    assert "memory_dram at the roofline" in text and "only fewer bytes" in text
    assert "top stalls: long_scoreboard 412%" in text


def test_dram_below_its_roof_points_at_bytes_in_flight_not_fewer_bytes():
    """On an H100 a one-float-per-thread copy moved 70% of DRAM peak, long_scoreboard 87% of
    stalls: the class is memory_dram by the rule, but the lever is more loads in flight."""
    below = Profile(bottleneck="memory_dram", at_roofline=False, stalls=(("long_scoreboard", 87),))
    assert "in flight" in below.hint() and "below its roof" in below.hint()
    at_roof = Profile(bottleneck="memory_dram", at_roofline=True)
    assert at_roof.hint().startswith("DRAM bandwidth is the limit: only fewer bytes")


def test_a_tensor_core_gemm_is_compute_bound_not_memory_bound():
    p = summary("tensor_gemm.csv")
    assert (p.bottleneck, p.at_roofline) == ("compute_tensor", True)
    assert p.evidence == ("tensor pipe 97%", "DRAM 19%")
    assert p.limiter == "registers" and p.occupancy_limit == 18.75
    assert not p.bank_conflicts  # 202 K store conflicts against 8.5 M store wavefronts


def test_a_tiny_grid_is_latency_bound_with_its_grid_named():
    p = summary("small_grid.csv")
    assert p.bottleneck == "latency_small_grid"
    assert p.evidence[:2] == ("grid of 16 blocks for 132 SMs", "0.02 waves")
    assert "persistent grid" in p.hint()


def test_bank_conflicts_are_named_with_their_share_of_wavefronts():
    p = summary("bank_conflicts.csv")
    assert p.bank_conflicts and p.conflict_ratio == pytest.approx(4_063_232 / 4_194_304)
    assert p.bottleneck == "latency_stalls" and p.stalls[0] == ("mio_throttle", 161.0)
    text = p.describe()
    assert ("bank conflicts: 4.1M on loads, 127,008 on stores (worse side: 97% of its "
            "wavefronts); significant: pad or swizzle") in text
    assert "fix bank conflicts" in text


def test_occupancy_limited_by_registers_and_a_missing_metric_is_listed():
    p = summary("register_limited.csv")
    assert p.bottleneck == "latency_occupancy" and p.limiter == "registers"
    assert "occupancy 21% of 50% possible" in p.evidence
    assert p.missing == ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",)
    assert p.tensor is None and "not measured: sm__pipe_tensor" in p.describe()


def test_profile_survives_json():
    p = summary("bank_conflicts.csv")
    assert Profile.from_json(p.to_json()) == p


def _request(launches=("gemm_k",)) -> EvalRequest:
    contract = Contract("gemm", "float32", tuple(
        Launch(k, ("cdiv(N,16)", "cdiv(M,16)", "1"), ("16", "16", "1"), "0",
               ("A", "B", "C", "M", "N", "K"), 3) for k in launches))
    return EvalRequest(SPEC, contract, "float32", SPEC.test_sizes, (SIZES,), 1)


def test_command_measures_the_candidates_kernels_inside_the_workers_range():
    cmd = profile.command("/usr/bin/ncu", _request(("pass1", "pass2")).contract)
    assert cmd[:5] == ["/usr/bin/ncu", "--target-processes", "all", "--clock-control", "none"]
    # The worker brackets the measured run with cudaProfilerStart/Stop (probe._profile).
    assert cmd[cmd.index("--profile-from-start") + 1] == "off"
    assert cmd[cmd.index("--kernel-name") + 1] == "regex:^(pass1|pass2)$"
    assert set(cmd[cmd.index("--metrics") + 1].split(",")) == set(ncu.METRICS)
    assert "--csv" in cmd and cmd[cmd.index("--page") + 1] == "raw"


def test_command_counts_no_launches_whatever_the_launch_lines_when():
    """Counting launches made ncu skip past the one that ran when kgen counted a line that did
    not run ("No kernels were profiled" on an H100 for the wgmma default, whose two lines differ
    by N's alignment), and kgen cannot decide a `when` over the SM count: the range needs
    neither, so no count is in the command."""
    line = Launch("gemm_k", ("1",), ("128",), "0", ("A", "B", "C", "M", "N", "K"), 3)
    contract = Contract("gemm", "float32", (replace(line, when="SMS > 100", kernel="gemm_k_sk"),
                                            replace(line, when="SMS <= 100")))
    cmd = profile.command("/usr/bin/ncu", contract)
    assert "--launch-skip" not in cmd and "--launch-count" not in cmd
    assert cmd[cmd.index("--kernel-name") + 1] == "regex:^(gemm_k|gemm_k_sk)$"


def test_two_launches_profile_the_longest_and_list_the_other():
    run = wrapped.Wrapped((DATA / "two_launches.csv").read_text(), "", {"launched": True})
    p = profile.read(run, _request(("softmax_max", "softmax_norm")))
    assert p.kernel == "softmax_norm" and p.bottleneck == "memory_dram"
    assert p.others and p.others[0].startswith("softmax_max: 120.0 us, memory_dram")


@pytest.fixture
def fake_ncu(monkeypatch, tmp_path):
    exe = tmp_path / "ncu"
    exe.write_text("#!/bin/sh\n")
    monkeypatch.setattr(profile.toolkit, "tool", lambda name: exe if name == "ncu" else None)
    monkeypatch.setattr(profile, "_unusable", None)
    calls = []

    def run(log, output="", probe=None):
        def fake(tool, request, binary, mode, **kw):
            calls.append((tool, mode))
            return wrapped.Wrapped(log, output, probe or {})
        monkeypatch.setattr(profile.wrapped, "run", fake)
        return calls
    return run


def test_no_permission_is_reported_once_and_remembered(fake_ncu):
    calls = fake_ncu((DATA / "no_permission.txt").read_text())
    first = profile.collect(_request(), b"cubin")
    assert "ERR_NVGPUCTRPERM" in first.error
    assert "NVreg_RestrictProfilingToAdminUsers" in first.error
    again = profile.collect(_request(), b"cubin")
    assert again.error == first.error and len(calls) == 1  # not tried a second time
    assert again.describe().startswith("profile  none: no permission")


def test_nothing_profiled_says_why(fake_ncu):
    fake_ncu("==WARNING== No kernels were profiled.\n", probe={"error": "crash: boom"})
    p = profile.collect(_request(), b"cubin")
    assert "no launch of the candidate" in p.error and "No kernels were profiled" in p.error
    assert "worker: crash: boom" in p.error


def test_a_driver_error_keeps_its_detail_and_drops_the_clock_note(fake_ncu):
    """What ncu said on an H100 when a second profile ran at once (2026-12-05, the s18 logs):
    the clock note, said on every run, used to take one of the two lines kept and hid why."""
    fake_ncu((DATA / "driver_busy.txt").read_text())
    p = profile.collect(_request(), b"cubin")
    assert "GPU clocks" not in p.error
    assert "An error was reported by the driver:; ==ERROR== Profiling failed because a driver " \
           "resource was unavailable" in p.error
    assert p.error.endswith('Failed to profile "scale_copy_vec" in process 26')


def test_profiles_run_one_at_a_time(fake_ncu, monkeypatch, tmp_path):
    """Four threads profile at once; the stand-in for ncu counts how many run together."""
    monkeypatch.setattr(profile, "PROFILE_LOCK", tmp_path / "ncu.lock")
    log = (DATA / "copy_dram.csv").read_text()
    fake_ncu(log)
    running, most = [0], [0]
    lock = threading.Lock()

    def slow(tool, request, binary, mode, **kw):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.2)
        with lock:
            running[0] -= 1
        return wrapped.Wrapped(log, "", {})
    monkeypatch.setattr(profile.wrapped, "run", slow)
    with ThreadPoolExecutor(4) as pool:
        found = list(pool.map(lambda _: profile.collect(_request(("copy_f32",)), b"cubin"),
                              range(4)))
    assert [p.kernel for p in found] == ["copy_f32"] * 4 and most[0] == 1
    # A profile's own time (0.2 s here) leaves out its wait for the lock: the last one waited
    # for three (about 0.6 s), which its own time would otherwise include.
    seconds, waits = [p.seconds for p in found], [p.waited_s for p in found]
    assert min(seconds) >= 0.2 and max(seconds) < 0.55 <= max(waits), (seconds, waits)


def test_the_profile_lock_serves_with_a_file_of_another_user_or_none_at_all(monkeypatch,
                                                                          tmp_path):
    lock = tmp_path / "ncu.lock"
    monkeypatch.setattr(profile, "PROFILE_LOCK", lock)
    with profile.one_profile_at_a_time():  # missing: created, world-readable
        assert lock.stat().st_mode & 0o777 == 0o644
    lock.chmod(0o444)  # another user's, as this user sees it: read-only serves
    with profile.one_profile_at_a_time():
        pass
    real_open = profile.os.open

    def refused(path, flags, *mode):
        if str(path) == str(lock):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *mode)
    monkeypatch.setattr(profile.os, "open", refused)
    with profile.one_profile_at_a_time():  # unreadable: this user's own lock instead
        assert (tmp_path / f"ncu-{profile.os.getuid()}.lock").exists()
    monkeypatch.setattr(profile, "PROFILE_LOCK", tmp_path / "missing" / "ncu.lock")
    with profile.one_profile_at_a_time():  # no lock to be had: the profile still runs
        pass


def test_missing_ncu_is_a_record_not_an_error(monkeypatch):
    monkeypatch.setattr(profile.toolkit, "tool", lambda name: None)
    monkeypatch.delenv("KGEN_NCU", raising=False)
    assert profile.collect(_request(), b"cubin").error.startswith(
        "Nsight Compute: ncu not found on PATH, beside nvcc")
