"""`make bench`'s table from measured rows (the measuring itself needs a GPU)."""

from __future__ import annotations

import pytest

from benchmarks.bench_table import rows_for, table
from benchmarks.gemm_configs import configure, gemm_spec, parse_sizes
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


def test_hopper_adds_an_sm90a_row_for_the_16_bit_dtypes_and_float32_a_simt_row():
    from benchmarks.bench_table import row_label, targets
    from kgen.arch import parse_arch

    local = parse_arch("sm_90")
    named = lambda found: [(t.name, only) for t, only in found]  # noqa: E731
    assert named(targets(local, "bfloat16")) == [("sm_90", ()), ("sm_90a", ())]
    # float32: the whole search (SIMT and 3xTF32), then SIMT alone, the float32 target's measure
    assert named(targets(local, "float32")) == [("sm_90", ()), ("sm_90", ("simt",))]
    assert named(targets(parse_arch("sm_89"), "float16")) == [("sm_89", ())]
    assert named(targets(parse_arch("sm_75"), "float32")) == [("sm_75", ())]
    assert row_label("float32", local, local, (), "template=simt tile=128x256x16") == "float32"
    assert row_label("float32", local, local, (), "template=tf32x3 tile=128x128x32 warps=2x4 "
                     "stages=3 group=8 precision=3xTF32") == "float32 3xTF32"
    assert row_label("float32", local, local, ("simt",), "template=simt") == "float32 SIMT"
    assert row_label("float16", parse_arch("sm_90a"), local, (), "") == "float16 sm_90a"


def _timed(spec, ms, base, fraction=0.5, bound="memory"):
    """A pass timed at every bench size; size i takes i + 1 times as long."""
    return Evaluation("pass", timings=tuple(
        Timing(dict(size), ms * (i + 1), ms * (i + 1), ms * (i + 1), "torch", base * (i + 1),
               None, None, fraction, bound) for i, size in enumerate(spec.bench_sizes)))


def test_ops_table_shows_each_implementation_with_its_share_of_the_roofline(monkeypatch):
    from benchmarks import ops_table
    from kgen.arch import parse_arch

    softmax, gemm = load_op("softmax"), load_op("gemm")
    assert ops_table.naive_kernel(softmax, "float32").name == "01_naive.cu"
    runs = []

    def run_kernel(source, task, budget):
        runs.append(task.spec.name)
        return _timed(task.spec, 20.0, 2.0, 0.1, "compute") if task.spec.name == "gemm" \
            else _timed(task.spec, 2.0, 0.5)

    monkeypatch.setattr(ops_table, "run_kernel", run_kernel)
    monkeypatch.setattr(ops_table, "torch_times", lambda dtype, names: {
        "softmax": {"eager_ms": [0.6, 1.2, 1.8], "compiled_ms": [0.4, 0.8]},
        "gemm": {"eager_ms": [2.1] * 3, "compiled_ms": [None] * 3,
                 "note": "torch.compile failed: X"}})
    asked = []

    def builtin(task):
        asked.append(task.spec.name)
        if task.spec.name == "softmax":
            return _timed(softmax, 1.25, 0.5)
        return _timed(gemm, 4.0, 2.0, 0.5, "compute")

    rows, notes = ops_table.measure_ops(parse_arch("sm_90"), "float32",
                                        ["softmax", "gemv", "gemm"], 0.3, builtin)
    assert runs == ["softmax", "gemv", "gemm"]
    assert asked == ["softmax", "gemm"]  # only ops the author can write: no gemv template
    assert notes == ["gemm: torch.compile failed: X"]
    text = ops_table.table(rows).splitlines()
    assert text[0] == ("| op | bench size | bound by | reference naive | builtin best | "
                       "torch eager | torch.compile |")
    # A row per op and bench size (softmax 3, gemv 3, gemm 3).
    assert [r["op"] for r in rows] == ["softmax"] * 3 + ["gemv"] * 3 + ["gemm"] * 3
    # softmax: the naive kernel at 50% of the roofline bounds it at 1 ms; eager 0.5 ms = 200%
    assert text[2] == ("| softmax | M=16384 N=4096 | copy BW | 2.000 ms (50%) | 1.250 ms (80%) | "
                       "0.500 ms (200%) | 0.400 ms (250%) |")
    # each size with its own times; a torch.compile time missing at a size is a dash
    assert text[4] == ("| softmax | M=4096 N=32768 | copy BW | 6.000 ms (50%) | 3.750 ms (80%) | "
                       "1.500 ms (200%) | - |")
    assert text[5].startswith("| gemv | M=16384 K=16384 | copy BW | 2.000 ms (50%) | - |")
    assert text[8].startswith("| gemm | M=4096 N=4096 K=4096 | matmul rate | 20.000 ms (10%) | "
                              "4.000 ms (50%) | 2.000 ms (100%) | - |")
    assert text[10].startswith("| gemm | M=3000 N=5000 K=2000 | matmul rate | 60.000 ms (10%) | ")


def test_search_spread_counts_candidates_to_within_five_percent_of_the_long_best():
    from benchmarks.search_spread import candidates_to_within, summarize

    def run(times, choices):
        return {"attempts": [{"choices": c, "status": "pass" if t else "wrong", "ms": t}
                             for t, c in zip(times, choices, strict=True)],
                "best_ms": min(t for t in times if t), "best_choices": choices[
                    times.index(min(t for t in times if t))]}

    short = [run([3.3, None, 3.26, 3.07], ["a", "b", "c", "d"]),
             run([3.3, None, 3.26, 3.08], ["a", "b", "c", "d"])]
    long = run([3.3, 3.07, 3.0], ["a", "e", "f"])
    assert candidates_to_within(short[0], 3.0) == 4  # 3.07 <= 3.15; 3.26 is not
    assert candidates_to_within(short[0], 2.5) is None
    text = "\n".join(summarize("float32-sm_90", short, long))
    assert "spread of the best: 0.3%" in text and "1 distinct best configuration(s): d" in text
    assert "best 3.0000 ms (f)" in text and "[4, 4, 2]" in text


def test_mem_sweep_ranks_by_the_median_over_passes_and_shows_their_range():
    from benchmarks.mem_sweep import summarize

    def row(choices, ms, eager, shares=()):
        return {"choices": choices, "ms": ms, "baseline_ms": eager,
                "per_size": [{"fraction": f} for f in shares]}

    rows = [row("a", ms, 0.076) for ms in (0.067, 0.103, 0.070)]
    rows += [row("b", ms, 0.080) for ms in (0.072, 0.072, 0.074)]
    assert summarize("sum", rows) == [
        "best sum: 0.0700 ms (median of 3, passes 0.0670-0.1030), eager 0.0760: a",
        "best sum: 0.0720 ms (median of 3, passes 0.0720-0.0740), eager 0.0800: b"]
    # Each size's share is the median over passes, in the spec's size order.
    rows = [row("c", 0.086, 0.136, (0.94, 0.888, 0.93)), row("c", 0.087, 0.136, (0.95, 0.90, 0.92)),
            row("c", 0.085, 0.137, (0.93, 0.89, 0.94))]
    assert summarize("argmax", rows) == [
        "best argmax: 0.0860 ms (median of 3, passes 0.0850-0.0870), shares 94.0/89.0/93.0, "
        "eager 0.1360: c"]


def test_gemm_configs_changes_the_default_and_names_what_it_cannot():
    p = configure("sm_90a", "bfloat16", "bn=192 stages=4 cluster=1")
    assert (p.template, p.bn, p.stages, p.bm) == ("wgmma", 192, 4, 128)
    assert configure("sm_90", "float32", "").template == "simt"
    with pytest.raises(SystemExit, match="'tiles=3' is not field=integer.*bn"):
        configure("sm_90a", "bfloat16", "tiles=3")
    for cluster in (2, 0):  # 0: clusters of 2 at some sizes (the default)
        with pytest.raises(SystemExit, match="clusters of 2 split"):
            configure("sm_90a", "bfloat16", f"bn=192 cluster={cluster}")
    with pytest.raises(SystemExit, match="--dtype int32: no gemm template"):
        configure("sm_90", "int32", "")
    with pytest.raises(SystemExit, match="--arch sm_999"):
        configure("sm_999", "float32", "")
    with pytest.raises(SystemExit, match="stream-K is built where the launch picks the cluster"):
        configure("sm_90a", "bfloat16", "sk=1 cluster=2")
    stream_k = configure("sm_90a", "bfloat16", "sk=1")
    assert stream_k.sk == 1 and " sk=1 " in f"{stream_k.choices} "


def test_gemm_configs_sizes_replace_the_bench_sizes_and_name_a_bad_one():
    assert parse_sizes("2432x1792x4096, 3000X5000X2000") == (
        {"M": 2432, "N": 1792, "K": 4096}, {"M": 3000, "N": 5000, "K": 2000})
    for bad in ("2432x1792", "0x1x1", "axbxc"):
        with pytest.raises(SystemExit, match="is not MxNxK"):
            parse_sizes(bad)


def test_gemm_configs_check_timed_validates_where_it_times():
    shipped = load_op("gemm")
    plain = gemm_spec("2432x1792x4096", check_timed=False)
    assert plain.test_sizes == shipped.test_sizes
    assert plain.bench_sizes == ({"M": 2432, "N": 1792, "K": 4096},)
    checked = gemm_spec("", check_timed=True)
    assert checked.bench_sizes == shipped.bench_sizes
    assert checked.test_sizes == shipped.test_sizes + shipped.bench_sizes


def test_a_failed_naive_kernel_leaves_the_roofline_to_the_builtin_timing():
    from benchmarks import ops_table

    softmax = load_op("softmax")
    wrong = Evaluation("wrong", "Y off at the third bench size")
    rows = ops_table.op_rows("softmax", softmax, wrong, _timed(softmax, 1.25, 0.5, 0.8),
                             {"compiled_ms": [0.4, 0.8, 1.2]})
    text = ops_table.table(rows).splitlines()
    # The builtin kernel at 80% bounds it at 1 ms: eager, from the builtin's worker, at 200%.
    assert text[2] == ("| softmax | M=16384 N=4096 | copy BW | - | 1.250 ms (80%) | "
                       "0.500 ms (200%) | 0.400 ms (250%) |")
    none = ops_table.table(ops_table.op_rows("softmax", softmax, wrong, None,
                                             {"eager_ms": [0.6] * 3})).splitlines()
    assert none[2] == "| softmax | M=16384 N=4096 | - | - | - | 0.600 ms | - |"
