"""What a translation unit reads, as the preprocessor itself decides it, and whether it may.

Before a compile, `nvcc -M` (the same nvcc, target, flags and isolation) lists every file the
preprocessor opens, in the device pass and the host pass. Its output is never shown: kgen only
classifies the paths. Allowed are the CUDA toolkit's and the host compiler's system headers, and
local headers: files of the source's folder with a header suffix, outside hidden folders, and for
a model-written candidate only those the user's own file already includes. Everything else is
refused before anything is compiled, with the same words whether the file exists or not.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kgen import toolkit

HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".cuh", ".inl", ".inc")


@functools.cache
def system_dirs() -> tuple[Path, ...]:
    """The CUDA toolkit's include folders and the host compiler's `#include <...>` search list."""
    root = toolkit.cuda_root()
    found = [root / "include", *root.glob("targets/*/include")]
    try:
        out = subprocess.run(["gcc", "-E", "-x", "c++", "-v", "-"], stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    listing = re.search(r"search starts here:\n(.*?)End of search list", out, re.DOTALL)
    lines = listing.group(1).splitlines() if listing else []
    found += [Path(ln.strip()) for ln in lines if ln.startswith(" /")]
    if not lines:  # no gcc to ask: the usual places
        found += [Path("/usr/include"), Path("/usr/local/include"), *Path("/usr/lib/gcc").glob(
            "*/*/include")]
    return tuple(dict.fromkeys(Path(os.path.realpath(p)) for p in found if p.is_dir()))


def parse_make_rule(text: str) -> list[str]:
    """The prerequisites of the make rule nvcc -M writes (escaped spaces and `$$` undone)."""
    joined = re.sub(r"\\\r?\n", " ", text)
    _, sep, rest = joined.partition(": ")
    if not sep:
        _, _, rest = joined.partition(":")
    words = re.findall(r"(?:\\.|[^\s\\])+", rest)
    return [re.sub(r"\\(.)", r"\1", w).replace("$$", "$") for w in words]


def header_problem(relative: str) -> str | None:
    """Why a path inside the source's folder is not a local header kgen lets be included."""
    parts = Path(relative).parts
    if any(p.startswith(".") for p in parts):
        return "it is in a hidden folder or is a hidden file"
    if not relative.endswith(HEADER_SUFFIXES):
        return f"only header files ({' '.join(HEADER_SUFFIXES)}) of the source's folder may be " \
               "included"
    return None


@dataclass(frozen=True)
class Visible:
    """What a compile may read: its own work folder, the system headers, and the local headers
    (None: any header of `folder`, for the user's own file; else exactly these, relative)."""

    workdir: Path
    folder: Path | None
    allowed: frozenset[str] | None

    def local(self, path: str) -> str | None:
        """`path` relative to the folder when it is a local header this compile may read."""
        if self.folder is None:
            return None
        listed = os.path.normpath(path if os.path.isabs(path) else self.workdir / path)
        real = os.path.realpath(listed)
        for candidate in (listed, real):
            if not Path(candidate).is_relative_to(self.folder):
                return None
            if header_problem(os.path.relpath(candidate, self.folder)):
                return None
        relative = os.path.relpath(listed, self.folder)
        return relative if self.allowed is None or relative in self.allowed else None

    def allows(self, path: str) -> bool:
        """Whether text from `path` (as a tool names it) may be shown."""
        real = Path(os.path.realpath(path if os.path.isabs(path) else self.workdir / path))
        if real.is_relative_to(self.workdir) or self.local(path) is not None:
            return True
        return any(real.is_relative_to(d) for d in system_dirs())


@dataclass(frozen=True)
class Classified:
    headers: tuple[str, ...]  # local headers read, relative to the folder
    refused: tuple[str, ...]  # paths as nvcc listed them


def classify(listed: Sequence[str], visible: Visible) -> Classified:
    """Split nvcc's dependency list into local headers, system headers (dropped) and refusals."""
    headers: list[str] = []
    refused: list[str] = []
    for path in listed:
        local = visible.local(path)
        if local is not None:
            headers.append(local)
        elif not visible.allows(path):
            refused.append(path)
    return Classified(tuple(dict.fromkeys(headers)), tuple(dict.fromkeys(refused)))


_WHERE = re.compile(r"^(?:In file included from |\s+from )?(?P<file>[^\s(:][^(:]*?)"
                    r"(?:\((?P<paren>\d+)\)|:(?P<colon>\d+))[:,]")
WITHHELD = "[withheld: a message about a file outside the allowed set]"


def scrub_log(log: str, visible: Visible) -> str:
    """The log without any record that names a file outside the allowed set: the record's
    header becomes WITHHELD and its indented lines (quoted source, carets, notes) go."""
    out: list[str] = []
    dropping = False
    for line in log.splitlines():
        m = _WHERE.match(line)
        if m and not visible.allows(m.group("file").strip()):
            if not dropping or not line[:1].isspace():
                out.append(WITHHELD)
            dropping = True
            continue
        if dropping and line[:1].isspace() and not m:
            continue
        dropping = False
        out.append(line)
    return "\n".join(out) + ("\n" if log.endswith("\n") else "")
