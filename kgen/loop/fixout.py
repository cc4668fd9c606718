"""Where `kgen fix` puts its result: never over the input unless --in-place (then with a backup
that never replaces an earlier one), and only the lines that changed.

The model works on the file as text (non-UTF-8 bytes read as U+FFFD, line ends as it likes). The
result written keeps every unchanged line byte for byte, with its own line ending; changed and new
lines are written in the file's usual line ending. A symlink is followed: its target is fixed and
the link stays a link.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from kgen.loop.session import RunSummary


def merge_lines(original: bytes, fixed: str) -> bytes:
    """`original` with only the lines that differ from `fixed` replaced (compared as the model
    saw them: decoded with replacement, without their line ends)."""
    old = original.splitlines(keepends=True)
    new = re.split(r"\r\n|\r|\n", fixed)  # the line ends bytes.splitlines knows
    if new and new[-1] == "":
        new.pop()  # the text's final newline, not an empty last line
    ending = _usual_ending(old)
    out: list[bytes] = []
    matcher = difflib.SequenceMatcher(None, [_text(x) for x in old], new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out += old[i1:i2]  # byte for byte, with its own line end
        else:
            out += [new[j].encode("utf-8") + ending for j in range(j1, j2)]
    # A line that had no end (the file's last) gets one if lines now follow it; the file ends
    # without a newline again only if it did before.
    out = [x if _ends(x) or i == len(out) - 1 else x + ending for i, x in enumerate(out)]
    if out and old and not _ends(old[-1]):
        out[-1] = out[-1].rstrip(b"\r\n")
    elif out and not _ends(out[-1]):
        out[-1] += ending
    return b"".join(out)


def _text(line: bytes) -> str:
    return line.rstrip(b"\r\n").decode("utf-8", errors="replace")


def _ends(line: bytes) -> bool:
    return line.endswith((b"\n", b"\r"))


def _usual_ending(lines: list[bytes]) -> bytes:
    crlf = sum(line.endswith(b"\r\n") for line in lines)
    lone_cr = sum(line.endswith(b"\r") for line in lines)
    lf = len(lines) - crlf - lone_cr
    return b"\r\n" if crlf > max(lf, lone_cr) else b"\r" if lone_cr > lf else b"\n"


def backup_path(path: Path) -> Path:
    """FILE.orig, else FILE.orig.1, FILE.orig.2, ...: the first that does not exist."""
    candidate, n = path.with_name(path.name + ".orig"), 0
    while os.path.lexists(candidate):
        n += 1
        candidate = path.with_name(f"{path.name}.orig.{n}")
    return candidate


def write_backup(path: Path) -> Path:
    """Copy `path` to a new backup file, created exclusively (never over an existing one)."""
    while True:
        target = backup_path(path)
        try:
            with open(target, "xb") as handle:
                handle.write(path.read_bytes())
        except FileExistsError:
            continue  # another process took that name first
        shutil.copystat(path, target)
        return target


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Temp file and rename in the same folder, keeping the file's mode."""
    tmp = path.with_name(f".{path.name}.kgen-{os.getpid()}")
    tmp.write_bytes(data)
    if path.exists():
        shutil.copymode(path, tmp)
    os.replace(tmp, path)


def write_fixed(path: Path, summary: RunSummary, output: Path | None, in_place: bool,
                echo: Callable[[str], None]) -> str | None:
    """Write the best candidate and show the diff; returns the path written, or None."""
    if summary.best is None:
        echo(f"not fixed: see {summary.run_dir}/report.md for the remaining errors")
        return None
    source = path.resolve()  # a link is followed: its target is what gets fixed
    if output is not None and output.resolve() == source:
        in_place = True  # -o naming the input itself: never without the backup
    original = source.read_bytes()
    fixed = merge_lines(original, Path(summary.best).read_bytes().decode("utf-8", "replace"))
    if fixed == original:
        echo(f"{path} needs no change ({summary.stop_reason})")
        return None
    before = [_text(x) + "\n" for x in original.splitlines(keepends=True)]
    after = [_text(x) + "\n" for x in fixed.splitlines(keepends=True)]
    echo("".join(difflib.unified_diff(before, after, f"{path} (before)", f"{path} (fixed)",
                                      n=1)).rstrip())
    if in_place:
        echo(f"backup of the original: {write_backup(source)}")
        target = source
    else:
        target = output or path.with_name(path.stem + ".fixed" + path.suffix)
    write_bytes_atomic(target, fixed)
    echo(f"wrote {target}")
    return str(target)
