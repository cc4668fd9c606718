"""The rule-based fixer: every class it claims is mended to compile (compile -> diagnostics ->
fixer -> compile, at most 3 rounds); everything else is handed to a language model, plainly."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgen.arch import parse_arch
from kgen.author.fixer import mend
from kgen.compile import Diagnostic, compile_source
from kgen.loop.attempt import Attempt
from kgen.loop.candidate import extract_source
from kgen.loop.task import Task
from kgen.models.base import Request
from kgen.models.builtin import BuiltinModel

FIXABLE = Path(__file__).parent / "data" / "fixable"
# What a person would expect the fixer to say it did, per file.
EXPECTED = {
    "undefined_identifier.cu": "`stride`",
    "missing_semicolon.cu": "missing `;`",
    "missing_brace.cu": "missing `}`",
    "missing_fp16_header.cu": "<cuda_fp16.h>",
    "missing_bf16_header.cu": "<cuda_bf16.h>",
    "missing_mma_header.cu": "<mma.h>",
    "shfl_without_sync.cu": "_sync form",
    "shfl_xor_up.cu": "replaced 3",
    "nonvoid_global.cu": "return type to void",
    "host_from_device.cu": "__host__ __device__",
    "const_write.cu": "dropped the const",
    "two_classes.cu": "`accum`",
}


def error(line: int | None, message: str, notes: tuple[str, ...] = ()) -> Diagnostic:
    return Diagnostic("error", line, None, None, message, notes=notes)


def test_every_fixable_file_has_an_expectation():
    assert sorted(p.name for p in FIXABLE.glob("*.cu")) == sorted(EXPECTED)


@pytest.mark.nvcc
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixable_file_is_mended_to_compile(name):
    arch = parse_arch("sm_89")
    source = (FIXABLE / name).read_text()
    assert not compile_source(source, arch).ok, "the fixture should start broken"
    edits: list[str] = []
    for _ in range(3):
        result = compile_source(source, arch)
        if result.ok:
            break
        outcome = mend(source, result.diagnostics)
        assert outcome.source is not None, outcome.give_up
        edits += outcome.edits
        source = outcome.source
    result = compile_source(source, arch)
    assert result.ok, result.summary
    assert any(EXPECTED[name] in e for e in edits), edits
    if source.startswith("// kgen:"):
        assert source.splitlines()[0] == (FIXABLE / name).read_text().splitlines()[0]


def test_semicolon_when_nvcc_names_the_next_line():
    source = "void f() {\n  int i = 1\n  int j = i;\n}\n"
    outcome = mend(source, (error(3, 'expected a ";"'),))
    assert outcome.source.splitlines()[1] == "  int i = 1;"


def test_semicolon_before_a_trailing_comment():
    source = "void f() {\n  int i = 1  // one\n  int j = i;\n}\n"
    outcome = mend(source, (error(2, 'expected a ";"'),))
    assert outcome.source.splitlines()[1] == "  int i = 1;  // one"


def test_undefined_identifier_without_a_note_uses_the_closest_declared_name():
    source = "__global__ void k(float* out, int count) {\n  out[0] = coutn;\n}\n"
    outcome = mend(source, (error(2, 'identifier "coutn" is undefined'),))
    assert "out[0] = count;" in outcome.source


def test_undefined_identifier_with_nothing_close_is_left_alone():
    source = "__global__ void k(float* out) {\n  out[0] = zebra;\n}\n"
    outcome = mend(source, (error(2, 'identifier "zebra" is undefined'),))
    assert outcome.source is None
    assert "beyond the builtin fixer" in outcome.give_up and "--base-url" in outcome.give_up
    assert "zebra" in outcome.give_up


def test_header_goes_after_the_contract_and_is_added_once():
    source = ("// kgen: op=gemm dtype=float16\n// note\n__global__ void k(__half* p) {\n"
              "  p[0] = __float2half(1.f);\n}\n")
    outcome = mend(source, (error(3, 'identifier "__half" is undefined'),
                            error(4, 'identifier "__float2half" is undefined')))
    lines = outcome.source.splitlines()
    assert lines[:3] == ["// kgen: op=gemm dtype=float16", "// note", "#include <cuda_fp16.h>"]
    assert outcome.source.count("#include") == 1 and len(outcome.edits) == 1


def test_header_already_included_is_not_a_fix():
    source = "#include <cuda_fp16.h>\n__global__ void k(__half* p) { p[0] = x; }\n"
    outcome = mend(source, (error(2, 'identifier "__half" is undefined'),))
    assert outcome.source is None


def test_const_write_through_pointer_dereference():
    source = "__global__ void k(const int* __restrict__ flag) {\n  *flag = 1;\n}\n"
    outcome = mend(source, (error(2, "expression must be a modifiable lvalue"),))
    assert outcome.source.splitlines()[0] == "__global__ void k(int* __restrict__ flag) {"


@pytest.mark.parametrize("definition, expected", [
    ("static inline float squash(float v) {", "__host__ __device__ static inline float squash("),
    ("__host__ float squash(float v) {", "__host__ __device__ float squash("),
])
def test_host_function_definition_gets_device(definition, expected):
    # The call (split over two lines) comes first: only the definition may be edited.
    source = ("__global__ void k(float* p) {\n  return squash(p[0],\n  1);\n}\n"
              f"{definition}\n  return v;\n}}\n")
    message = ('calling a __host__ function("squash(float)") from a __global__ function("k") '
               "is not allowed")
    outcome = mend(source, (error(2, message),))
    assert outcome.source.splitlines()[4].startswith(expected)
    assert outcome.source.count("__device__") == 1


def test_unrecognized_errors_give_up_with_advice():
    source = "__global__ void k(float* p) {\n  p[0] = f(1, 2);\n}\n"
    outcome = mend(source, (error(2, "too few arguments in function call"),))
    assert outcome.source is None
    assert outcome.give_up.startswith("this file is beyond the builtin fixer (line 2: too few")
    assert "--model NAME --base-url URL" in outcome.give_up


def test_builtin_model_fix_mode_replies_with_the_mended_file():
    source = (FIXABLE / "missing_semicolon.cu").read_text()
    arch = parse_arch("sm_89", check_nvcc=False)
    compiled = _failed_compile(3, 'expected a ";"')
    first = Attempt(1, 1, source, compile=compiled)
    reply = BuiltinModel().complete(Request((), Task("fix", arch, None, None, source), (first,)))
    assert reply.give_up is None and "missing `;`" in reply.text
    assert "blockIdx.x * blockDim.x + threadIdx.x;" in extract_source(reply.text)


def test_builtin_model_fix_mode_gives_up_when_edits_lead_back():
    """If the mended file was already tried (and failed), the fixer must not go round in circles."""
    source = "__global__ void k(float* p) {\n  int i = 1\n}\n"
    mended = mend(source, (error(2, 'expected a ";"'),)).source
    history = (Attempt(1, 1, mended, compile=_failed_compile(3, "something else")),
               Attempt(2, 2, source, compile=_failed_compile(2, 'expected a ";"')))
    arch = parse_arch("sm_89", check_nvcc=False)
    reply = BuiltinModel().complete(Request((), Task("fix", arch, None, None, source), history))
    assert reply.give_up and "already tried" in reply.give_up


def _failed_compile(line: int, message: str):
    from kgen.compile import CompileResult

    return CompileResult("sm_89", None, (error(line, message),))
