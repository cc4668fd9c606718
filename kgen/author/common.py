"""What every builtin template shares: reading a template file, filling its parameter block, and
the `// kgen:` contract header.

A template is a real .cu file in templates/ that compiles on its own: its parameters sit in a
block between two marker lines, with defaults. Rendering replaces that block with the chosen
parameters and the token KGEN_KERNEL with the kernel's name, and pastes in the shared headers it
includes by name (`#include "memops.cuh"`), so the result is one self-contained file.
"""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "templates"
BEGIN = "// ---- kgen:params begin"
END = "// ---- kgen:params end ----"


def template_path(name: str) -> Path:
    return TEMPLATES / f"{name}.cu"


def fill(name: str, params: str, kernel: str) -> str:
    """Template `name` with its parameter block replaced by `params` and its kernel named."""
    text = template_path(name).read_text()
    head, rest = text.split(BEGIN, 1)
    _, body = rest.split(END + "\n", 1)
    return params.rstrip() + "\n" + _LOCAL_INCLUDE.sub(_paste, body).replace("KGEN_KERNEL", kernel)


_LOCAL_INCLUDE = re.compile(r'^#include "(\w+\.cuh)"\n', re.MULTILINE)


def _paste(match: re.Match) -> str:
    """A shared header's text in place of its #include (without its include guard)."""
    text = (TEMPLATES / match.group(1)).read_text()
    return text.replace("#pragma once\n", "")


def contract_header(op: str, dtype: str, choices: str, launch: str, about: str) -> str:
    """The contract lines plus a comment saying who wrote the file and what it is."""
    return (f"// kgen: op={op} dtype={dtype}\n"
            f"// kgen: choices {choices}\n"
            f"// kgen: launch {launch}\n"
            f"// Written by kgen's builtin author (rule-based templates + search, not a language "
            f"model).\n// {about}\n\n")
