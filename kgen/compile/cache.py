"""The compile cache: results keyed by a hash of everything that decides them (source, arch, flags,
nvcc version, the include folder and which local headers may be read); each entry also records
the local headers the preprocessor read with their hashes, so an edited header misses. A hit
returns in milliseconds. Entries hold the log as the run directory does: secrets redacted, host
paths shortened (kgen.textsafe)."""

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
from kgen.compile.records import CompileResult, Diagnostic, ResourceUsage
from kgen.textsafe import redact_secrets

FORMAT = 4  # bump whenever diagnostics parsing changes: entries store parsed records


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
        embed_ptx: bool, allowed: frozenset[str] | None = None) -> str:
    h = hashlib.sha256()
    parts = [str(FORMAT), arch.name, toolkit.nvcc_version(), json.dumps(list(flags)),
             str(embed_ptx), str(include_dir or ""),
             "any header" if allowed is None else json.dumps(sorted(allowed))]
    for part in parts:
        h.update(part.encode() + b"\0")
    h.update(raw)
    return h.hexdigest()


def header_hashes(include_dir: Path | None, headers: Sequence[str]) -> dict[str, str] | None:
    """sha256 of each local header as it is now; None when one cannot be read."""
    hashes = {}
    for name in headers:
        try:
            hashes[name] = hashlib.sha256((Path(str(include_dir)) / name).read_bytes()).hexdigest()
        except OSError:
            return None
    return hashes


def load(key: str, include_dir: Path | None = None) -> CompileResult | None:
    folder = cache_dir() / "compile" / key[:2] / key
    try:
        meta = json.loads((folder / "result.json").read_text())
        cubin = (folder / "kernel.cubin").read_bytes() if meta["ok"] else None
        ptx = (folder / "kernel.ptx").read_text() if (folder / "kernel.ptx").exists() else None
        headers = dict(meta["headers"])
        diags = tuple(Diagnostic(**{**d, "notes": tuple(d["notes"])})
                      for d in meta["diagnostics"])
        resources = {k: ResourceUsage(**v) for k, v in meta["resources"].items()}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    # The preprocessor read these headers for the stored result: an edited one is a miss.
    if headers and header_hashes(include_dir, list(headers)) != headers:
        return None
    return CompileResult(meta["arch"], cubin, diags, resources, meta["seconds"], meta["log"],
                         ptx, meta["summary"], cached=True, isolation=meta["isolation"],
                         headers=tuple(headers))


def store(key: str, result: CompileResult, include_dir: Path | None = None) -> None:
    folder = cache_dir() / "compile" / key[:2] / key
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # an unwritable cache only costs speed
    hashes = header_hashes(include_dir, result.headers)
    if hashes is None:
        return  # a header changed or vanished under the compile: do not remember it
    staging = Path(tempfile.mkdtemp(dir=folder.parent))
    try:
        meta = {"headers": hashes, "ok": result.ok, "arch": result.arch, "seconds": result.seconds,
                "log": result.log, "summary": result.summary, "isolation": result.isolation,
                "diagnostics": [d.__dict__ | {"notes": list(d.notes)} for d in result.diagnostics],
                "resources": {k: r.__dict__ | {"extra": dict(r.extra)}
                              for k, r in result.resources.items()}}
        if result.cubin is not None:
            (staging / "kernel.cubin").write_bytes(result.cubin)
        if result.ptx is not None:
            (staging / "kernel.ptx").write_text(result.ptx)
        # Like the run directory: no configured key is ever written (a source may quote one).
        (staging / "result.json").write_text(redact_secrets(json.dumps(meta)))
        os.replace(staging, folder)  # atomic: a reader sees all of an entry or none
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
