"""Wrong-result descriptions that never mislead, on CPU tensors: never-written outputs (the poison
bit pattern intact) apart from NaN the kernel computed apart from guard values it copied; and the
re-run that names the input guard band a computed NaN came from. No GPU needed."""

from __future__ import annotations

import pytest
import torch

from kgen.ops import load_op
from kgen.sandbox import guards
from kgen.sandbox.compare import compare
from kgen.sandbox.launch import GUARD, allocate, poison
from kgen.sandbox.poison import GUARD as GUARD_BITS
from kgen.sandbox.poison import OUTPUT, fill, holds, signed
from kgen.sandbox.rejected import Rejected
from kgen.sandbox.validate import check_after_run, compute_reference, make_inputs

SPEC = load_op("gemm")
SIZES = {"M": 7, "N": 3, "K": 5}


def test_patterns_are_nan_in_every_float_dtype_and_differ_from_the_gpus_own_nan():
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        for patterns in (GUARD_BITS, OUTPUT):
            t = torch.empty(4, dtype=dtype)
            fill(t, patterns)
            assert torch.isnan(t).all(), (dtype, patterns)
            assert holds(t, patterns).all()
        computed = torch.zeros(1, dtype=dtype) / 0  # 0/0: the canonical NaN
        assert not holds(computed, OUTPUT).any() and not holds(computed, GUARD_BITS).any()
    assert signed(0xA5, 1) == -91 and signed(0x7FC3, 2) == 0x7FC3


def test_never_written_computed_and_copied_values_are_told_apart():
    ref = torch.ones(4, 4, dtype=torch.float64)
    out = torch.ones(4, 4)
    fill(out[0], OUTPUT)  # row 0 never written
    out[1, :2] = float("nan")  # computed NaN (0/0-like)
    fill(out[2, :1], GUARD_BITS)  # a guard value copied as it is
    m = compare(out, ref, 1e-3, 1e-3)
    assert (m.bad, m.unwritten, m.computed, m.guard_copies) == (7, 4, 2, 1)
    assert "4 still hold the output poison (never written)" in m.where
    assert "2 are NaN/inf the kernel wrote itself" in m.where
    assert "1 hold an input guard band's exact pattern" in m.where
    only = torch.ones(4, 4)
    only[3, 3] = float("inf")
    text = compare(only, ref, 1e-3, 1e-3).where
    assert "never written" not in text and "all of them are NaN/inf the kernel wrote" in text


class ReadsPastA:
    """A stand-in kernel: C = A @ B, plus one read of the element just past the end of A (or, with
    `before`, just before its start) into the last output."""

    def __init__(self, buffers, before: bool = False):
        self.buffers = buffers
        self.before = before

    def launch(self, calls):
        a, b, c = (self.buffers[n] for n in "ABC")
        c.data.copy_(a.data @ b.data)
        stray = a.flat[GUARD - 1] if self.before else a.flat[GUARD + a.data.numel()]
        c.data[-1, -1] += stray * 0.5


def _fail(kernel_cls, **kwargs):
    inputs = make_inputs(SPEC, SIZES, "float32", seed=3)
    buffers = allocate(SPEC, SIZES, "float32", device="cpu")
    for name, host in inputs.items():
        buffers[name].data.copy_(host)
    runner = kernel_cls(buffers, **kwargs)
    poison(buffers)
    runner.launch([])
    refs = compute_reference(SPEC, "float32", inputs, SIZES, on_gpu=False)
    with pytest.raises(Rejected) as err:
        check_after_run(SPEC, "float32", SIZES, buffers, inputs, refs, "float32 M=7 N=3 K=5")
    return err.value, runner, buffers


@pytest.fixture(autouse=True)
def _no_gpu_wait(monkeypatch):
    monkeypatch.setattr(guards, "wait", lambda what, timeout_s: None)


@pytest.mark.parametrize("before, words", [(False, "past the end of A"),
                                           (True, "before the start of A")])
def test_a_read_outside_an_input_is_named_not_called_unwritten(before, words):
    first, runner, buffers = _fail(ReadsPastA, before=before)
    assert "wrote itself" in first.message and "never written" not in first.message
    told = guards.explained(first, runner, [], buffers, timeout_s=1.0)
    assert told.verdict == "wrong"
    assert f"the kernel reads {words}" in told.message, told.message
    assert buffers["A"].guard_problem() is None  # the bands are armed again afterwards


class UninitializedNaN:
    """A stand-in kernel whose NaN does not come from the guard bands (uninitialized memory)."""

    def __init__(self, buffers):
        self.buffers = buffers

    def launch(self, calls):
        a, b, c = (self.buffers[n] for n in "ABC")
        c.data.copy_(a.data @ b.data)
        c.data[0, 0] = float("nan")


def test_nan_not_from_the_guards_says_so():
    first, runner, buffers = _fail(UninitializedNaN)
    told = guards.explained(first, runner, [], buffers, timeout_s=1.0)
    assert "do not come from reading past the inputs" in told.message
    assert "uninitialized shared memory" in told.message


def test_other_rejections_pass_through_unchanged():
    rejected = Rejected("crash", "illegal address", {"M": 1})
    assert guards.explained(rejected, None, [], {}, 1.0) is rejected  # type: ignore[arg-type]


class ReadsPastBoth:
    """A stand-in kernel that reads one element past the end of A and of B into one product:
    zeroing either band alone leaves NaN (0 * NaN), so both must be named."""

    def __init__(self, buffers):
        self.buffers = buffers

    def launch(self, calls):
        a, b, c = (self.buffers[n] for n in "ABC")
        c.data.copy_(a.data @ b.data)
        c.data[-1, -1] += a.flat[GUARD + a.data.numel()] * b.flat[GUARD + b.data.numel()]


def test_reads_past_two_inputs_name_both():
    first, runner, buffers = _fail(ReadsPastBoth)
    told = guards.explained(first, runner, [], buffers, timeout_s=1.0)
    assert "the kernel reads past the end of A and past the end of B" in told.message
