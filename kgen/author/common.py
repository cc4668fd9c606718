"""What every builtin template shares: reading a template file, filling its parameter block, and
the `// kgen:` contract header.

A template is a real .cu file in templates/ that compiles on its own: its parameters sit in a
block between two marker lines, with defaults. Rendering replaces that block with the chosen
parameters and the token KGEN_KERNEL with the kernel's name, and pastes in the shared headers it
includes by name (`#include "memops.cuh"`), so the result is one self-contained file. A template
whose file holds several kernels (rowwise: one per class of row length) ends with a second marked
block, the kernels, which rendering replaces too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "templates"
BEGIN = "// ---- kgen:params begin"
END = "// ---- kgen:params end ----"
KERNELS_BEGIN = "// ---- kgen:kernels begin"
KERNELS_END = "// ---- kgen:kernels end ----"


def template_path(name: str) -> Path:
    return TEMPLATES / f"{name}.cu"


def fill(name: str, params: str, kernel: str, kernels: str | None = None) -> str:
    """Template `name` with its parameter block replaced by `params` and its kernel named; with
    `kernels`, its kernels block (marker lines kept) replaced by that text."""
    text = template_path(name).read_text()
    head, rest = text.split(BEGIN, 1)
    _, body = rest.split(END + "\n", 1)
    if kernels is not None:
        before, rest = body.split(KERNELS_BEGIN, 1)
        marker, rest = rest.split("\n", 1)
        _, after = rest.split(KERNELS_END, 1)
        body = (before + KERNELS_BEGIN + marker + "\n" + kernels.rstrip() + "\n" + KERNELS_END
                + after)
    return params.rstrip() + "\n" + with_headers(body).replace("KGEN_KERNEL", kernel)


def with_headers(text: str) -> str:
    """`text` with each shared header it includes by name pasted in place of the #include."""
    return _LOCAL_INCLUDE.sub(_paste, text)


_LOCAL_INCLUDE = re.compile(r'^#include "(\w+\.cuh)"\n', re.MULTILINE)


def _paste(match: re.Match) -> str:
    """A shared header's text in place of its #include (without its include guard)."""
    text = (TEMPLATES / match.group(1)).read_text()
    return text.replace("#pragma once\n", "")


def contract_header(op: str, dtype: str, choices: str, launch: str | Sequence[str],
                    about: str) -> str:
    """The contract lines (one launch line per entry of `launch`) plus a comment saying who wrote
    the file and what it is."""
    launches = (launch,) if isinstance(launch, str) else tuple(launch)
    return (f"// kgen: op={op} dtype={dtype}\n"
            f"// kgen: choices {choices}\n"
            + "".join(f"// kgen: launch {line}\n" for line in launches) +
            f"// Written by kgen's builtin author (rule-based templates + search, not a language "
            f"model).\n// {about}\n\n")
