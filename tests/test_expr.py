"""Launch expressions: a small AST walker, never eval()."""

from __future__ import annotations

import pytest

from kgen.expr import ExprError, check, evaluate

SIZES = {"M": 127, "N": 129, "K": 65}


@pytest.mark.parametrize("text, value", [
    ("cdiv(N, 128)", 2), ("cdiv(M,16) * 16", 128), ("min(M, N) // 2", 63), ("max(M, N, K)", 129),
    ("(M + 63) // 64 % 2", 0), ("-K + 70", 5), ("256", 256),
])
def test_values(text, value):
    assert evaluate(text, SIZES) == value


@pytest.mark.parametrize("text, words", [
    ("N / 2", "use //"), ("Q + 1", "unknown name 'Q'"), ("__import__('os')", "not allowed"),
    ("M.bit_length()", "not allowed"), ("M ** 2", "not allowed"), ("cdiv(M)", "takes 2"),
    ("M // (N - N)", "division by zero"), ("cdiv(M, 0)", "cdiv by zero"),
    ("1.5 * M", "not allowed"),
    ("(M", "cannot parse"), ("lambda: 1", "not allowed"),
])
def test_rejected(text, words):
    with pytest.raises(ExprError, match=words.replace("(", r"\(").replace("*", r"\*")):
        evaluate(text, SIZES)


def test_check_accepts_symbols_without_values():
    check("cdiv(N, 128) * max(M, 1)", {"M", "N", "K"})
    with pytest.raises(ExprError):
        check("cdiv(N, 128) * X", {"M", "N", "K"})
