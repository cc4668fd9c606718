"""The GPUs this process may use, asked of nvidia-smi (never through CUDA: the parent creates no
context), and the worker slots laid over them: one warm worker per GPU, or N per GPU."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class Gpu:
    index: str  # nvidia-smi's index (PCI order)
    uuid: str  # what a worker is pinned by: CUDA_VISIBLE_DEVICES=GPU-...
    name: str
    arch: str  # sm_90


@dataclass(frozen=True)
class Slot:
    """Where one worker runs: a GPU (None: whatever the environment gives) and its number."""

    gpu: Gpu | None
    number: int

    @property
    def label(self) -> str:
        return f"gpu{self.gpu.index}.w{self.number}" if self.gpu else f"w{self.number}"


def parse_listing(text: str) -> list[Gpu]:
    """Rows of `nvidia-smi --query-gpu=index,uuid,name,compute_cap --format=csv,noheader`."""
    found = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4 or not parts[0].isdigit():
            continue
        name = ",".join(parts[2:-1])
        cap = parts[-1].replace(".", "")
        if cap.isdigit():
            found.append(Gpu(parts[0], parts[1], name, f"sm_{cap}"))
    return found


def restrict(gpus: list[Gpu], visible: str | None) -> list[Gpu]:
    """The GPUs CUDA_VISIBLE_DEVICES leaves (indices as nvidia-smi numbers them, or UUIDs)."""
    if visible is None:
        return gpus
    wanted = [v.strip() for v in visible.split(",") if v.strip()]
    out = []
    for want in wanted:
        match = next((g for g in gpus if want in (g.index, g.uuid) or
                      (want.startswith("GPU-") and g.uuid.startswith(want))), None)
        if match is None:
            break  # CUDA stops at the first entry it cannot resolve
        out.append(match)
    return out


def visible_gpus() -> list[Gpu]:
    """Every GPU this process may use; [] without nvidia-smi or a GPU."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        done = subprocess.run([smi, "--query-gpu=index,uuid,name,compute_cap",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if done.returncode != 0:
        return []
    return restrict(parse_listing(done.stdout), os.environ.get("CUDA_VISIBLE_DEVICES"))


def slots(gpus: list[Gpu], per_gpu: int = 1) -> list[Slot]:
    """per_gpu workers on every GPU, spread GPU-first so the first N slots cover N GPUs."""
    if not gpus:
        return [Slot(None, k) for k in range(per_gpu)]
    return [Slot(gpu, k) for k in range(per_gpu) for gpu in gpus]
