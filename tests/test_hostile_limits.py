"""Work bounded by input size: the summarizer, contract and spec expressions, reference
expressions, YAML. Each case would have taken minutes or gigabytes before."""

from __future__ import annotations

import time

import pytest

from kgen import expr, refexpr
from kgen.arch import parse_arch
from kgen.compile import compile_source, rules
from kgen.errors import UsageError


def _fast(seconds: float):
    """Context: the block must finish within `seconds` of wall clock."""
    class Timer:
        def __enter__(self):
            self.start = time.monotonic()

        def __exit__(self, *exc):
            took = time.monotonic() - self.start
            assert took < seconds, f"took {took:.2f} s (limit {seconds} s)"
    return Timer()


@pytest.mark.parametrize("text", [
    "A * 10 ** 100000000", "A ** 100000000", "(9 ** 64) ** 64 * A", "1e300 ** 64 * A",
    "A * " + "9" * 400 + " * " + "9" * 400, "+".join(["A"] * 10_000), "-" * 100_000 + "A",
    "(" * 500 + "A" + ")" * 500, "A ** B",
])
def test_reference_expressions_are_refused_quickly(text):
    with _fast(0.5), pytest.raises(UsageError):
        refexpr.check(text, ["A", "B"])


@pytest.mark.parametrize("text", [
    "+".join(["M"] * 100_000), "*".join(["N"] * 200), "(" * 300 + "M" + ")" * 300,
    "*".join(["99999999999"] * 20), "-" * 5000 + "M",
])
def test_size_expressions_are_refused_quickly(text):
    with _fast(0.5), pytest.raises(expr.ExprError):
        expr.evaluate(text, {"M": 3, "N": 4})


def test_refused_expressions_are_quoted_short():
    with pytest.raises(expr.ExprError) as caught:
        expr.evaluate("+".join(["M"] * 100_000), {"M": 1})
    assert len(str(caught.value)) < 200


def test_summarizer_cost_is_capped_for_a_flood_of_undefined_names():
    n = 60_000  # a 3 MB source, one undefined name per line
    source = 'extern "C" __global__ void k(float* x) {\n' + "".join(
        f"    x[{i}] = undefined_{i} + declared_{i};\n" for i in range(n)) + "}\n"
    log = "".join(f'kernel.cu({i + 2}): error: identifier "undefined_{i}" is undefined\n'
                  f"      x[{i}] = undefined_{i};\n               ^\n\n" for i in range(4000))
    with _fast(rules.GUESS_SECONDS + 6.0):
        found = rules.parse(log, source)
    assert len(found) <= rules.MAX_RECORDS + 1
    assert "not analysed" in found[-1].message
    assert any(n.startswith("did you mean") for n in found[0].notes)  # the first still guessed


@pytest.mark.nvcc
@pytest.mark.slow
def test_a_3mb_source_with_100k_undefined_names_compiles_and_summarizes_quickly():
    source = 'extern "C" __global__ void k(float* x) {\n' + "".join(
        f"    x[{i}] = undefined_name_{i};\n" for i in range(100_000)) + "}\n"
    started = time.monotonic()
    result = compile_source(source, parse_arch("sm_89"), use_cache=False)
    assert not result.ok and len(result.summary) <= 3000
    assert time.monotonic() - started - result.seconds < 20.0  # kgen's own share of the time


@pytest.mark.parametrize("template, words", [
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
     "still rendering"),
    ('{{ "x" * 1000000000 }}', "repetition"),
    ("{{ 2 ** 100000000 }}", "exponent"),
    ('{% for i in range(100000) %}{{ "y" * 1000 }}{% endfor %}', "more than"),
])
def test_a_prompt_set_that_never_ends_is_stopped(tmp_path, monkeypatch, template, words):
    """A user's own prompt set (the sandbox bounds each range(), not loops inside loops)."""
    from kgen.loop import prompts

    monkeypatch.setattr(prompts, "RENDER_SECONDS", 0.5)
    (tmp_path / "system.md.j2").write_text(template)
    with _fast(5.0), pytest.raises(UsageError, match=words):
        prompts.render("system.md.j2", str(tmp_path))
    (tmp_path / "system.md.j2").write_text('{% for i in range(3) %}{{ "ab" * 2 }}{% endfor %}')
    assert prompts.render("system.md.j2", str(tmp_path)) == "abababababab\n"
