"""results.jsonl read back for --resume, as data that may be damaged or hostile.

A run killed mid-write leaves a torn last line: it is cut off (the attempt it held is redone, and
kgen says so). Any other line that is not a valid attempt record stops the resume with its line
number, unless the user asks to skip such lines; skipped lines are moved to
results.corrupt.jsonl, never silently dropped.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgen.compile import Diagnostic
from kgen.errors import UsageError
from kgen.verdict import Evaluation

CORRUPT_FILE = "results.corrupt.jsonl"


@dataclass
class Results:
    records: list[dict[str, Any]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # what was repaired, for the user
    set_aside: int = 0  # corrupt lines moved to CORRUPT_FILE


def read_results(path: Path, skip_corrupt: bool = False) -> Results:
    """The finished attempts' records in order; torn tail repaired, corrupt lines refused or
    (with skip_corrupt) set aside."""
    out = Results()
    if not path.exists():
        return out
    data = path.read_bytes()
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    good: list[bytes] = []
    bad: list[tuple[int, bytes, str]] = []
    for number, raw in enumerate(lines, start=1):
        problem = _problem(raw, out.records)
        if problem:
            bad.append((number, raw, problem))
        else:
            good.append(raw)
    if tail:
        if _problem(tail, out.records) is None:
            good.append(tail)  # whole, only its newline was lost
        else:
            nxt = 1 + max((r["attempt"] for r in out.records), default=0)
            out.notices.append(f"{path.name}: its last line was cut off mid-write (the run "
                               f"stopped while saving); it is dropped and attempt {nxt} is redone")
    if bad and not skip_corrupt:
        number, _, problem = bad[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise UsageError(f"{path} line {number} is not a valid attempt record: {problem}{more}; "
                         "repair or delete that line, or pass --skip-corrupt to set it aside")
    if bad:
        out.set_aside = len(bad)
        with open(path.parent / CORRUPT_FILE, "ab") as aside:
            aside.write(b"".join(raw + b"\n" for _, raw, _ in bad))
        out.notices.append(f"{path.name}: set aside {len(bad)} corrupt line(s) (line(s) "
                           f"{', '.join(str(n) for n, _, _ in bad)}) in {CORRUPT_FILE}")
    if bad or tail:
        _rewrite(path, b"".join(raw + b"\n" for raw in good))
    return out


def _problem(raw: bytes, records: list[dict[str, Any]]) -> str | None:
    """Why one line is not a valid record (None: it is, and it joins `records`)."""
    try:
        record = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "not a JSON object"
    problem = check_record(record, 1 + max((r["attempt"] for r in records), default=0))
    if problem is None:
        records.append(record)
    return problem


def check_record(record: Any, at_least: int) -> str | None:
    """Why `record` cannot be an attempt record following attempt `at_least - 1`."""
    if not isinstance(record, dict):
        return "not a JSON object"
    number, rnd = record.get("attempt"), record.get("round")
    if type(number) is not int or number < at_least:
        return f"'attempt' must be a whole number above the previous one (got {number!r:.40})"
    if type(rnd) is not int or rnd < 0:
        return f"'round' must be a whole number >= 0 (got {rnd!r:.40})"
    for key in ("status", "choices", "notes"):
        if not isinstance(record.get(key, ""), str):
            return f"'{key}' must be text"
    if not isinstance(record.get("compile"), (dict, type(None))):
        return "'compile' must be an object or null"
    try:
        for p in record.get("problems", []):
            Diagnostic(**{**p, "notes": tuple(p["notes"])}, category="contract")
            _check_problem(p)
        saved = record.get("evaluation") or record.get("run")
        if saved is not None:
            Evaluation.from_json(saved)
            _check_evaluation(saved)
    except (TypeError, KeyError, ValueError, AttributeError):
        return "its 'problems' or 'evaluation' do not have the expected fields"
    return None


def _check_problem(p: dict[str, Any]) -> None:
    for key in ("line", "column"):
        if p.get(key) is not None and (type(p[key]) is not int or p[key] < 1):
            raise ValueError(key)
    if not all(isinstance(p.get(k, ""), str) for k in ("severity", "message", "source")) or \
            not all(isinstance(n, str) for n in p["notes"]):
        raise ValueError("text")


def _check_evaluation(saved: dict[str, Any]) -> None:
    """The fields the report and the prompts format, with the types they format them as."""
    number = (int, float)
    for key, kind in (("message", str), ("device", str), ("note", str), ("seconds", number),
                      ("extra", dict), ("timings", list), ("checks", list)):
        if key in saved and (not isinstance(saved[key], kind) or isinstance(saved[key], bool)):
            raise ValueError(key)
    for t in saved.get("timings", []):
        if not isinstance(t.get("sizes"), dict) or not all(
                isinstance(t.get(k), number) for k in ("ms", "p20_ms", "p80_ms")):
            raise ValueError("timings")


def _rewrite(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.repair")
    tmp.write_bytes(data)
    os.replace(tmp, path)
