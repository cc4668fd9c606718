"""Where the shipped data folders (prompts/, reference_kernels/) live, installed or in a checkout."""

from __future__ import annotations

import importlib.resources
from pathlib import Path


def data_dir(name: str) -> Path:
    """The folder `name` ("prompts" or "reference_kernels"), installed as kgen.<name> or in the repo."""
    try:
        found = importlib.resources.files(f"kgen.{name}")
        path = Path(str(found))
        if path.is_dir():
            return path
    except ModuleNotFoundError:
        pass
    # Running from a source checkout (PYTHONPATH=.): the folders sit beside kgen/.
    return Path(__file__).resolve().parent.parent / name
