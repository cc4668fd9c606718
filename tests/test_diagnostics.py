"""The broken-kernel corpus through the real nvcc, plus the parser and summarizer on fixed logs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from kgen.arch import Arch
from kgen.compile import Diagnostic, ResourceUsage, compile_source, logparse, rules, summary

BROKEN = Path(__file__).parent / "data" / "broken"
CORPUS = sorted(BROKEN.glob("*.cu"))


def expectations(text: str) -> tuple[str, bool, list[dict[str, str]]]:
    """(arch, compiles, [{line, category, severity, contains, note, count}]) from the header."""
    arch = re.search(r"^// expect-arch: (\S+)", text, re.MULTILINE)
    wanted = [dict(item.split("=", 1) for item in shlex.split(m.group(1)))
              for m in re.finditer(r"^// expect: (.*)$", text, re.MULTILINE)]
    ok = re.search(r"^// expect-ok\s*$", text, re.MULTILINE) is not None
    return (arch.group(1) if arch else "sm_89"), ok, wanted


def named_lines(d: Diagnostic) -> set[int]:
    """The line a record points at plus every line its notes name ("line 9", "lines 5, 6")."""
    found = {d.line} if d.line else set()
    for note in d.notes:
        for m in re.finditer(r"\blines? (\d+(?:, \d+)*)", note):
            found |= {int(n) for n in m.group(1).split(", ")}
    return found


def matches(d: Diagnostic, want: dict[str, str]) -> bool:
    lines = {None} if want["line"] == "none" else {int(n) for n in want["line"].split("|")}
    if None in lines:
        placed = d.line is None
    else:
        placed = d.line in lines or (bool(lines & named_lines(d)) and d.line is not None)
    return (placed and d.severity == want.get("severity", "error")
            and d.category == want.get("category", d.category)
            and want.get("contains", "") in d.message
            and want.get("note", "") in " ".join(d.notes)
            and str(d.count) == want.get("count", str(d.count)))


def _arch(name: str) -> Arch:
    m = re.fullmatch(r"sm_(\d+)(a?)", name)
    assert m, name
    return Arch(name, int(m.group(1)), m.group(2))  # sm_50 on purpose skips parse_arch's check


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 28
    for path in CORPUS:
        assert expectations(path.read_text())[2], f"{path.name} has no // expect: line"


@pytest.mark.nvcc
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_broken_kernel_names_its_root(path: Path):
    text = path.read_text()
    arch, compiles, wanted = expectations(text)
    result = compile_source(text, _arch(arch), use_cache=False)
    assert result.ok == compiles, result.log
    for want in wanted:
        assert any(matches(d, want) for d in result.diagnostics), (
            f"{path.name}: nothing matches {want}\n{result.summary}\n--- raw log\n{result.log}")
    # No spurious errors: every error points at an expected line (or at none when expected).
    allowed = {None if w["line"] == "none" else int(n)
               for w in wanted for n in w["line"].split("|")}
    for d in result.errors:
        assert d.line in allowed, f"{path.name}: unexpected error {d}\n{result.summary}"
    assert len(result.summary) <= 3000
    for raw_marker in ("kernel.cu(", "/tmp/kgen-nvcc", "errors detected", "ptxas info", "^\n\n"):
        assert raw_marker not in result.summary, result.summary  # records, never the raw log
    for want in wanted:
        if want["line"] != "none":
            assert any(re.search(rf"\blines? (\d+, )*{n}\b", result.summary)
                       for n in want["line"].split("|")), result.summary
    raw_errors = len(re.findall(r"\berror\b", result.log))
    if raw_errors >= 3 or len(result.log) > 500:  # a cascade: the summary is under the raw log
        assert len(result.summary) < len(result.log), result.summary


CASCADE_LOG = "".join(
    f'kernel.cu({n}): error: identifier "undefined_{n}" is undefined\n'
    f"      x[{n}] = undefined_{n};\n               ^\n\n" for n in range(2, 400)
) + "398 errors detected in the compilation of \"kernel.cu\".\n"


def test_flood_summary_stays_under_budget_and_counts_what_it_left_out():
    source = 'extern "C" __global__ void k(float* x) {\n' + "".join(
        f"    x[{n}] = undefined_{n};\n" for n in range(2, 400)) + "}\n"
    records = rules.parse(CASCADE_LOG, source)
    assert len(records) == 398 and records[0].line == 2
    text = summary.summarize(records, source, budget=1500)
    assert len(text) <= 1500
    assert text.startswith("error  line 2 col")
    left = re.search(r"\.\.\. (\d+) more records left out \((\d+) errors", text)
    assert left is not None
    shown = text.count("\nerror  line ") + 1
    assert shown + int(left.group(1)) == 398


def test_summary_puts_errors_before_warnings_and_shows_context_and_caret():
    source = "int a;\nint b;\nint c;\nint d;\n"
    records = [Diagnostic("warning", 1, 5, "177", 'variable "a" was declared but never referenced'),
               Diagnostic("error", 3, 5, "20", 'identifier "c" is undefined',
                          notes=("did you mean `d`?",))]
    text = summary.summarize(records, source)
    assert text.index("error  line 3 col 5") < text.index("warning  line 1 col 5")
    assert "(did you mean: d)" in text
    assert "  2 | int b;\n  3 | int c;\n    |     ^\nwarning" in text


def test_summary_lists_resources_in_kib():
    usage = {"gemm_f16": ResourceUsage(168, 48 * 1024, 2048, 1024, 0)}
    assert summary.summarize((), "", usage) == (
        "resource  kernel gemm_f16: 168 registers, 2 KiB spill stores, 1 KiB spill loads, "
        "48 KiB shared")


def test_parse_resources_reads_each_entry_function():
    log = ("ptxas info    : Compiling entry function 'a' for 'sm_89'\n"
           "ptxas info    : Function properties for a\n"
           "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
           "ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, "
           "360 bytes cmem[0]\n"
           "ptxas info    : Compiling entry function 'b' for 'sm_89'\n"
           "ptxas info    : Function properties for b\n"
           "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
           "ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]\n")
    found = logparse.parse_resources(log)
    assert found["a"] == ResourceUsage(40, 1024, 4, 12, 8)
    assert found["b"] == ResourceUsage(8, 0, 0, 0, 0)


def test_header_error_goes_to_the_instantiating_line_with_both_lines_named():
    log = ('/usr/local/cuda/include/foo.h(55): error: no suitable conversion\n'
           '    do_it(x);\n    ^\n'
           '          detected during:\n'
           '            instantiation of "void f<T>(T) [with T=int]" at line 4 of kernel.cu\n'
           '            instantiation of "void g<T>(T) [with T=int]" at line 9 of kernel.cu\n')
    source = "\n".join(f"line{n}" for n in range(1, 12))
    (d,) = rules.parse(log, source)
    assert d.line == 9 and d.column is None and d.source == "line9"
    assert any("foo.h line 55" in n for n in d.notes)
    assert {4, 9} <= {int(n) for note in d.notes for n in re.findall(r"line (\d+)", note)}


def test_header_error_without_a_user_line_has_no_line():
    log = "/usr/include/x.h(3): error: expected a ';'\n  int a\n       ^\n"
    (d,) = rules.parse(log, "int main;\n")
    assert d.line is None and d.severity == "error"


def test_ptxas_line_without_ptx_keeps_the_error_but_no_line():
    log = ("ptxas /tmp/x/kernel.ptx, line 12; error   : Unknown modifier '.u33'\n"
           "ptxas fatal   : Ptx assembly aborted due to errors\n")
    (d,) = rules.parse(log, "int a;\n", ptx=None)
    assert d.line is None and "u33" in d.message and "PTX line 12" in d.notes[0]


def test_ptx_loc_maps_through_the_compiled_file_only():
    from kgen.compile.scan import ptx_to_source_line

    ptx = ("\t.loc\t1 7 5\n\t.loc\t2 151 3, function_name $L__info_string0, inlined_at 1 6 5\n"
           "\tadd.u33 %r1, %r2, 1;\n\t.file\t1 \"/tmp/k/kernel.cu\"\n"
           "\t.file\t2 \"/usr/local/cuda/include/crt/sm_70_rt.hpp\"\n")
    assert ptx_to_source_line(ptx, 3) == 7
    assert ptx_to_source_line(ptx, 1) == 7
    assert ptx_to_source_line("", 3) is None


def test_to_json_has_the_stable_keys_and_reports_the_count():
    d = Diagnostic("error", 3, 2, "20", "boom", "src", ("a",), count=3)
    assert d.to_json() == {"severity": "error", "line": 3, "column": 2, "code": "20",
                           "message": "boom", "source": "src",
                           "notes": ["a", "reported 3 times"]}


def test_unknown_lines_and_non_utf8_replacement_never_crash():
    log = "\ufffd\ufffd garbage\nkernel.cu(x): error: nope\nnvcc fatal   : something odd\n"
    records = rules.parse(log, "\ufffd\n")
    assert [d.category for d in records] == ["toolchain"]
    assert summary.summarize(records, "\ufffd\n").startswith("error [toolchain]")


def test_nvlink_unresolved_reference_points_at_the_call_site():
    source = ("extern __device__ float helper(float v);\n"
              'extern "C" __global__ void k(float* x) {\n'
              "    x[0] = helper(x[0]);\n"
              "    x[1] = helper(x[1]);\n}\n")
    log = "nvlink error   : Undefined reference to '_Z6helperf' in 'kernel.o'\n"
    (d,) = rules.parse(log, source)
    assert (d.line, d.category) == (3, "link") and "'helper'" in d.message
    assert "also called at line 4" in d.notes


def test_fatbinary_and_ptxas_fatal_are_toolchain_errors_without_a_line():
    log = ("fatbinary fatal   : Could not open input file '/tmp/x/kernel.cubin'\n"
           "ptxas fatal   : Memory allocation failure\n")
    records = rules.parse(log, "int a;\n")
    assert [(d.category, d.line) for d in records] == [("toolchain", None)] * 2
    assert "Could not open input file" in records[0].message


def test_ptxas_aborted_line_alone_is_kept_but_dropped_beside_real_errors():
    alone = rules.parse("ptxas fatal   : Ptx assembly aborted due to errors\n", "")
    assert len(alone) == 1
    both = rules.parse("ptxas /t/kernel.ptx, line 3; error   : Unknown modifier '.u33'\n"
                             "ptxas fatal   : Ptx assembly aborted due to errors\n", "")
    assert [d.message for d in both] == ["Unknown modifier '.u33'"]


def test_spill_warning_from_ptxas_is_not_doubled_by_the_resource_rule():
    source = 'extern "C" __global__ void __launch_bounds__(256) k(float* x) {\n}\n'
    log = ("ptxas warning : Registers are spilled to local memory in function 'k', "
           "8 bytes spill stores, 8 bytes spill loads\n"
           "ptxas info    : Compiling entry function 'k' for 'sm_89'\n"
           "ptxas info    : Function properties for k\n"
           "    0 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
           "ptxas info    : Used 32 registers, used 0 barriers, 360 bytes cmem[0]\n")
    (d,) = rules.parse(log, source)
    assert (d.severity, d.category, d.line) == ("warning", "resource", 1)


def test_missing_semicolon_inside_a_line_stays_on_that_line():
    source = "void f() {\n    for (int i = 0 i < 4; ++i) {}\n}\n"
    log = ('kernel.cu(2): error: expected a ";"\n'
           "      for (int i = 0 i < 4; ++i) {}\n"
           "                     ^\n")
    (d,) = rules.parse(log, source)
    assert (d.line, d.column) == (2, 20)


def test_semicolon_skips_comments_and_blank_lines_back_to_the_statement():
    source = "int f() {\n    int a = 1\n    /* note\n       more */\n\n    return a;\n}\n"
    log = 'kernel.cu(6): error: expected a ";"\n      return a;\n      ^\n'
    (d,) = rules.parse(log, source)
    assert (d.line, d.column) == (2, 14) and d.source == "    int a = 1"


def test_a_tiny_budget_still_shows_the_first_root():
    records = [Diagnostic("error", 1, None, None, "x" * 500, notes=("n" * 300,)),
               Diagnostic("error", 2, None, None, "second")]
    text = summary.summarize(records, "a\nb\n", budget=200)
    assert len(text) <= 200
    assert text.startswith("error  line 1  xxx") and "1 more records left out" in text
