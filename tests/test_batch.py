"""A round's K candidates: asked at once (bounded), checked as they come, saved in order; the
builtin author asked in turn so a round never repeats a configuration; a model behind a gate;
random sampling of the builtin templates' space."""

from __future__ import annotations

import threading
import time

import pytest
from helpers import fenced, kernel

from kgen.arch import parse_arch
from kgen.author.sample import propose_random
from kgen.author.search import read_attempt
from kgen.author.space import render, space
from kgen.loop import batch
from kgen.loop.attempt import Attempt
from kgen.loop.loop import Budget, Checker, run_loop
from kgen.loop.rundir import RunDir
from kgen.loop.task import Task
from kgen.models import get_model
from kgen.models.base import Reply, Usage
from kgen.models.builtin import BuiltinModel
from kgen.models.gate import Gated
from kgen.ops import load_op

GOOD = kernel("gemm_naive_f32.cu")
TASK = Task("generate", parse_arch("sm_89", check_nvcc=False), load_op("gemm"), "float32")


class SlowModel:
    """A language model whose replies take a while; it counts the calls in flight."""

    name = "slow"
    is_language_model = True

    def __init__(self, delay: float = 0.3):
        self.delay = delay
        self.now = self.most = self.calls = 0
        self.lock = threading.Lock()

    def describe(self) -> str:
        return "slow stand-in"

    def complete(self, request):
        with self.lock:
            self.calls += 1
            number = self.calls
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(self.delay * (1 if number % 2 else 0.2))  # later replies may come first
        with self.lock:
            self.now -= 1
        return Reply(fenced(GOOD.replace("naive", f"naive v{number}")), "slow", Usage(10, 5))


def _check(reply, number, round_number):
    return Attempt(number, round_number, reply.text)


def test_k_requests_in_flight_at_once_and_attempts_in_order(tmp_path):
    model, run_dir = SlowModel(), RunDir.create(tmp_path / "run", {})
    start = time.monotonic()
    out = list(batch.candidates(TASK, model, _check, (), (), run_dir, 4, 5, 2))
    assert time.monotonic() - start < 1.0  # 4 x 0.3 s in sequence would be 1.2 s at least
    assert model.most == 4
    assert [a.number for _, a in out] == [5, 6, 7, 8] and {a.round for _, a in out} == {2}
    transcript = (run_dir.path / "transcript.jsonl").read_text().splitlines()
    assert [int(line.split('"attempt": ')[1].split(",")[0]) for line in transcript] == [5, 6, 7, 8]


def test_concurrency_is_bounded(tmp_path):
    model = SlowModel(0.1)
    list(batch.candidates(TASK, model, _check, (), (), RunDir.create(tmp_path / "r", {}), 6, 1,
                          1, concurrency=2))
    assert model.most == 2 and model.calls == 6


def test_a_gate_bounds_calls_shared_by_several_runs():
    model, gate = SlowModel(0.1), threading.Semaphore(3)
    gated = Gated(model, gate)
    threads = [threading.Thread(target=gated.complete, args=(None,)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert model.most == 3 and model.calls == 8
    assert gated.is_language_model and gated.describe() == "slow stand-in"


def test_a_model_error_is_logged_then_raised_after_the_earlier_attempts(tmp_path):
    from kgen.errors import ModelFatal
    from kgen.models.scripted import ScriptedModel

    model = ScriptedModel([fenced(GOOD), ModelFatal("authentication failed")])
    run_dir = RunDir.create(tmp_path / "run", {})
    got = []
    with pytest.raises(ModelFatal):
        for _reply, attempt in batch.candidates(TASK, model, _check, (), (), run_dir, 2, 1, 1):
            got.append(attempt.number)
    assert got == [1]
    assert "authentication failed" in (run_dir.path / "transcript.jsonl").read_text()


@pytest.mark.nvcc
def test_the_builtin_author_never_repeats_a_configuration_within_a_round(tmp_path):
    run_dir = RunDir.create(tmp_path / "run", {})
    trajectory = run_loop(TASK, BuiltinModel(), Checker(), run_dir,
                          Budget(rounds=1, candidates=3), [])
    choices = [a.choices for a in trajectory.attempts]
    # compile only: the run stops after this round (one compiled cleanly); all three are kept
    assert len(choices) == 3 and len(set(choices)) == 3
    assert len((run_dir.path / "transcript.jsonl").read_text().splitlines()) == 3


def test_random_sampling_covers_the_space_without_repeats_in_a_seeded_order():
    arch = TASK.arch
    total = len(space(arch, "float32", "simt"))
    history: list[Attempt] = []
    picks = []
    for number in range(1, 11):
        proposal = propose_random(arch, "float32", tuple(history), seed=3)
        picks.append(proposal.params)
        history.append(Attempt(number, number, render(proposal.params, "float32")))
    assert len(set(picks)) == 10 and all(read_attempt(a) for a in history)
    again = [propose_random(arch, "float32", tuple(history[:k]), seed=3).params
             for k in range(10)]
    assert again == picks  # the same seed gives the same order, whatever was seen
    other = [propose_random(arch, "float32", (), seed=s).params for s in range(5)]
    assert len(set(other)) > 1
    assert "random sample (seed 3) of" in propose_random(arch, "float32", (), 3).reason
    assert total > 10


def test_builtin_random_is_a_registered_backend():
    model = get_model("builtin-random", seed=4)
    assert model.name == "builtin-random" and not model.is_language_model
    assert "seed 4" in model.describe() and "not the search" in model.describe()
