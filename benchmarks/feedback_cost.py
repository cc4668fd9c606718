"""What the extra checks cost per candidate, on this GPU: the Nsight Compute profile of a passing
candidate and each compute-sanitizer tool on a failing one, wall seconds, next to the worker's own
evaluation. Run on a GPU machine: `python -m benchmarks.feedback_cost [--json FILE]`."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from pathlib import Path

from kgen.arch import Arch, local_gpu
from kgen.author.space import default, render
from kgen.compile import compile_source
from kgen.gpu import profile, sanitizer
from kgen.gpu.evaluate import EvalOptions, evaluate, make_request
from kgen.loop.candidate import parse_contract
from kgen.ops import load_op
from kgen.toolkit import tool

ROOT = Path(__file__).resolve().parent.parent
CHEATS = ROOT / "tests" / "data" / "cheats"
SPEC = load_op("gemm")


def _build(source: str):
    target = local_gpu()[1]
    contract, problems = parse_contract(source, SPEC)
    compiled = compile_source(source, target)
    if contract is None or not compiled.ok:
        raise SystemExit(f"does not build: {problems} {compiled.summary}")
    return contract, compiled, target


def passing(name: str, source: str) -> dict:
    """The quick evaluation a loop round runs, then the profile it adds."""
    contract, compiled, target = _build(source)
    options = EvalOptions.quick(SPEC, profile=False, sanitize=False)
    started = time.monotonic()
    result = evaluate(compiled, contract, SPEC, target, options=options)
    evaluation_s = time.monotonic() - started
    request = make_request(SPEC, contract, options)
    started = time.monotonic()
    found = profile.collect(request, compiled.cubin or b"")
    profile_s = time.monotonic() - started
    return {"kernel": name, "verdict": result.verdict if result else "?",
            "evaluation_s": round(evaluation_s, 2), "profile_s": round(profile_s, 2),
            "profile": found.short() if not found.error else f"error: {found.error}"}


def failing(name: str) -> dict:
    """The validation that finds the fault, then each sanitizer tool on its own at that size."""
    contract, compiled, target = _build((CHEATS / name).read_text())
    options = EvalOptions(bench_sizes=(), profile=False, sanitize=False)
    started = time.monotonic()
    result = evaluate(compiled, contract, SPEC, target, options=options)
    row = {"kernel": name, "verdict": result.verdict if result else "?",
           "evaluation_s": round(time.monotonic() - started, 2)}
    request, _ = sanitizer.failing_request(make_request(SPEC, contract, options),
                                           result.extra.get("sizes") if result else None)
    for one in ("memcheck", "racecheck", "initcheck"):
        started = time.monotonic()
        found, error, note = sanitizer.run_tool(str(tool("compute-sanitizer")), one, request,
                                                compiled.cubin or b"", 120.0, False)
        row[f"{one}_s"] = round(time.monotonic() - started, 2)
        row[one] = error or (f"{len(found)} findings" if found else "clean")
        if note:
            row[f"{one}_note"] = note
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    if local_gpu() is None:
        raise SystemExit("no GPU here")
    target = local_gpu()[1]
    rows = []
    for row in measured(target):  # each row as it is measured, so a cut run keeps what it had
        rows.append(row)
        print("  ".join(f"{k}={v}" for k, v in row.items()), flush=True)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=2))


def measured(target: Arch) -> Iterator[dict]:
    """The rows in turn: two passing kernels (profile cost), then three failing ones (sanitizer)."""
    yield passing("correct_tiled.cu", (CHEATS / "correct_tiled.cu").read_text())
    yield passing("builtin mma float16", render(default(target, "float16"), "float16"))
    for name in ("oob_write.cu", "race_no_sync.cu", "uninit_smem.cu"):
        yield failing(name)


if __name__ == "__main__":
    main()
