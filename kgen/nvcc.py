"""Source -> cubin for one explicit arch, as a value: never raises for a bad kernel.

One nvcc call per compile: `-cubin -lineinfo -Xptxas -v --keep` keeps the PTX so ptxas errors
that name a PTX line can be mapped back to the .cu line. Results are cached by content.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgen import diagnostics, isolation
from kgen.arch import Arch
from kgen.diagnostics import Diagnostic, ResourceUsage
from kgen.errors import EnvironmentProblem
from kgen.includes import check_includes, local_headers

CACHE_FORMAT = 2  # bump whenever diagnostics parsing changes: entries store parsed records
SOURCE_NAME = "kernel.cu"


@dataclass(frozen=True)
class CompileResult:
    """What nvcc made of one source for one arch; `cubin` is None when it failed."""

    arch: str
    cubin: bytes | None
    diagnostics: tuple[Diagnostic, ...] = ()
    resources: Mapping[str, ResourceUsage] = field(default_factory=dict)
    seconds: float = 0.0
    log: str = ""  # the raw log, for the run directory only
    ptx: str | None = None
    summary: str = ""
    cached: bool = False
    isolation: str = ""

    @property
    def ok(self) -> bool:
        return self.cubin is not None

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity == "error")

    def to_json(self) -> dict[str, Any]:
        """The stable `kgen compile --json` schema (design.md)."""
        return {"ok": self.ok, "arch": self.arch, "seconds": round(self.seconds, 3),
                "diagnostics": [d.to_json() for d in self.diagnostics],
                "resources": {k: r.to_json() for k, r in self.resources.items()},
                "summary": self.summary}


@dataclass(frozen=True)
class Limits:
    """Bounds on one compile of untrusted source."""

    timeout_s: float = 120.0
    memory_bytes: int = 8 * 1024**3
    max_log_bytes: int = 256 * 1024


@functools.cache
def nvcc_path() -> Path:
    """The real nvcc binary (wrapper scripts resolved), or EnvironmentProblem."""
    found = shutil.which("nvcc")
    if found is None:
        raise EnvironmentProblem("nvcc not found on PATH; install the CUDA toolkit and put its "
                                 "bin/ folder on PATH")
    return Path(found)


@functools.cache
def nvcc_version() -> str:
    """The last line of `nvcc --version` (part of every cache key)."""
    out = subprocess.run([str(nvcc_path()), "--version"], capture_output=True, text=True,
                         timeout=30)
    lines = out.stdout.strip().splitlines()
    return lines[-1] if lines else "unknown"


@functools.cache
def _cuda_root() -> Path:
    """The toolkit folder, as nvcc itself reports it (PATH may hold only a wrapper script)."""
    out = subprocess.run([str(nvcc_path()), "-dryrun", "-cubin", "-arch=sm_75", "-x", "cu",
                          os.devnull], capture_output=True, text=True, timeout=30)
    m = re.search(r"^#\$ TOP=(\S+)", out.stderr, re.MULTILINE)
    return Path(m.group(1)).resolve() if m else nvcc_path().resolve().parent.parent


def cache_dir() -> Path:
    """KGEN_CACHE_DIR, else $XDG_CACHE_HOME/kgen, else ~/.cache/kgen."""
    if os.environ.get("KGEN_CACHE_DIR"):
        return Path(os.environ["KGEN_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kgen"


def compile_source(source: str | bytes, arch: Arch, *, flags: Sequence[str] = (),
                   include_dir: Path | None = None, embed_ptx: bool = False,
                   limits: Limits = Limits(), use_cache: bool = True) -> CompileResult:
    """Compile `source` to a cubin for `arch`; failures come back as diagnostics."""
    include_dir = include_dir.resolve() if include_dir is not None else None  # bwrap binds it
    raw = source.encode() if isinstance(source, str) else source
    text = raw.decode("utf-8", errors="replace")
    refused = check_includes(text, include_dir)
    if refused:
        return CompileResult(arch.name, None, refused, summary=diagnostics.summarize(refused, text),
                             isolation="refused before nvcc")
    key = _cache_key(raw, arch, flags, include_dir, embed_ptx)
    if use_cache and (hit := _load_cached(key)) is not None:
        return hit
    result = _run_nvcc(raw, text, arch, flags, include_dir, embed_ptx, limits)
    if use_cache and _cacheable(result):
        _store_cached(key, result)
    return result


def _run_nvcc(raw: bytes, text: str, arch: Arch, flags: Sequence[str], include_dir: Path | None,
              embed_ptx: bool, limits: Limits) -> CompileResult:
    with tempfile.TemporaryDirectory(prefix="kgen-nvcc-") as tmp:
        work = Path(tmp)
        (work / SOURCE_NAME).write_bytes(raw)
        cmd = [str(nvcc_path()), "-cubin", "-gencode", arch.gencode(embed_ptx), "-lineinfo",
               "-Xptxas", "-v", "--keep", "--keep-dir", str(work), "-o", "kernel.cubin",
               *(["-I", str(include_dir)] if include_dir else []), *flags, SOURCE_NAME]
        if embed_ptx:  # a fatbin carries both the SASS and the PTX for the driver to JIT
            cmd[1] = "-fatbin"
        readonly = [_cuda_root()] + ([include_dir] if include_dir else [])
        sandbox = isolation.compile_sandbox(work, readonly)
        env = isolation.scrubbed_env(HOME=str(work), TMPDIR=str(work))
        done = isolation.run_limited([*sandbox, *cmd], cwd=work, timeout=limits.timeout_s,
                                     env=env, memory_bytes=limits.memory_bytes,
                                     max_output=limits.max_log_bytes)
        ptx_file = work / "kernel.ptx"
        ptx = ptx_file.read_text(errors="replace") if ptx_file.exists() else None
        cubin_file = work / "kernel.cubin"
        cubin = cubin_file.read_bytes() if done.returncode == 0 and cubin_file.exists() else None
    where = "bubblewrap" if sandbox else "limits only"
    found = diagnostics.parse(done.output, text, ptx)
    resources = diagnostics.parse_resources(done.output)
    if done.timed_out:
        found += (Diagnostic("error", None, None, None,
                             f"compilation did not finish within {limits.timeout_s:g} s "
                             "and was stopped", category="toolchain"),)
    elif cubin is not None and not resources:
        cubin = None  # it compiled, but there is nothing to launch
        found += (Diagnostic("error", None, None, None,
                             "no __global__ kernel in the file: nothing to launch (declare the "
                             "entry point as extern \"C\" __global__ void ...)",
                             category="contract"),)
    elif cubin is None and not any(d.severity == "error" for d in found):
        tail = done.output.strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        found += (Diagnostic("error", None, None, None, f"nvcc failed: {tail[0][:300]}",
                             notes=_memory_note(done, limits), category="toolchain"),)
    summary = diagnostics.summarize(found, text, resources)
    return CompileResult(arch.name, cubin, found, resources, done.seconds, done.output, ptx,
                         summary, isolation=where)


_OUT_OF_MEMORY = re.compile(r"failed to map segment|out of memory|bad_alloc|cannot allocate|"
                            r"memory allocation fail", re.IGNORECASE)


def _memory_note(done: isolation.Finished, limits: Limits) -> tuple[str, ...]:
    """Say when the failure looks like the address-space limit rather than the source."""
    if (done.returncode or 0) < 0 or _OUT_OF_MEMORY.search(done.output):
        return (f"the compile may have hit the memory limit of {limits.memory_bytes / 2**30:.2g} "
                "GiB (Limits.memory_bytes)",)
    return ()


def _cacheable(result: CompileResult) -> bool:
    """Timeouts and toolchain failures (memory limit, a crashed nvcc) depend on the limits and
    the machine, not only the source: never cache them."""
    return not any(d.category == "toolchain" for d in result.diagnostics)


def _cache_key(raw: bytes, arch: Arch, flags: Sequence[str], include_dir: Path | None,
               embed_ptx: bool) -> str:
    h = hashlib.sha256()
    parts = [str(CACHE_FORMAT), arch.name, nvcc_version(), json.dumps(list(flags)),
             str(embed_ptx), str(include_dir or "")]
    for part in parts:
        h.update(part.encode() + b"\0")
    h.update(raw)
    # Headers from the source's folder are part of what is compiled: an edited header misses.
    text = raw.decode("utf-8", errors="replace")
    for header in local_headers(text, include_dir):
        h.update(b"\0" + str(header).encode() + b"\0" + header.read_bytes())
    return h.hexdigest()


def _load_cached(key: str) -> CompileResult | None:
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


def _store_cached(key: str, result: CompileResult) -> None:
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
