"""`make bench`'s table from measured rows (the measuring itself needs a GPU)."""

from __future__ import annotations

from benchmarks.bench_table import rows_for, table
from kgen.ops import load_op
from kgen.verdict import Evaluation, Timing


def _result(ms_list, base_list):
    spec = load_op("gemm")
    return Evaluation("pass", timings=tuple(
        Timing(dict(s), ms, ms, ms, "cuBLAS", base)
        for s, ms, base in zip(spec.bench_sizes, ms_list, base_list, strict=True)))


def test_side_by_side_rows_and_ratios():
    spec = load_op("gemm")
    naive = _result([20.0, 160.0, 8.0], [2.0, 16.0, 1.0])
    best = _result([4.0, 32.0, 2.0], [2.0, 16.0, 1.0])
    rows = rows_for("float32", spec, naive, best, {"4096x4096x4096": 3.0},
                    "template=simt tile=128x128x8")
    text = table(rows).splitlines()
    assert text[0] == ("| dtype | M x N x K | reference naive | builtin best | cuBLAS | Triton | "
                       "builtin configuration |")
    first = text[2]
    assert first.startswith("| float32 | 4096x4096x4096 |")
    # 2*4096^3 flops in 20 ms = 6.9 TFLOP/s, 0.10x of cuBLAS's 2 ms; builtin 0.50x; Triton 0.67x
    assert "6.9 TFLOP/s, 20.000 ms (0.10x)" in first and "(0.50x)" in first and "(0.67x)" in first
    assert "68.7 TFLOP/s, 2.000 ms |" in first  # cuBLAS itself, no ratio
    assert text[3].endswith("| - | template=simt tile=128x128x8 |")  # no Triton at 8192^3
    assert len(text) == 2 + len(spec.bench_sizes)


def test_a_failed_builtin_run_shows_dashes_and_keeps_cublas_from_naive():
    spec = load_op("gemm")
    naive = _result([20.0, 160.0, 8.0], [2.0, 16.0, 1.0])
    rows = rows_for("float16", spec, naive, None, {})
    line = table(rows).splitlines()[2]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[3] == "-" and cells[4].startswith("68.7 TFLOP/s") and cells[6] == "-"


def test_hopper_adds_an_sm90a_row_for_the_16_bit_dtypes():
    from benchmarks.bench_table import targets
    from kgen.arch import parse_arch

    local = parse_arch("sm_90")
    assert [t.name for t in targets(local, "bfloat16")] == ["sm_90", "sm_90a"]
    assert [t.name for t in targets(local, "float32")] == ["sm_90"]
    assert [t.name for t in targets(parse_arch("sm_89"), "float16")] == ["sm_89"]
