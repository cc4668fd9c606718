"""Where `kgen fix` puts its result: never over the input unless --in-place (then with a backup)."""

from __future__ import annotations

import difflib
import shutil
from collections.abc import Callable
from pathlib import Path

from kgen.loop.rundir import write_atomic
from kgen.loop.session import RunSummary


def write_fixed(path: Path, summary: RunSummary, output: Path | None, in_place: bool,
                echo: Callable[[str], None]) -> str | None:
    """Write the best candidate and show the diff; returns the path written, or None."""
    if summary.best is None:
        echo(f"not fixed: see {summary.run_dir}/report.md for the remaining errors")
        return None
    if output is not None and output.resolve() == path.resolve():
        in_place = True  # -o naming the input itself: never without the backup
    original = path.read_bytes().decode("utf-8", errors="replace")
    fixed = Path(summary.best).read_text()
    if fixed == original:
        echo(f"{path} needs no change ({summary.stop_reason})")
        return None
    diff = difflib.unified_diff(original.splitlines(keepends=True), fixed.splitlines(keepends=True),
                                f"{path} (before)", f"{path} (fixed)", n=1)
    echo("".join(diff).rstrip())
    if in_place:
        backup = path.with_name(path.name + ".orig")
        shutil.copy2(path, backup)
        target = path
        echo(f"backup of the original: {backup}")
    else:
        target = output or path.with_name(path.stem + ".fixed" + path.suffix)
    write_atomic(target, fixed)
    echo(f"wrote {target}")
    return str(target)
