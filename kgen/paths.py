"""Where the shipped data folders (prompts/, reference_kernels/) live: installed or checkout."""

from __future__ import annotations

from pathlib import Path

from kgen.errors import EnvironmentProblem


def data_dir(name: str) -> Path:
    """kgen/<name>/ in an installed wheel, <repo>/<name>/ beside kgen/ in a checkout."""
    here = Path(__file__).resolve().parent
    for folder in (here / name, here.parent / name):
        if folder.is_dir():
            return folder
    raise EnvironmentProblem(f"kgen's {name}/ folder is missing from this installation")
