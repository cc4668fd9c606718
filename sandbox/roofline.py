"""Device peaks and the roofline: how fast an op can possibly run, and `suspicious` when faster.

Two rooflines. `suspicious` is judged against the most generous one: dense (no sparsity)
spec-sheet peaks for the GPUs we know, keyed by a substring of the name, otherwise an estimate from
SM count and clock. The fraction reported to the model uses the peaks measured in the worker where
there are any: the library's matmul rate in the dtype and a device copy's bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass

_T = 1e12


@dataclass(frozen=True)
class Peaks:
    """FLOP/s per math path and bytes/s; `source` says where the numbers came from."""

    fp32: float  # SIMT float32 FMA
    tf32: float  # tensor cores, float32 inputs rounded to tf32
    fp16: float  # tensor cores, float16/bfloat16 inputs, float32 accumulation
    bandwidth: float
    source: str
    measured_flops: float | None = None  # torch.matmul (cuBLAS) rate in the dtype, this worker
    measured_bandwidth: float | None = None  # a device-to-device copy, read + write

    def compute_for(self, dtype: str, generous: bool = False) -> float:
        """The peak bounding a dtype; `generous`: the fastest path a passing kernel may use."""
        if dtype == "float32":
            return max(self.fp32, self.tf32) if generous else self.fp32
        if dtype == "float64":
            return self.fp32
        return self.fp16


# name substring -> (fp32, tf32, fp16/bf16 dense, bytes/s); longest match wins.
_TABLE = {
    "H200": (67 * _T, 495 * _T, 989 * _T, 4.8e12),
    "H100 NVL": (60 * _T, 418 * _T, 835 * _T, 3.9e12),
    "H100 PCIe": (51 * _T, 378 * _T, 756 * _T, 2.0e12),
    "H100": (67 * _T, 495 * _T, 989 * _T, 3.35e12),
    "GH200": (67 * _T, 495 * _T, 989 * _T, 4.9e12),
    "A100": (19.5 * _T, 156 * _T, 312 * _T, 2.04e12),
    "L40S": (91.6 * _T, 183 * _T, 362 * _T, 0.864e12),
    "L4": (30.3 * _T, 60 * _T, 121 * _T, 0.3e12),
    "RTX 4090": (82.6 * _T, 82.6 * _T, 165 * _T, 1.008e12),
    "A10": (31.2 * _T, 62.5 * _T, 125 * _T, 0.6e12),
    "T4": (8.1 * _T, 8.1 * _T, 65 * _T, 0.32e12),
    "B200": (80 * _T, 1100 * _T, 2250 * _T, 8.0e12),
}
# Dense float16 tensor FLOPs per SM per clock, by major.minor (for GPUs not in the table).
_FP16_PER_SM_CLOCK = {75: 1024, 80: 2048, 86: 1024, 87: 1024, 89: 1024, 90: 4096, 100: 8192,
                      103: 8192, 110: 8192, 120: 2048, 121: 2048}


def peaks_for(name: str, cc: int, sms: int, clock_hz: float, measured_bw: float | None) -> Peaks:
    """Table peaks for a known GPU, else an estimate; the measured bandwidth wins when higher."""
    matches = [key for key in _TABLE if key.lower() in name.lower()]
    if matches:
        fp32, tf32, fp16, bw = _TABLE[max(matches, key=len)]
        source = f"spec sheet ({max(matches, key=len)})"
    else:
        fp32 = sms * 128 * 2 * clock_hz
        fp16 = sms * _FP16_PER_SM_CLOCK.get(cc, 4096) * clock_hz
        tf32, bw = fp16 / 2, measured_bw or 1e12
        source = f"estimated from {sms} SMs at {clock_hz / 1e9:.2f} GHz"
    if measured_bw:
        bw = max(bw, measured_bw)
    return Peaks(fp32, tf32, fp16, bw, source, measured_bandwidth=measured_bw)


def bound_ms(flops: float, nbytes: float, peaks: Peaks, dtype: str, generous: bool) -> float:
    """The roofline's lower bound on the time, in ms."""
    return max(flops / peaks.compute_for(dtype, generous), nbytes / peaks.bandwidth) * 1e3


def fraction(ms: float, flops: float, nbytes: float, peaks: Peaks, dtype: str) -> float:
    """Achieved share of the roofline from measured peaks (else the dtype's ordinary path)."""
    compute = peaks.measured_flops or peaks.compute_for(dtype)
    bandwidth = peaks.measured_bandwidth or peaks.bandwidth
    bound = max(flops / compute, nbytes / bandwidth) * 1e3
    return bound / ms if ms > 0 else 0.0


def bound_by(flops: float, nbytes: float, peaks: Peaks, dtype: str) -> str:
    """"memory" when moving the bytes takes longer than the math at the measured peaks."""
    compute = peaks.measured_flops or peaks.compute_for(dtype)
    bandwidth = peaks.measured_bandwidth or peaks.bandwidth
    return "memory" if nbytes / bandwidth >= flops / compute else "compute"


def describe(peaks: Peaks) -> str:
    """Where the fraction's peaks came from, for the run's checks."""
    if peaks.measured_flops and peaks.measured_bandwidth:
        return (f"measured peaks ({peaks.measured_flops / _T:.0f} TFLOP/s by torch.matmul, "
                f"{peaks.measured_bandwidth / 1e12:.2f} TB/s by a device copy); "
                f"suspicious above {peaks.source}")
    return peaks.source


def too_fast(ms: float, flops: float, nbytes: float, peaks: Peaks, dtype: str,
             margin: float = 0.9) -> str | None:
    """A message when `ms` beats what any correct kernel could do on this GPU, else None."""
    limit = bound_ms(flops, nbytes, peaks, dtype, generous=True)
    if ms >= limit * margin:
        return None
    rate = flops / (ms * 1e-3) / _T
    return (f"{ms:.4f} ms would be {rate:.0f} TFLOP/s and {nbytes / (ms * 1e-3) / 1e9:.0f} GB/s, "
            f"beyond this GPU's roofline ({limit:.4f} ms at best: "
            f"{peaks.compute_for(dtype, True) / _T:.0f} TFLOP/s, {peaks.bandwidth / 1e9:.0f} GB/s, "
            f"{peaks.source}); the kernel cannot have done the work")
