"""The warm-worker pool with stand-in serving workers (tests/data/standins/serve_worker.py): warm
reuse, replacement after a crash, a timeout, an exit or N candidates, the canary after a failure,
GPU pinning, several workers kept busy at once; and the GPU listing. No GPU needed."""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from kgen.arch import local_gpu
from kgen.errors import EnvironmentProblem
from kgen.gpu import devices
from kgen.gpu.devices import Gpu, Slot
from kgen.gpu.pool import WorkerPool
from kgen.loop.candidate import parse_contract
from kgen.ops import load_op
from kgen.process import bwrap_path
from kgen.wire import EvalRequest

DATA = Path(__file__).parent / "data"
STANDIN = [sys.executable, str(DATA / "standins" / "serve_worker.py")]
SPEC = load_op("gemm")
CONTRACT, _ = parse_contract((DATA / "cheats" / "correct_tiled.cu").read_text(), SPEC)
REQUEST = EvalRequest(SPEC, CONTRACT, "float32", SPEC.test_sizes[:1], (), 7)


@pytest.fixture
def logs(tmp_path):
    return tmp_path


def pool(logs: Path, count: int = 1, *flags: str, **options) -> WorkerPool:
    return WorkerPool([Slot(None, k) for k in range(count)], unsafe=True,
                      command=[*STANDIN, str(logs), *flags], **options)


def noted(logs: Path, number: int) -> dict:
    """What stand-in process `number` noted at start (its pinning, the peaks it was handed)."""
    path = logs / f"{number}.json"
    deadline = time.monotonic() + 20
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return json.loads(path.read_text())


def judge(p: WorkerPool, what: str, timeout_s: float = 20.0):
    return p.run(REQUEST, what.encode(), timeout_s=timeout_s)


def pid(result) -> int:
    return int(result.message.split("pid=")[1].split()[0])


def _alive(number: int) -> bool:
    try:
        return Path(f"/proc/{number}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def test_one_warm_worker_serves_candidate_after_candidate(logs):
    with pool(logs) as p:
        results = [judge(p, "pass"), judge(p, "wrong"), judge(p, "pass")]
        assert [r.verdict for r in results] == ["pass", "wrong", "pass"]
        assert len({pid(r) for r in results}) == 1  # the same process each time
        assert [r.message.split("served=")[1] for r in results] == ["1", "2", "3"]
        assert results[0].extra["worker"] == "w0" and results[2].extra["warm"] is True
        assert "UNSAFE" in results[0].note and "peaks" not in results[0].extra
        (stats,) = p.busy()
        assert stats["candidates"] == 3 and stats["restarts"] == 0 and stats["busy_s"] > 0
        assert stats["restarted_for"] == {}


def test_a_crash_replaces_the_worker_and_the_gpu_is_checked_on_its_successor(logs):
    with pool(logs) as p:
        first = judge(p, "pass")
        crashed = judge(p, "crash")
        assert crashed.verdict == "crash"
        assert "GPU healthy after the failure" in crashed.extra["canary"]
        after = judge(p, "pass")
        assert after.verdict == "pass" and pid(after) != pid(first)
        assert not _alive(pid(first))
        assert p.busy()[0]["restarts"] == 1
        assert p.busy()[0]["restarted_for"] == {"crash verdict": 1}


def test_a_hung_candidate_is_a_timeout_and_its_worker_is_killed(logs):
    with pool(logs) as p:
        first = judge(p, "pass")
        start = time.monotonic()
        hung = judge(p, "hang", timeout_s=1.0)
        assert hung.verdict == "timeout" and "process group" in hung.message
        assert time.monotonic() - start < 15
        assert not _alive(pid(first))
        assert "canary" in hung.extra
        assert judge(p, "pass").verdict == "pass"
        assert p.busy()[0]["restarted_for"] == {"timeout verdict": 1}


def test_a_worker_that_exits_is_a_crash_with_its_last_words_and_is_replaced(logs):
    with pool(logs) as p:
        died = judge(p, "die")
        assert died.verdict == "crash" and "exited with code 3" in died.message
        assert "the stand-in dies" in died.message
        assert judge(p, "pass").verdict == "pass"
        assert p.busy()[0]["restarts"] == 1


def test_a_worker_that_ends_between_candidates_is_replaced_and_the_reason_counted(logs):
    with pool(logs) as p:
        first = judge(p, "quit")  # answers, then exits 0.5 s later
        assert first.verdict == "pass"
        time.sleep(1.5)
        after = judge(p, "pass")
        assert after.verdict == "pass" and pid(after) != pid(first)
        # how it ended is the only trace of why: its exit status and last words
        assert p.busy()[0]["restarted_for"] == {
            "exited between candidates (status 0: the stand-in quits)": 1}


def judged_on_threads_that_end(p: WorkerPool, count: int) -> list:
    """`count` passing candidates, each judged on a thread of its own that ends before the next
    (as a round's candidates are); the pool starts a worker on the first one's thread."""
    results = []
    for _ in range(count):
        round_thread = threading.Thread(target=lambda: results.append(judge(p, "pass")))
        round_thread.start()
        round_thread.join()
        time.sleep(0.5)  # a death signal is sent as the thread ends; give it time to land
    return results


def test_workers_started_from_a_short_lived_thread_outlive_it(logs):
    # bubblewrap's --die-with-parent kills the sandbox when the *thread* that started it ends;
    # a round's candidates are judged on threads that end with the round, so the pool must
    # start its workers from a thread of its own (seen on the H100 as "exited between
    # candidates (status -9)" after every round with two candidates)
    with pool(logs, 1, "--die-with-parent") as p:
        results = judged_on_threads_that_end(p, 2)
        assert [r.verdict for r in results] == ["pass", "pass"]
        assert pid(results[0]) == pid(results[1]) and _alive(pid(results[1]))
        assert p.busy()[0]["restarts"] == 0


@pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not usable here")
def test_a_bubblewrapped_worker_outlives_the_thread_that_started_it():
    # The same with the real sandbox (bwrap --die-with-parent), no GPU needed. Inside it the
    # stand-in notes to its own folder (LOG_DIR "."), and every process is pid 2 in its own
    # namespace, so the serving count tells the same worker from a fresh one.
    with WorkerPool([Slot(None, 0)], unsafe=False, command=[*STANDIN, "."]) as p:
        results = judged_on_threads_that_end(p, 2)
        assert [r.extra["isolation"] for r in results] == ["bubblewrap"] * 2
        assert [r.message.split("served=")[1] for r in results] == ["1", "2"]
        assert p.busy()[0]["restarted_for"] == {}


def test_a_launch_error_keeps_the_worker_after_a_canary_on_it(logs):
    with pool(logs) as p:
        launch = judge(p, "launch")
        assert launch.verdict == "launch_error" and "canary" in launch.extra
        assert pid(judge(p, "pass")) == pid(launch)


def test_workers_are_replaced_after_max_jobs_and_get_the_measured_peaks(logs):
    with pool(logs, max_jobs=2) as p:
        a, b, c = judge(p, "pass"), judge(p, "pass"), judge(p, "pass")
        assert pid(a) == pid(b) != pid(c)
        assert noted(logs, pid(a))["peaks"] is None
        assert json.loads(noted(logs, pid(c))["peaks"]) == {"bandwidth:": 4.2e12}
        assert p.busy()[0]["restarted_for"] == {"max jobs": 1}


def test_a_failing_start_up_canary_is_an_environment_problem(logs):
    with pool(logs, 1, "--canary=fail") as p, \
            pytest.raises(EnvironmentProblem, match="w0 did not pass its start-up canary"):
        judge(p, "pass")


def test_each_slot_is_pinned_to_its_gpu(logs):
    gpus = [Gpu("0", "GPU-aaa", "H200", "sm_90"), Gpu("1", "GPU-bbb", "H200", "sm_90")]
    with WorkerPool(devices.slots(gpus, 1), unsafe=True, command=[*STANDIN, str(logs)]) as p:
        p.warm()
        assert {noted(logs, w.proc.pid)["cuda"] for w in p._workers} == {"GPU-aaa", "GPU-bbb"}


def test_two_workers_judge_two_candidates_at_once_and_never_more(logs):
    with pool(logs, 2) as p:
        p.warm()
        for _ in range(2):  # wait until both are ready, so start-up is not timed below
            judge(p, "pass")
        results, start = [], time.monotonic()
        threads = [threading.Thread(target=lambda: results.append(judge(p, "sleep")))
                   for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - start
        assert [r.verdict for r in results] == ["pass"] * 4
        assert len({pid(r) for r in results}) == 2
        assert 0.75 < elapsed < 1.6  # 4 x 0.4 s on 2 workers: two at a time
        busy = p.busy()
        assert [b["candidates"] for b in busy] == [3, 3]
        assert all(b["busy_s"] >= 0.75 for b in busy)


def test_holding_a_result_keeps_its_gpu_free_and_gives_that_gpu(logs):
    """The profile or sanitizer run after a verdict holds the GPU that judged it: a candidate
    dealt to that GPU's slot waits until the hold ends, one on the other GPU does not."""
    gpus = [Gpu("0", "GPU-aaa", "H200", "sm_90"), Gpu("1", "GPU-bbb", "H200", "sm_90")]
    with WorkerPool(devices.slots(gpus, 1), unsafe=True, command=[*STANDIN, str(logs)]) as p:
        first, second = judge(p, "pass"), judge(p, "pass")  # both warm; slot 0 is dealt next
        assert [first.extra["worker"], second.extra["worker"]] == ["gpu0.w0", "gpu1.w0"]
        done: list[tuple[str, float]] = []

        def one() -> None:
            result = judge(p, "pass")
            done.append((result.extra["worker"], time.monotonic()))
        threads = [threading.Thread(target=one) for _ in range(2)]
        with p.holding(first) as env:
            assert env == {"CUDA_VISIBLE_DEVICES": "GPU-aaa"}
            for t in threads:
                t.start()
            deadline = time.monotonic() + 20
            while not done and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.3)  # the held GPU's candidate would be done by now if it could run
            assert [w for w, _ in done] == ["gpu1.w0"]
            released = time.monotonic()
        for t in threads:
            t.join()
        assert done[1][0] == "gpu0.w0" and done[1][1] > released
        with p.holding(replace(first, extra={})) as env:  # judged elsewhere: nothing held
            assert env == {}


def test_the_gpu_listing_and_cuda_visible_devices():
    text = "0, GPU-aaa, NVIDIA H200, 9.0\n1, GPU-bbb, NVIDIA H200, 9.0\nbad line\n"
    gpus = devices.parse_listing(text)
    assert [(g.index, g.uuid, g.name, g.arch) for g in gpus] == [
        ("0", "GPU-aaa", "NVIDIA H200", "sm_90"), ("1", "GPU-bbb", "NVIDIA H200", "sm_90")]
    assert [g.index for g in devices.restrict(gpus, "1")] == ["1"]
    assert [g.index for g in devices.restrict(gpus, "GPU-bb,0")] == ["1", "0"]
    assert devices.restrict(gpus, "7,0") == []  # CUDA stops at the first unknown entry
    assert devices.restrict(gpus, None) == gpus
    labels = [s.label for s in devices.slots(gpus, 2)]
    assert labels == ["gpu0.w0", "gpu1.w0", "gpu0.w1", "gpu1.w1"]


def test_no_worker_processes_or_folders_are_left_after_close(logs):
    p = pool(logs, 2)
    p.warm()
    workers = list(p._workers)
    p.close()
    assert all(w.proc.poll() is not None and not w.folder.exists() for w in workers)


# The real serve loop (kgen.sandbox.worker.serve) with its judging stubbed: no GPU needed.
REAL_SERVE = """\
import json, sys
from pathlib import Path
import kgen.sandbox.worker as w

def judge(workdir, canary):
    if canary:
        return {"verdict": "pass", "message": "canary", "device": "stub"}
    what = (workdir / "kernel.cubin").read_bytes().decode()
    spec = json.loads((workdir / "request.json").read_text())["spec"]["name"]
    w._MEASURED.setdefault("bandwidth:", 1.5e12)
    return {"verdict": what, "message": f"{spec} {workdir.name} handed {sorted(w._MEASURED)}"}

w.judge = judge
w.serve(Path.cwd())
"""


def test_the_real_serve_loop_answers_jobs_and_ends_after_a_crash(logs):
    with WorkerPool([Slot(None, 0)], unsafe=True,
                    command=[sys.executable, "-c", REAL_SERVE]) as p:
        first, second = judge(p, "pass"), judge(p, "wrong")
        assert (first.verdict, second.verdict) == ("pass", "wrong")
        assert first.message.startswith("gemm job-000001") and "job-000002" in second.message
        crashed = judge(p, "crash")
        assert crashed.verdict == "crash" and "canary" in crashed.extra
        after = judge(p, "pass")
        # the successor was handed the peaks the first worker measured
        assert "handed ['bandwidth:']" in after.message and after.extra["warm"] is False
        assert p.busy()[0]["restarts"] == 1


@pytest.mark.skipif(local_gpu() is not None, reason="checks the path without a GPU")
def test_the_real_worker_without_a_gpu_stack_fails_its_start_up_canary_cleanly():
    with WorkerPool([Slot(None, 0)], unsafe=True, start_timeout_s=120) as p, \
            pytest.raises(EnvironmentProblem, match="canary|cannot run here|could not start"):
        judge(p, "pass")
