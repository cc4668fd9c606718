"""Validation logic on CPU tensors: mismatch descriptions, guard bands, input checks, reference,
roofline and `suspicious`; no GPU needed."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from kgen import refexpr as reference
from kgen.errors import UsageError
from kgen.ops import load_op
from kgen.sandbox import roofline
from kgen.sandbox.compare import changed, compare
from kgen.sandbox.launch import GUARD, allocate, poison
from kgen.sandbox.poison import OUTPUT, fill
from kgen.sandbox.rejected import Rejected
from kgen.sandbox.timing import percentile
from kgen.sandbox.validate import check_after_run, compute_reference, make_inputs
from kgen.verdict import DRIFT_HINT, Evaluation

SPEC = load_op("gemm")


def poison_value(dtype: torch.dtype) -> torch.Tensor:
    """One element holding the output poison pattern."""
    t = torch.empty(1, dtype=dtype)
    fill(t, OUTPUT)
    return t[0]


def _ref(m: int = 127, n: int = 129, k: int = 65, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    a = torch.rand(m, k, generator=g, dtype=torch.float64) * 2 - 1
    b = torch.rand(k, n, generator=g, dtype=torch.float64) * 2 - 1
    return a @ b


def test_matching_output_is_ok():
    ref = _ref()
    m = compare(ref.float(), ref, 1e-3, 1e-3)
    assert m.ok and m.bad == 0 and m.total == 127 * 129


def test_edge_rows_only_are_described():
    ref = _ref()
    out = ref.clone()
    out[96:127, :] += 3.0
    m = compare(out, ref, 1e-3, 1e-3)
    text = m.text("C")
    assert m.bad == 31 * 129
    assert text.startswith(f"{31 * 129} of {127 * 129} outputs of C off")
    assert "rows 96-126" in text and "cols 0-128 (all)" in text
    assert "only the partial edge tiles" in text and "rows >= 96" in text
    assert "max abs 3" in text


def test_unwritten_outputs_are_called_nan_poison():
    ref = _ref()
    out = ref.clone().float()
    out[:, 128] = poison_value(torch.float32)  # the worker's output poison, bit for bit
    m = compare(out, ref, 1e-3, 1e-3)
    assert m.unwritten == 127 and m.bad == 127
    assert "never written" in m.where and "cols 128" in m.where


def test_constant_offset_and_scale_and_transpose():
    ref = _ref(64, 64, 32)
    assert "same constant +0.5" in compare(ref + 0.5, ref, 1e-3, 1e-3).where
    assert "scaled by the same factor 2" in compare(ref * 2, ref, 1e-3, 1e-3).where
    assert "transpose" in compare(ref.t().clone(), ref, 1e-3, 1e-3).where


def test_tolerance_is_elementwise_atol_plus_rtol():
    ref = torch.full((4, 4), 100.0, dtype=torch.float64)
    out = ref + 0.09  # within 1e-3 + 1e-3 * 100 = 0.101
    assert compare(out, ref, 1e-3, 1e-3).ok
    assert not compare(ref + 0.2, ref, 1e-3, 1e-3).ok


def test_infinite_output_is_never_accepted():
    ref = _ref(8, 8, 8)
    out = ref.clone()
    out[3, 4] = float("inf")
    m = compare(out, ref, 1e30, 1e30)
    assert m.bad == 1 and "C[3,4] = inf" in m.example


def test_changed_counts_bitwise_even_for_nan():
    a = torch.tensor([1.0, float("nan"), 3.0])
    b = a.clone()
    assert changed(a, b) == 0
    b[2] = 4.0
    assert changed(a, b) == 1


def _case(dtype: str = "float32", sizes: dict | None = None):
    sizes = sizes or {"M": 7, "N": 3, "K": 5}
    inputs = make_inputs(SPEC, sizes, dtype, seed=5)
    buffers = allocate(SPEC, sizes, dtype, device="cpu")
    for name, host in inputs.items():
        buffers[name].data.copy_(host)
    return sizes, inputs, buffers


def _kernel(buffers, dtype=torch.float32):
    """A stand-in 'kernel' written in torch: C = A @ B in float32 accumulation."""
    c = buffers["A"].data.float() @ buffers["B"].data.float()
    buffers["C"].data.copy_(c.to(dtype))


def test_inputs_are_random_fresh_and_never_zero():
    a = make_inputs(SPEC, {"M": 64, "N": 64, "K": 64}, "float32", seed=1)
    b = make_inputs(SPEC, {"M": 64, "N": 64, "K": 64}, "float32", seed=2)
    assert float(a["A"].abs().mean()) > 0.3
    assert not torch.equal(a["A"], b["A"])
    assert a["A"].min() >= -1 and a["A"].max() < 1


def test_correct_stand_in_kernel_passes_every_check():
    sizes, inputs, buffers = _case()
    assert torch.isnan(buffers["C"].data).all()  # poisoned from the start
    _kernel(buffers)
    refs = compute_reference(SPEC, "float32", inputs, sizes, on_gpu=False)
    assert refs["C"].dtype == torch.float64
    check_after_run(SPEC, "float32", sizes, buffers, inputs, refs, "here")


def test_out_of_bounds_write_hits_the_guard_band():
    sizes, inputs, buffers = _case()
    _kernel(buffers)
    buffers["C"].flat[GUARD + 21 + 2] = 1.0  # two elements past the end of C (7*3 = 21)
    refs = compute_reference(SPEC, "float32", inputs, sizes, on_gpu=False)
    with pytest.raises(Rejected) as err:
        check_after_run(SPEC, "float32", sizes, buffers, inputs, refs, "float32 M=7")
    assert err.value.verdict == "wrong"
    assert "out-of-bounds write: 1 past its end of C" in err.value.message


def test_input_mutation_is_caught_before_outputs():
    sizes, inputs, buffers = _case()
    _kernel(buffers)
    buffers["A"].data[0, 0] = 0.0
    refs = compute_reference(SPEC, "float32", inputs, sizes, on_gpu=False)
    with pytest.raises(Rejected) as err:
        check_after_run(SPEC, "float32", sizes, buffers, inputs, refs, "w")
    assert "modified input A (1 of 35 elements changed)" in err.value.message


def test_unwritten_output_after_poison_is_wrong_with_location():
    sizes, inputs, buffers = _case(sizes={"M": 127, "N": 129, "K": 65})
    _kernel(buffers)
    poison(buffers)  # a second launch that writes nothing: the stale answer is gone
    buffers["C"].data[:64, :].copy_(buffers["A"].data[:64] @ buffers["B"].data)
    refs = compute_reference(SPEC, "float32", inputs, sizes, on_gpu=False)
    with pytest.raises(Rejected) as err:
        check_after_run(SPEC, "float32", sizes, buffers, inputs, refs, "float32 M=127 N=129 K=65")
    msg = err.value.message
    assert msg.startswith("float32 M=127 N=129 K=65: 8127 of 16383 outputs of C off")
    assert "never written" in msg and "rows 64-126" in msg


def test_float16_reference_is_float32_and_tolerance_applies():
    sizes, inputs, buffers = _case("float16", {"M": 64, "N": 64, "K": 256})
    _kernel(buffers, torch.float16)
    refs = compute_reference(SPEC, "float16", inputs, sizes, on_gpu=False)
    assert refs["C"].dtype == torch.float32
    check_after_run(SPEC, "float16", sizes, buffers, inputs, refs, "f16")
    buffers["C"].data.add_(0.25)
    with pytest.raises(Rejected, match="same constant"):
        check_after_run(SPEC, "float16", sizes, buffers, inputs, refs, "f16")


def test_reference_expression_is_evaluated_without_eval():
    a, b = torch.ones(2, 3), torch.ones(3, 4)
    assert torch.equal(reference.evaluate("A @ B", {"A": a, "B": b}), torch.full((2, 4), 3.0))
    out = reference.evaluate("torch.softmax(A, dim=-1) * 2", {"A": a})
    assert torch.allclose(out, torch.full((2, 3), 2 / 3))
    for bad in ("__import__('os').system('true')", "A.numpy()", "open('x')", "torch.save(A, 'f')"):
        with pytest.raises(UsageError):
            reference.evaluate(bad, {"A": a})


H200 = roofline.peaks_for("NVIDIA H200", 90, 132, 1.98e9, measured_bw=4.3e12)


def test_peaks_come_from_the_table_or_an_estimate():
    assert H200.fp16 == 989e12 and H200.bandwidth == 4.8e12 and "H200" in H200.source
    other = roofline.peaks_for("Mystery GPU", 90, 100, 2.0e9, measured_bw=1.5e12)
    assert other.fp16 == pytest.approx(100 * 4096 * 2.0e9)
    assert other.bandwidth == 1.5e12 and "estimated" in other.source


def test_suspicious_when_faster_than_the_roofline():
    flops, nbytes = 2 * 4096**3, 3 * 4096**2 * 2
    fastest = roofline.bound_ms(flops, nbytes, H200, "float16", generous=True)
    assert fastest == pytest.approx(flops / 989e12 * 1e3)
    assert roofline.too_fast(0.2, flops, nbytes, H200, "float16") is None  # cuBLAS-like
    msg = roofline.too_fast(0.05, flops, nbytes, H200, "float16")
    assert msg is not None and "beyond this GPU's roofline" in msg
    # float32 may legitimately use TF32 tensor cores: judged against the TF32 peak
    assert roofline.too_fast(0.5, flops, 3 * 4096**2 * 4, H200, "float32") is None


def test_roofline_fraction_uses_the_ordinary_path():
    flops, nbytes = 2 * 4096**3, 3 * 4096**2 * 4
    ms = flops / 33.5e12 * 1e3  # half of the H200's 67 TFLOP/s float32 SIMT peak
    assert roofline.fraction(ms, flops, nbytes, H200, "float32") == pytest.approx(0.5)


def test_percentile_nearest_rank():
    values = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 20) == 2.0 and percentile(values, 80) == 4.0
    assert percentile([7.0], 80) == 7.0


def test_evenly_spaced_bad_rows_are_named():
    ref = _ref(7, 3, 5)
    out = ref.clone()
    out[1::2] = float("nan")
    m = compare(out, ref, 1e-3, 1e-3)
    assert "rows 1-5" in m.where and "only 3 of 7 rows (every 2nd row from 1)" in m.where


def test_roofline_fraction_prefers_measured_peaks():
    flops, nbytes = 2 * 4096**3, 3 * 4096**2 * 2
    measured = dataclasses.replace(H200, measured_flops=700e12)
    ms = flops / 350e12 * 1e3  # half of the measured library rate
    assert roofline.fraction(ms, flops, nbytes, measured, "float16") == pytest.approx(0.5)
    assert roofline.fraction(ms, flops, nbytes, H200, "float16") == pytest.approx(350 / 989)
    # a memory-bound shape is judged against the measured copy bandwidth, not the spec sheet's
    small = 2 * 64 * 64 * 8192, (64 * 8192 * 2 + 64 * 64 * 2) * 2
    ms = small[1] / 2.15e12 * 1e3
    assert roofline.fraction(ms, *small, measured, "float16") == pytest.approx(0.5)
    assert "measured peaks (700 TFLOP/s" in roofline.describe(measured)
    assert roofline.describe(H200) == H200.source  # nothing measured for compute: say so
    # suspicious stays judged against the spec sheet, never the (lower) measured rate
    assert roofline.too_fast(flops / 800e12 * 1e3, flops, nbytes, measured, "float16") is None


def test_a_small_float32_error_from_tf32_tensor_cores_gets_the_drift_hint():
    """The message the H100 gave kgen's first 3xTF32 kernel, with and without .tf32 mma in the
    source, and a large error: only the first gets the hint about round-toward-zero sums."""
    message = ("float32 M=4096 N=4096 K=4096 (benchmark size): 75 of 16777216 outputs of C off "
               "(max abs 0.0037, max rel 0.886; rows 21-4006, cols 28-4075)")
    tf32 = 'asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 ...");'
    assert DRIFT_HINT in Evaluation("wrong", message).describe(tf32)
    assert "hint" not in Evaluation("wrong", message).describe("float acc = 0.f; // SIMT")
    large = message.replace("max abs 0.0037", "max abs 12.5")
    assert "hint" not in Evaluation("wrong", large).describe(tf32)
    half = message.replace("float32", "float16", 1)
    assert "hint" not in Evaluation("wrong", half).describe(tf32)
    assert "hint" not in Evaluation("pass", "all checks passed").describe(tf32)
