"""Every prompt renders for every op, dtype and mode; what the model is told is what it needs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kgen.arch import parse_arch
from kgen.compile import CompileResult, Diagnostic, ResourceUsage
from kgen.errors import UsageError
from kgen.loop import prompts
from kgen.loop.attempt import Attempt
from kgen.loop.candidate import parse_contract
from kgen.loop.task import Task
from kgen.ops import available_ops, load_op
from kgen.verdict import Evaluation, Timing

BROKEN = ('// kgen: op=gemm dtype=float32\n'
          '// kgen: launch gemm_f32 grid=(1) block=(1) args=(A, B, C, M, N, K)\n'
          'extern "C" __global__ void gemm_f32(const float* A, const float* B, float* C,\n'
          '                                    int M, int N, int K) {\n'
          '    C[0] = A[0] * B[strid];\n'
          '}\n')
RAW_LOG = "kernel.cu(5): error: identifier \"strid\" is undefined RAW-NVCC-LOG-MARKER"
SUMMARY = 'error  line 5 col 22  identifier "strid" is undefined  (declared nearby: stride)\n' \
          "  5 |     C[0] = A[0] * B[strid];"
SCALE_SPEC = """\
name: scale
description: Y = 2 * X elementwise.
sizes: [N]
tensors:
  X: {shape: [N], role: input}
  Y: {shape: [N], role: output}
dtypes:
  float32: {reference: float64, atol: 1.0e-6, rtol: 1.0e-6}
  bfloat16: {reference: float32, atol: 1.0e-2, rtol: 1.0e-2}
reference: 2 * X
test_sizes: [{N: 1}, {N: 1000}]
bench_sizes: [{N: 16777216}]
flops: N
bytes: 2 * N * ELEM
"""


def _specs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("scale")
    (folder / "spec.yaml").write_text(SCALE_SPEC)
    # gemm first: the tests that read one prompt closely read gemm's
    names = ["gemm"] + [n for n in available_ops() if n != "gemm"]
    return [load_op(name) for name in names] + [load_op(path=folder / "spec.yaml")]


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    return _specs(tmp_path_factory)


def _broken(number: int, source: str = BROKEN) -> Attempt:
    diag = Diagnostic("error", 5, 22, "20", 'identifier "strid" is undefined',
                      "    C[0] = A[0] * B[strid];")
    return Attempt(number, number, source, choices=f"try={number}",
                   compile=CompileResult("sm_89", None, (diag,), log=RAW_LOG, summary=SUMMARY))


def _compiled(number: int, ms: float | None = None, regs: int = 96, spills: int = 0) -> Attempt:
    source = BROKEN.replace("B[strid]", f"B[{number}]")
    run = None
    if ms is not None:
        timing = Timing({"M": 4096, "N": 4096, "K": 4096}, ms, ms * 0.98, ms * 1.02,
                        "cuBLAS", 0.79, 2 * 4096**3 / ms / 1e9)
        run = Evaluation("pass", "all sizes correct", (timing,))
    compiled = CompileResult("sm_89", b"\x7fELF", (), {"gemm_f32": ResourceUsage(
        regs, 0, spills, spills)}, summary=f"resource  kernel gemm_f32: {regs} registers")
    return Attempt(number, number, source, choices=f"tile={number}x{number}",
                   compile=compiled, evaluation=run)


HISTORIES = {
    "none": (),
    "broken": (_broken(1),),
    "compiled": (_broken(1), _compiled(2)),
    "timed": (_compiled(1, ms=2.0), _compiled(2, ms=1.5, spills=64), Attempt(3, 3, None)),
}
ARCHS = ("sm_75", "sm_89", "sm_90a", "sm_120")


def _task(mode: str, spec, dtype: str, arch: str = "sm_89") -> Task:
    arch_ = parse_arch(arch, check_nvcc=False)
    if mode == "fix":
        return Task("fix", arch_, spec, dtype, source=BROKEN, path=Path("/tmp/broken.cu"))
    return Task("generate", arch_, spec, dtype)


@pytest.mark.parametrize("history", HISTORIES)
@pytest.mark.parametrize("mode", ["generate", "fix"])
def test_every_template_renders_for_every_op_and_dtype(specs, mode, history):
    for spec in specs:
        for dtype in spec.dtypes:
            for arch in ARCHS:
                task = _task(mode, spec, dtype, arch)
                messages = prompts.build_messages(task, HISTORIES[history])
                assert [m["role"] for m in messages] == ["system", "user"]
                user = messages[1]["content"]
                assert arch in user and "```cuda" in user
                if mode == "generate":
                    assert f"## Operation: {spec.name} ({dtype})" in user
                    assert f"// kgen: op={spec.name} dtype={dtype}" in user


@pytest.mark.parametrize("template", ["generate.md.j2", "fix.md.j2", "optimize.md.j2"])
def test_each_top_level_template_renders_directly(specs, template):
    for spec in specs:
        for dtype in spec.dtypes:
            task = _task("generate", spec, dtype)
            context = prompts.turn_context(task, HISTORIES["timed"])
            text = prompts.render(template, **context)
            assert spec.name in text and dtype in text


def test_fix_without_a_spec_renders(specs):
    task = Task("fix", parse_arch("sm_89", check_nvcc=False), None, None, source=BROKEN,
                path=Path("/tmp/broken.cu"))
    for history in HISTORIES.values():
        user = prompts.build_messages(task, history)[1]["content"]
        assert "## Fix `broken.cu` for sm_89" in user


def test_a_renamed_variable_fails_loudly(specs):
    context = prompts.turn_context(_task("generate", specs[0], "float32"), ())
    del context["ctype"]
    with pytest.raises(UsageError, match="'ctype' is undefined"):
        prompts.render("generate.md.j2", **context)


def test_a_prompt_set_with_a_typo_fails_loudly(tmp_path, specs):
    (tmp_path / "generate.md.j2").write_text("Write {{ sepc.name }} now.\n")
    with pytest.raises(UsageError, match="'sepc' is undefined"):
        prompts.build_messages(_task("generate", specs[0], "float32"), (), str(tmp_path))


@pytest.mark.parametrize("prompt_set", prompts.list_prompt_sets())
def test_the_contract_example_is_itself_a_valid_contract(specs, prompt_set):
    for spec in specs:
        for dtype in spec.dtypes:
            task = _task("generate", spec, dtype)
            user = prompts.build_messages(task, (), prompt_set)[1]["content"]
            # The first prompt of a run holds one cuda block: the contract example.
            (example,) = re.findall(r"```cuda\n(.*?)```", user, re.DOTALL)
            contract, problems = parse_contract(example + "{}\n", spec)
            assert problems == (), problems
            assert contract.dtype == dtype


def test_generate_prompt_carries_spec_and_arch_facts(specs):
    gemm = specs[0]
    user = prompts.build_messages(_task("generate", gemm, "bfloat16", "sm_90a"), ())[1]["content"]
    assert "`A`: input, shape [M, K]" in user and "`const __nv_bfloat16*`" in user
    assert "`C`: output, shape [M, N]" in user and "cuda_bf16.h" in user
    assert "|out - ref| <= 0.06 + 0.02 * |ref|" in user
    assert "M=127 N=129 K=65" in user  # the odd test sizes are announced
    assert "up to 227 KiB" in user and "wgmma" in user and "this target is arch-specific" in user
    assert "mbarrier.arrive.shared::cluster.b64" in user  # the measured cluster-release pitfall
    assert "N % 16 != 0" in user  # the measured cost of rows TMA reads across sectors
    old = prompts.build_messages(_task("generate", gemm, "float16", "sm_75"), ())[1]["content"]
    assert "no (do not use cp.async)" in old and "up to 64 KiB" in old
    assert "Thread-block clusters" not in old and "N % 16" not in old


def test_fix_prompt_has_numbered_file_and_summary_not_raw_log(specs):
    user = prompts.build_messages(_task("fix", None, None), (_broken(1),))[1]["content"]
    assert "5 |     C[0] = A[0] * B[strid];" in user  # the file, numbered
    assert "(declared nearby: stride)" in user  # the summarized records
    assert "RAW-NVCC-LOG-MARKER" not in user


def test_generate_turns_choose_fix_then_optimize(specs):
    gemm = specs[0]
    task = _task("generate", gemm, "float32")
    assert prompts.choose_template(task, ()) == "generate.md.j2"
    assert prompts.choose_template(task, HISTORIES["broken"]) == "fix.md.j2"
    assert prompts.choose_template(task, HISTORIES["compiled"]) == "optimize.md.j2"
    assert prompts.choose_template(task, HISTORIES["timed"]) == "optimize.md.j2"
    only_no_code = (Attempt(1, 1, None),)
    assert prompts.choose_template(task, only_no_code) == "generate.md.j2"
    user = prompts.build_messages(task, only_no_code)[1]["content"]
    assert "No kernel found in your reply" in user


def test_history_table_rows(specs):
    user = prompts.build_messages(_task("generate", specs[0], "float32"),
                                  HISTORIES["timed"])[1]["content"]
    rows = [line for line in user.splitlines() if re.match(r"\| \d", line)]
    assert len(rows) == 3
    assert rows[0].startswith("| 1 | tile=1x1 | pass | gemm_f32: 96 regs, 0/0 B spill")
    assert "2.000 ms" in rows[0] and "0.40x of cuBLAS" in rows[0]
    assert rows[1].startswith("| 2 (best) |") and "64/64 B spill" in rows[1]
    assert "1.500 ms" in rows[1] and "0.53x of cuBLAS" in rows[1]
    assert rows[2].startswith("| 3 | - | no code | - |")
    assert "## Best so far: attempt 2" in user and "B[2]" in user  # the best file is shown


def test_history_is_bounded_and_keeps_the_best(specs):
    history = (_compiled(1, ms=0.5),) + tuple(_compiled(n, ms=3.0) for n in range(2, 60))
    user = prompts.build_messages(_task("generate", specs[0], "float32"), history)[1]["content"]
    rows = [line for line in user.splitlines() if re.match(r"\| \d", line)]
    assert len(rows) == prompts.HISTORY_ROWS + 1
    assert rows[0].startswith("| 1 (best) |") and rows[-1].startswith("| 59 |")
    assert "46 older not shown" in user
    assert len(user) < 16000


def test_the_conversation_is_re_rendered_not_accumulated(specs):
    task = _task("generate", specs[0], "float32")
    chatty = Attempt(1, 1, None, notes="<think>my private reasoning</think>")
    messages = prompts.build_messages(task, (chatty,))
    assert all(m["role"] != "assistant" for m in messages)
    assert "private reasoning" not in "".join(m["content"] for m in messages)


def test_prompt_sets_by_name_and_by_folder(tmp_path, specs):
    assert prompts.list_prompt_sets()[0] == "default"
    (tmp_path / "system.md.j2").write_text("Terse system prompt for {{ arch.name }}.\n")
    task = _task("generate", specs[0], "float32")
    default = prompts.build_messages(task, ())
    custom = prompts.build_messages(task, (), str(tmp_path))
    assert custom[0]["content"] == "Terse system prompt for sm_89.\n"
    assert custom[1] == default[1]  # files the set lacks come from the default set
    with pytest.raises(UsageError, match="unknown prompt set 'nope'; known: default"):
        prompts.build_messages(task, (), "nope")


def test_every_shipped_set_renders(specs):
    for name in prompts.list_prompt_sets():
        for history in HISTORIES.values():
            assert prompts.build_messages(_task("generate", specs[0], "float16"), history, name)


def test_prompt_says_what_the_richer_specs_hold():
    layernorm = prompts.build_messages(_task("generate", load_op("layernorm"), "float16"),
                                       ())[1]["content"]
    assert "`eps` (`float`, 1e-05)" in layernorm and "never the constant" in layernorm
    assert "`weight`: weight (a model parameter; read-only)" in layernorm
    assert "const __half* __restrict__ weight" in layernorm and "float eps)" in layernorm
    assert "test values normal (mean 3, std 2)" in layernorm
    argmax = prompts.build_messages(_task("generate", load_op("argmax"), "float32"),
                                    ())[1]["content"]
    assert "passed as `long long*` (always int64)" in argmax
    assert "integer outputs must equal the reference exactly" in argmax
    rmsnorm = prompts.build_messages(_task("generate", load_op("rmsnorm"), "float32"),
                                     ())[1]["content"]
    assert "```python\n" in rmsnorm and "def reference(X, weight, *, M, N, eps)" in rmsnorm
    softmax = prompts.build_messages(_task("generate", load_op("softmax"), "float32"),
                                     ())[1]["content"]
    assert "sums to 1" in softmax
