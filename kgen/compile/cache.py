"""The compile cache: results keyed by a hash of everything that decides them (source, the local
headers it includes, arch, flags, nvcc version); a hit returns in milliseconds."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from kgen import toolkit
from kgen.arch import Arch
from kgen.compile.includes import local_headers
from kgen.compile.records import CompileResult, Diagnostic, ResourceUsage

FORMAT = 3  # bump whenever diagnostics parsing changes: entries store parsed records


def cache_dir() -> Path:
    """KGEN_CACHE_DIR, else $XDG_CACHE_HOME/kgen, else ~/.cache/kgen."""
    if os.environ.get("KGEN_CACHE_DIR"):
        return Path(os.environ["KGEN_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kgen"


def worth_keeping(result: CompileResult) -> bool:
    """Timeouts and toolchain failures (memory limit, a crashed nvcc) depend on the limits and
    the machine, not only the source: never cache them."""
    return not any(d.category == "toolchain" for d in result.diagnostics)


def key(raw: bytes, arch: Arch, flags: Sequence[str], include_dir: Path | None,
        embed_ptx: bool) -> str:
    h = hashlib.sha256()
    parts = [str(FORMAT), arch.name, toolkit.nvcc_version(), json.dumps(list(flags)),
             str(embed_ptx), str(include_dir or "")]
    for part in parts:
        h.update(part.encode() + b"\0")
    h.update(raw)
    # Headers from the source's folder are part of what is compiled: an edited header misses.
    text = raw.decode("utf-8", errors="replace")
    for header in local_headers(text, include_dir):
        h.update(b"\0" + str(header).encode() + b"\0" + header.read_bytes())
    return h.hexdigest()


def load(key: str) -> CompileResult | None:
    folder = cache_dir() / "compile" / key[:2] / key
    try:
        meta = json.loads((folder / "result.json").read_text())
        cubin = (folder / "kernel.cubin").read_bytes() if meta["ok"] else None
        ptx = (folder / "kernel.ptx").read_text() if (folder / "kernel.ptx").exists() else None
    except (OSError, ValueError, KeyError):
        return None
    diags = tuple(Diagnostic(**{**d, "notes": tuple(d["notes"])}) for d in meta["diagnostics"])
    resources = {k: ResourceUsage(**v) for k, v in meta["resources"].items()}
    return CompileResult(meta["arch"], cubin, diags, resources, meta["seconds"], meta["log"],
                         ptx, meta["summary"], cached=True, isolation=meta["isolation"])


def store(key: str, result: CompileResult) -> None:
    folder = cache_dir() / "compile" / key[:2] / key
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # an unwritable cache only costs speed
    staging = Path(tempfile.mkdtemp(dir=folder.parent))
    try:
        meta = {"ok": result.ok, "arch": result.arch, "seconds": result.seconds,
                "log": result.log, "summary": result.summary, "isolation": result.isolation,
                "diagnostics": [d.__dict__ | {"notes": list(d.notes)} for d in result.diagnostics],
                "resources": {k: r.__dict__ | {"extra": dict(r.extra)}
                              for k, r in result.resources.items()}}
        if result.cubin is not None:
            (staging / "kernel.cubin").write_bytes(result.cubin)
        if result.ptx is not None:
            (staging / "kernel.ptx").write_text(result.ptx)
        (staging / "result.json").write_text(json.dumps(meta))
        os.replace(staging, folder)  # atomic: a reader sees all of an entry or none
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
