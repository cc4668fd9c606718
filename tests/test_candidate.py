"""The launch contract parser and reply extraction (kgen/candidate.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgen.loop.candidate import extract_source, parse_contract
from kgen.ops import load_op

REPLIES = Path(__file__).parent / "data" / "replies"
BODY = 'extern "C" __global__ void gemm_f16(const __half* A, const __half* B, __half* C,\n' \
       "                                  int M, int N, int K) {}\n"
GOOD = ("// kgen: op=gemm dtype=float16\n"
        "// kgen: choices tile=128x128x32 warps=8 stages=2\n"
        "// kgen: launch gemm_f16 grid=(cdiv(N,128), cdiv(M,128)) block=(256) smem=49152 "
        "args=(A, B, C, M, N, K)\n" + BODY)


@pytest.fixture(scope="module")
def gemm():
    return load_op("gemm")


def _launch_line(rest: str, dtype: str = "float16") -> str:
    return f"// kgen: op=gemm dtype={dtype}\n// kgen: launch gemm_f16 {rest}\n" + BODY


def test_good_header(gemm):
    contract, problems = parse_contract(GOOD, gemm)
    assert problems == ()
    assert (contract.op, contract.dtype) == ("gemm", "float16")
    assert contract.choices == "tile=128x128x32 warps=8 stages=2"
    (launch,) = contract.launches
    assert launch.kernel == "gemm_f16" and launch.args == ("A", "B", "C", "M", "N", "K")
    assert launch.dims({"M": 1000, "N": 300, "K": 5}) == ((3, 8), (256,), 49152)
    assert launch.line == 3


def test_several_launches_keep_their_order(gemm):
    source = ("// kgen: op=gemm dtype=float32\n"
              "// kgen: launch partial grid=(cdiv(N, 64), cdiv(M, 64), 4) block=(16, 16) "
              "smem=0 args=(A, B, C, M, N, K)\n"
              "// kgen: launch reduce grid=(cdiv(M * N, 256)) block=(256) args=(C, M, N)\n"
              'extern "C" __global__ void partial(const float* A, const float* B, float* C, '
              "int M, int N, int K) {}\n"
              'extern "C" __global__ void reduce(float* C, int M, int N) {}\n')
    contract, problems = parse_contract(source, gemm)
    assert problems == ()
    assert [la.kernel for la in contract.launches] == ["partial", "reduce"]
    sizes = {"M": 100, "N": 100, "K": 7}
    assert contract.launches[0].dims(sizes) == ((2, 2, 4), (16, 16), 0)
    assert contract.launches[1].dims(sizes) == ((40,), (256,), 0)


def test_min_max_and_modulo_are_allowed(gemm):
    source = _launch_line("grid=(max(1, N // 64) + N % 64, min(M, 65535)) block=(128) "
                          "args=(A, B, C, M, N, K)")
    contract, problems = parse_contract(source, gemm)
    assert problems == ()
    assert contract.launches[0].dims({"M": 70000, "N": 130, "K": 1})[0] == (4, 65535)


def test_sms_is_an_argument_too(gemm):
    """A kernel may take the SM count as an int (the SIMT sk=3 kernels stop at whole rounds)."""
    contract, problems = parse_contract(
        _launch_line("grid=(SMS) block=(256) args=(A, B, C, M, N, K, SMS)"), gemm)
    assert problems == ()
    assert contract.launches[0].arguments()[-1] == "SMS"


def _problems(source: str, spec) -> list:
    contract, problems = parse_contract(source, spec)
    assert contract is None, "a bad header must not yield a contract"
    assert problems and all(p.severity == "error" and p.category == "contract" for p in problems)
    return list(problems)


def test_missing_launch(gemm):
    (problem,) = _problems("// kgen: op=gemm dtype=float16\n" + BODY, gemm)
    assert "no `// kgen: launch" in problem.message and problem.line is None


@pytest.mark.parametrize("rest, expected", [
    ("grid=(cdiv(N,128)) block=(256) args=(A, B, D, M, N, K)", "unknown argument D"),
    ("grid=(cdiv(N,128), Q) block=(256) args=(A, B, C, M, N, K)", "unknown name 'Q'"),
    ("grid=(N/128) block=(256) args=(A, B, C, M, N, K)", "use // (integer division)"),
    ("grid=(cdiv(N,128) block=(256) args=(A, B, C, M, N, K)", "unbalanced parentheses"),
    ("grid=(cdiv(N,128))) block=(256) args=(A, B, C, M, N, K)", "unbalanced parentheses"),
    ("block=(256) args=(A, B, C, M, N, K)", "missing grid="),
    ("grid=(1, 1, 1, 1) block=(256) args=(A, B, C, M, N, K)", "1 to 3 expressions"),
    ("grid=(cdiv(N)) block=(256) args=(A, B, C, M, N, K)", "cdiv() takes 2 arguments"),
    ("grid=(2.5) block=(256) args=(A, B, C, M, N, K)", "not allowed"),
    ("grid=(N ** 2) block=(256) args=(A, B, C, M, N, K)", "not allowed"),
    ("grid=(N) block=(256) smem=(M +) args=(A, B, C, M, N, K)", "cannot parse"),
    ("grid=(N) block=(256) args=(A, B, C, M, N, K) stray", "expected key=value"),
])
def test_bad_launch_lines_point_at_their_line(gemm, rest, expected):
    problems = _problems(_launch_line(rest), gemm)
    assert any(expected in p.message and p.line == 2 for p in problems), problems
    assert any("gemm_f16" in p.source for p in problems if p.line == 2)


@pytest.mark.parametrize("payload", [
    "__import__('os').system('touch {marker}')",
    "open('{marker}', 'w').write('x')",
    "().__class__.__bases__[0].__subclasses__()",
    "(lambda: 1)()",
    "[x for x in (1, 2)][0]",
    "N.__class__",
    "getattr(N, 'real')",
])
def test_code_in_expressions_is_never_run(gemm, tmp_path, payload):
    marker = tmp_path / "ran"
    expression = payload.format(marker=marker)
    for field in ("grid", "block", "smem"):
        values = {"grid": "(1)", "block": "(1)", "smem": "0", field: f"({expression})"}
        problems = _problems(_launch_line(" ".join(f"{k}={v}" for k, v in values.items())
                                          + " args=(A, B, C, M, N, K)"), gemm)
        assert any(p.line == 2 and "not allowed" in p.message for p in problems), problems
    assert not marker.exists()
    if "{marker}" in payload:  # the payload is live: plain eval() would have left the marker
        eval(expression)
        assert marker.exists()


def test_kernel_not_defined(gemm):
    source = _launch_line("grid=(1) block=(1) args=(A, B, C, M, N, K)").replace(
        "void gemm_f16(", "void gemm_half(")
    (problem,) = _problems(source, gemm)
    assert "gemm_f16 is launched but not defined" in problem.message and problem.line == 2


def test_dtype_not_in_spec(gemm):
    (problem,) = _problems(_launch_line("grid=(1) block=(1) args=(A, B, C, M, N, K)", "int8"),
                           gemm)
    assert "dtype=int8: expected one of float32, float16, bfloat16" in problem.message
    assert problem.line == 1


def test_missing_dtype_and_wrong_op(gemm):
    source = "// kgen: op=softmax\n// kgen: launch gemm_f16 grid=(1) block=(1) " \
             "args=(A, B, C, M, N, K)\n" + BODY
    messages = [p.message for p in _problems(source, gemm)]
    assert any("op=softmax but the task is gemm" in m for m in messages)
    assert any("dtype=(missing)" in m for m in messages)


def test_every_problem_is_reported_not_just_the_first(gemm):
    source = ("// kgen: op=gemm dtype=float16\n"
              "// kgen: launch gemm_f16 grid=(N/2) block=(1) args=(A, B, C, M, N, K)\n"
              "// kgen: launch gemm_f16 grid=(1) block=(1) args=(X, B, C, M, N, K)\n" + BODY)
    problems = _problems(source, gemm)
    assert sorted(p.line for p in problems if p.line) == [2, 3]


def test_without_a_spec_names_are_not_checked():
    contract, problems = parse_contract(_launch_line("grid=(cdiv(R, 32)) block=(32) "
                                                     "args=(x, y, R)"), None)
    assert problems == ()
    assert contract.launches[0].dims({"R": 100}) == ((4,), (32,), 0)


def test_extract_source_takes_the_block_with_global():
    source = extract_source((REPLIES / "several_blocks.md").read_text())
    assert source is not None
    assert source.startswith("// kgen: op=gemm dtype=float32")
    assert "void gemm_f32(" in source and "int main" not in source and "print(" not in source


def test_extract_source_result_parses(gemm):
    source = extract_source((REPLIES / "several_blocks.md").read_text())
    contract, problems = parse_contract(source, gemm)
    assert problems == () and contract.launches[0].kernel == "gemm_f32"


def test_extract_source_ignores_think_blocks():
    source = extract_source((REPLIES / "think_then_code.md").read_text())
    assert source is not None and "draft_kernel" not in source and "void gemm_f32(" in source
    assert extract_source((REPLIES / "code_only_in_think.md").read_text()) is None


def test_extract_source_none_without_a_kernel_block():
    assert extract_source((REPLIES / "no_code.md").read_text()) is None
    assert extract_source("```cuda\nint x = 1;\n```") is None  # no __global__
    assert extract_source("```python\n__global__ = 1\n```") is None  # not a C-family fence


def test_extract_source_accepts_common_fence_tags():
    for tag in ("cuda", "cpp", "c++", "CUDA", ""):
        text = f"Here:\n```{tag}\n__global__ void k() {{}}\n```\n"
        assert extract_source(text) == "__global__ void k() {}\n", tag


def test_a_bad_launch_line_is_not_also_reported_missing(gemm):
    problems = _problems(_launch_line("grid=(N/2) block=(1) args=(A, B, C, M, N, K)"), gemm)
    assert not any("no `// kgen: launch" in p.message for p in problems), problems


@pytest.mark.parametrize("rest", [
    "grid=(cdiv(N, 16))\tblock=(256)\targs=(A, B, C, M, N, K)",
    "grid = (cdiv(N, 16)) block = (256) args = (A, B, C, M, N, K)",
])
def test_tabs_and_spaces_around_equals_are_accepted(gemm, rest):
    contract, problems = parse_contract(_launch_line(rest), gemm)
    assert problems == () and contract.launches[0].dims({"M": 1, "N": 32, "K": 1})[1] == (256,)


@pytest.mark.parametrize("block", ["(2048)", "(32, 64)", "(1, 1, 65)", "(0)"])
def test_impossible_block_shapes_are_contract_errors(gemm, block):
    problems = _problems(_launch_line(f"grid=(1) block={block} args=(A, B, C, M, N, K)"), gemm)
    assert any(p.line == 2 and "block" in p.message for p in problems)


def test_a_launch_must_pass_the_output(gemm):
    problems = _problems(_launch_line("grid=(1) block=(1) args=(A, B, M, N, K)"), gemm)
    assert any("C" in p.message and "output" in p.message for p in problems)


def test_kernels_must_be_extern_c(gemm):
    source = _launch_line("grid=(1) block=(1) args=(A, B, C, M, N, K)").replace('extern "C" ', "")
    problems = _problems(source, gemm)
    assert any('extern "C"' in p.message for p in problems)
