"""Source -> cubin for one explicit arch, as a value: never raises for a bad kernel.

One nvcc call per compile: `-cubin -lineinfo -Xptxas -v --keep` keeps the PTX so ptxas errors
that name a PTX line can be mapped back to the .cu line. Results are cached by content.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kgen import process, toolkit
from kgen.arch import Arch
from kgen.compile import cache, isolation, rules
from kgen.compile.includes import check_includes
from kgen.compile.logparse import parse_resources
from kgen.compile.records import CompileResult, Diagnostic
from kgen.compile.scan import SOURCE_NAME
from kgen.compile.summary import summarize


@dataclass(frozen=True)
class Limits:
    """Bounds on one compile of untrusted source."""

    timeout_s: float = 120.0
    memory_bytes: int = 8 * 1024**3
    max_log_bytes: int = 256 * 1024


def compile_source(source: str | bytes, arch: Arch, *, flags: Sequence[str] = (),
                   include_dir: Path | None = None, embed_ptx: bool = False,
                   limits: Limits = Limits(), use_cache: bool = True) -> CompileResult:
    """Compile `source` to a cubin for `arch`; failures come back as diagnostics."""
    include_dir = include_dir.resolve() if include_dir is not None else None  # bwrap binds it
    raw = source.encode() if isinstance(source, str) else source
    text = raw.decode("utf-8", errors="replace")
    refused = check_includes(text, include_dir)
    if refused:
        return CompileResult(arch.name, None, refused, summary=summarize(refused, text),
                             isolation="refused before nvcc")
    key = cache.key(raw, arch, flags, include_dir, embed_ptx)
    if use_cache and (hit := cache.load(key)) is not None:
        return hit
    result = _run_nvcc(raw, text, arch, flags, include_dir, embed_ptx, limits)
    if use_cache and cache.worth_keeping(result):
        cache.store(key, result)
    return result


def _run_nvcc(raw: bytes, text: str, arch: Arch, flags: Sequence[str], include_dir: Path | None,
              embed_ptx: bool, limits: Limits) -> CompileResult:
    with tempfile.TemporaryDirectory(prefix="kgen-nvcc-") as tmp:
        work = Path(tmp)
        (work / SOURCE_NAME).write_bytes(raw)
        cmd = [str(toolkit.nvcc_path()), "-cubin", "-gencode", arch.gencode(embed_ptx), "-lineinfo",
               "-Xptxas", "-v", "--keep", "--keep-dir", str(work), "-o", "kernel.cubin",
               *(["-I", str(include_dir)] if include_dir else []), *flags, SOURCE_NAME]
        if embed_ptx:  # a fatbin carries both the SASS and the PTX for the driver to JIT
            cmd[1] = "-fatbin"
        readonly = [toolkit.cuda_root()] + ([include_dir] if include_dir else [])
        sandbox = isolation.compile_sandbox(work, readonly)
        env = process.scrubbed_env(HOME=str(work), TMPDIR=str(work))
        done = process.run_limited([*sandbox, *cmd], cwd=work, timeout=limits.timeout_s,
                                     env=env, memory_bytes=limits.memory_bytes,
                                     max_output=limits.max_log_bytes)
        ptx_file = work / "kernel.ptx"
        ptx = ptx_file.read_text(errors="replace") if ptx_file.exists() else None
        cubin_file = work / "kernel.cubin"
        cubin = cubin_file.read_bytes() if done.returncode == 0 and cubin_file.exists() else None
    where = "bubblewrap" if sandbox else "limits only"
    found = rules.parse(done.output, text, ptx)
    resources = parse_resources(done.output)
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
    summary = summarize(found, text, resources)
    return CompileResult(arch.name, cubin, found, resources, done.seconds, done.output, ptx,
                         summary, isolation=where)


_OUT_OF_MEMORY = re.compile(r"failed to map segment|out of memory|bad_alloc|cannot allocate|"
                            r"memory allocation fail", re.IGNORECASE)


def _memory_note(done: process.Finished, limits: Limits) -> tuple[str, ...]:
    """Say when the failure looks like the address-space limit rather than the source."""
    if (done.returncode or 0) < 0 or _OUT_OF_MEMORY.search(done.output):
        return (f"the compile may have hit the memory limit of {limits.memory_bytes / 2**30:.2g} "
                "GiB (Limits.memory_bytes)",)
    return ()


