"""Compare a candidate's output with the reference; say what is wrong in words a model can use.

Works on torch tensors on any device (the CPU tests build them by hand).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgen.sandbox import poison

# Tile edges to try when asking "are only the partial edge tiles wrong?", largest first.
_TILES = (256, 128, 64, 32, 16, 8)


@dataclass(frozen=True)
class Mismatch:
    """How an output differs from its reference; `bad == 0` means it matched."""

    bad: int
    total: int
    max_abs: float
    max_rel: float
    unwritten: int  # the output poison left in place, bit for bit: never written
    where: str  # rows/cols ranges, edge tiles, constant offset ...
    example: str
    computed: int = 0  # NaN/inf the kernel wrote itself (not the poison, not a guard pattern)
    guard_copies: int = 0  # an input guard band's exact pattern: copied from outside an input

    @property
    def ok(self) -> bool:
        return self.bad == 0

    def text(self, name: str) -> str:
        """`412 of 16383 outputs of C off (max abs 3.1, max rel 0.4; rows 96-126 only)`."""
        parts = [f"max abs {_num(self.max_abs)}", f"max rel {_num(self.max_rel)}"]
        head = f"{self.bad} of {self.total} outputs of {name} off ({', '.join(parts)}"
        tail = f"; {self.where}" if self.where else ""
        example = f"; e.g. {self.example}" if self.example else ""
        return f"{head}{tail}{example})"


def _num(x: float) -> str:
    if x != x or x in (float("inf"), float("-inf")):
        return str(x)
    return f"{x:.3g}"


def compare(out: Any, ref: Any, atol: float, rtol: float, name: str = "C",
            also: Any = None) -> Mismatch:
    """Elementwise |out - ref| <= atol + rtol*|ref|; NaN/inf in out always count as off. The
    non-finite ones are told apart by their bits: poison (never written), a guard pattern
    (copied from outside an input) or computed. `also`: a second reference an element may
    instead be within the same tolerance of (a KernelBench problem's Model in the problem's own
    dtype); the figures reported stay those against `ref`."""
    import torch

    ref64 = ref.to(torch.float64)
    out64 = out.to(device=ref.device, dtype=torch.float64)
    diff = (out64 - ref64).abs()
    tol = atol + rtol * ref64.abs()
    ok = diff <= tol
    if also is not None:
        also64 = also.to(device=ref.device, dtype=torch.float64)
        ok |= (out64 - also64).abs() <= atol + rtol * also64.abs()
    ok &= torch.isfinite(out64) | ~torch.isfinite(ref64)
    bad_mask = ~ok
    bad = int(bad_mask.sum())
    if bad == 0:
        return Mismatch(0, out.numel(), float(diff.max()) if diff.numel() else 0.0, 0.0, 0, "", "")
    finite = torch.isfinite(diff)
    max_abs = float(diff[finite].max()) if bool(finite.any()) else float("nan")
    rel = diff / ref64.abs().clamp_min(atol)
    max_rel = float(rel[finite].max()) if bool(finite.any()) else float("nan")
    kinds = _nonfinite_kinds(out, bad_mask.to(out.device))
    where = describe_where(out64, ref64, bad_mask, kinds, bad, tol)
    return Mismatch(bad, out.numel(), max_abs, max_rel, kinds[0], where,
                    _example(out64, ref64, bad_mask, name), kinds[1], kinds[2])


def _nonfinite_kinds(out: Any, bad_mask: Any) -> tuple[int, int, int]:
    """(never written, computed non-finite, guard pattern copied) among the bad outputs."""
    import torch

    if not out.is_floating_point():
        return 0, 0, 0
    unwritten = poison.holds(out, poison.OUTPUT) & bad_mask
    copied = poison.holds(out, poison.GUARD) & bad_mask
    computed = ~torch.isfinite(out) & bad_mask & ~unwritten & ~copied
    return int(unwritten.sum()), int(computed.sum()), int(copied.sum())


def describe_where(out: Any, ref: Any, bad_mask: Any, kinds: tuple[int, int, int], bad: int,
                   tol: Any) -> str:
    """The pattern of the bad outputs: unwritten, computed NaN, constant offset/scale,
    transposed, rows/cols."""
    unwritten, computed, copied = kinds
    notes = []
    if unwritten == bad:
        notes.append("all of them still hold the output poison: never written")
    elif unwritten:
        notes.append(f"{unwritten} still hold the output poison (never written)")
    if computed:
        notes.append(f"{'all of them' if computed == bad else computed} are NaN/inf the kernel "
                     "wrote itself (not the poison); the inputs are finite, so it read memory "
                     "outside the inputs (their guard bands hold NaN) or uninitialized memory")
    if copied:
        notes.append(f"{copied} hold an input guard band's exact pattern: copied from outside "
                     "an input")
    pattern = _pattern(out, ref, tol)
    if pattern:
        notes.append(pattern)
    if out.dim() == 2:
        notes.append(_region(bad_mask))
    return "; ".join(n for n in notes if n)


def _pattern(out: Any, ref: Any, tol: Any) -> str:
    """A constant offset, a constant factor or a transpose that would make every output pass."""
    import torch

    if not bool(torch.isfinite(out).all()):
        return ""
    delta = float((out - ref).median())
    if bool(((out - delta - ref).abs() <= tol).all()):
        return f"every output is off by the same constant {delta:+.4g}"
    nonzero = ref.abs() > 1e-6
    if bool(nonzero.any()):
        ratio = float((out[nonzero] / ref[nonzero]).median())
        if ratio != 0 and bool(((out / ratio - ref).abs() <= tol).all()):
            return f"every output is scaled by the same factor {ratio:.4g}"
    if out.dim() == 2 and out.shape[0] == out.shape[1] > 1:
        if bool(((out - ref.t()).abs() <= tol.t()).all()):
            return "the output equals the transpose of the reference (row/column index swapped)"
    return ""


def _span(indices: list[int]) -> str:
    lo, hi = min(indices), max(indices)
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def _region(bad_mask: Any) -> str:
    """Which rows/cols hold the bad outputs; whether only partial edge tiles are affected."""
    rows_hit = bad_mask.any(dim=1).nonzero().flatten().tolist()
    cols_hit = bad_mask.any(dim=0).nonzero().flatten().tolist()
    n_rows, n_cols = bad_mask.shape
    rows = f"rows {_span(rows_hit)}" + (" (all)" if len(rows_hit) == n_rows else "")
    cols = f"cols {_span(cols_hit)}" + (" (all)" if len(cols_hit) == n_cols else "")
    text = f"{rows}, {cols}"
    edge = _edge_tiles(bad_mask)
    if edge:
        text += f"; {edge}"
    elif len(rows_hit) < n_rows and len(cols_hit) == n_cols:
        text += f"; only {len(rows_hit)} of {n_rows} rows{_stride(rows_hit, 'row')}"
    elif len(cols_hit) < n_cols and len(rows_hit) == n_rows:
        text += f"; only {len(cols_hit)} of {n_cols} cols{_stride(cols_hit, 'col')}"
    return text


def _stride(hit: list[int], what: str) -> str:
    """` (every 2nd row from 1)` when the hits are evenly spaced, else nothing."""
    steps = {b - a for a, b in zip(hit, hit[1:], strict=False)}
    if len(hit) < 2 or len(steps) != 1 or steps == {1}:
        return ""
    step = steps.pop()
    nth = {2: "2nd", 3: "3rd"}.get(step, f"{step}th")
    return f" (every {nth} {what} from {hit[0]})"


def _edge_tiles(bad_mask: Any) -> str:
    """Smallest tile whose full interior is right: then only the partial edge tiles are wrong."""
    n_rows, n_cols = bad_mask.shape
    for tile in sorted(_TILES):
        full_r, full_c = (n_rows // tile) * tile, (n_cols // tile) * tile
        if (full_r == n_rows and full_c == n_cols) or full_r == 0 or full_c == 0:
            continue
        if not bool(bad_mask[:full_r, :full_c].any()):
            edges = [f"rows >= {full_r}" if bool(bad_mask[full_r:].any()) else "",
                     f"cols >= {full_c}" if bool(bad_mask[:, full_c:].any()) else ""]
            return (f"only the partial edge tiles are wrong ({' and '.join(e for e in edges if e)}"
                    f", past the last multiple of {tile}): check the bounds handling")
    return ""


def _example(out: Any, ref: Any, bad_mask: Any, name: str) -> str:
    first = bad_mask.nonzero()[0].tolist()
    index = ",".join(str(i) for i in first)
    got, want = float(out[tuple(first)]), float(ref[tuple(first)])
    return f"{name}[{index}] = {got:.6g}, expected {want:.6g}"


def changed(before: Any, after: Any) -> int:
    """How many elements differ bitwise (NaN-safe: compares the raw bits)."""
    import torch

    ints = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    a = before.contiguous().view(ints[before.element_size()])
    b = after.to(before.device).contiguous().view(ints[after.element_size()])
    return int((a != b).sum())


# ---- integer outputs, whole-output checks (row sums, relative error) ----

# What an integer output holds before the kernel writes it: recognisable in a report (0xDEADBEEF
# and its 64-bit double), not a value an index or a count would take.
INT_POISON = {4: -0x21524111, 8: -0x2152411021524111}


def compare_exact(out: Any, ref: Any, name: str) -> Mismatch:
    """Integer outputs (argmax indices, counts) must equal the reference exactly."""
    import torch

    out64 = out.to(device=ref.device, dtype=torch.int64)
    ref64 = ref.to(torch.int64)
    bad_mask = out64 != ref64
    bad = int(bad_mask.sum())
    if bad == 0:
        return Mismatch(0, out.numel(), 0.0, 0.0, 0, "", "")
    unwritten = int((out64 == INT_POISON[out.element_size()]).sum()) if (
        out.element_size() in INT_POISON) else 0
    notes = []
    if unwritten:
        notes.append(f"{unwritten} still hold the poison {INT_POISON[out.element_size()]} "
                     "(never written)")
    if out64.dim() == 1 and bad:
        notes.append(f"indices {_span(bad_mask.nonzero().flatten().tolist())}")
    elif out64.dim() == 2:
        notes.append(_region(bad_mask))
    first = bad_mask.nonzero()[0].tolist()
    index = ",".join(str(i) for i in first)
    example = f"{name}[{index}] = {int(out64[tuple(first)])}, expected {int(ref64[tuple(first)])}"
    diff = (out64 - ref64).abs()
    rel = float((diff.double() / ref64.abs().clamp_min(1).double()).max())
    return Mismatch(bad, out.numel(), float(diff.max()), rel, unwritten, "; ".join(notes), example)


def relative_error(out: Any, ref: Any) -> float | None:
    """||out - ref|| / ||ref|| over the whole output (None when the reference is all zero)."""
    import torch

    ref64 = ref.to(torch.float64)
    norm = float(torch.linalg.vector_norm(ref64))
    if norm == 0 or norm != norm:
        return None
    out64 = out.to(device=ref.device, dtype=torch.float64)
    return float(torch.linalg.vector_norm(out64 - ref64)) / norm


def row_sums_problem(out: Any, tolerance: float, log: bool = False) -> str:
    """Words for rows (along the last dim) whose sum is not 1, or "" when every row sums to 1;
    with `log`, rows of log-probabilities: the sum of their exps."""
    import torch

    rows = out.to(torch.float64).reshape(-1, out.shape[-1])
    allowed: Any = tolerance
    if log:
        # Storing y_i rounds it by up to half an ulp, |y_i| eps / 2, which moves exp(y_i) by
        # about exp(y_i) |y_i| eps / 2: a row of log-probabilities may miss 1 by that summed
        # over the row (a bfloat16 log_softmax row of 4097 missed by 0.014, past 2 eps), so
        # each row is allowed twice that on top of the tolerance.
        probabilities = rows.exp()
        allowed = tolerance + torch.finfo(out.dtype).eps * (probabilities * rows.abs()).sum(-1)
        rows = probabilities
    sums = rows.sum(dim=-1)
    bad = ((sums - 1).abs() > allowed) | ~torch.isfinite(sums)
    count = int(bad.sum())
    if not count:
        return ""
    first = int(bad.nonzero()[0])
    what = "rows' exps do not sum to 1 (the exps of row" if log else "rows do not sum to 1 (row"
    limit = float(allowed[first]) if log else tolerance
    return (f"{count} of {sums.numel()} {what} {first} sum to {float(sums[first]):.6g}; "
            f"tolerance {limit:g}): normalize every row")
