"""Source -> cubin for one explicit arch, as a value: never raises for a bad kernel.

Each compile: the flags are checked against an allow-list (kgen.compile.flags); a fast scanner
refuses obvious include tricks (kgen.compile.includes); then, in a temp folder and the same
isolation as the compile, `nvcc -M` lists what the preprocessor reads, and anything outside the
CUDA/system headers and the allowed local headers is refused before anything is compiled
(kgen.compile.deps). The compile itself sees only those files where bubblewrap works:
`-cubin -lineinfo -Xptxas -v --keep` keeps the PTX so ptxas errors that name a PTX line can be
mapped back to the .cu line. Results are cached by content.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kgen import process, toolkit
from kgen.arch import Arch
from kgen.compile import cache, deps, isolation, rules
from kgen.compile.flags import check_flags
from kgen.compile.includes import check_includes, directives
from kgen.compile.logparse import parse_resources
from kgen.compile.records import CompileResult, Diagnostic
from kgen.compile.scan import SOURCE_NAME, line_text
from kgen.compile.summary import summarize
from kgen.textsafe import redact_paths, redact_secrets


@dataclass(frozen=True)
class Limits:
    """Bounds on one compile of untrusted source."""

    timeout_s: float = 120.0
    memory_bytes: int = 8 * 1024**3
    max_log_bytes: int = 256 * 1024
    deps_timeout_s: float = 60.0  # the preprocessor's dependency listing


def compile_source(source: str | bytes, arch: Arch, *, flags: Sequence[str] = (),
                   include_dir: Path | None = None, headers: Sequence[str] | None = None,
                   embed_ptx: bool = False, limits: Limits = Limits(),
                   use_cache: bool = True) -> CompileResult:
    """Compile `source` to a cubin for `arch`; failures come back as diagnostics.

    `headers` are the local headers (relative to `include_dir`) a model-written candidate may
    include; None means the user's own file, which may include any header file of its folder.
    A flag outside the allow-list raises UsageError."""
    check_flags(flags)
    include_dir = include_dir.resolve() if include_dir is not None else None  # bwrap binds it
    raw = source.encode(errors="replace") if isinstance(source, str) else source
    text = raw.decode("utf-8", errors="replace")
    allowed = frozenset(headers) if headers is not None else None
    refused = check_includes(text, include_dir, candidate=allowed is not None,
                             sandboxed=process.bwrap_path() is not None)
    if refused:
        return CompileResult(arch.name, None, refused, summary=summarize(refused, text),
                             isolation="refused before nvcc")
    key = cache.key(raw, arch, flags, include_dir, embed_ptx, allowed)
    if use_cache and (hit := cache.load(key, include_dir)) is not None:
        return hit
    with tempfile.TemporaryDirectory(prefix="kgen-nvcc-") as tmp:
        job = _Job(Path(tmp).resolve(), arch, tuple(flags), include_dir, allowed, embed_ptx,
                   limits)
        (job.work / SOURCE_NAME).write_bytes(raw)
        result = job.run(text)
    if use_cache and cache.worth_keeping(result):
        cache.store(key, result, include_dir)
    return result


@dataclass(frozen=True)
class _Job:
    work: Path
    arch: Arch
    flags: tuple[str, ...]
    include_dir: Path | None
    allowed: frozenset[str] | None
    embed_ptx: bool
    limits: Limits

    @property
    def visible(self) -> deps.Visible:
        return deps.Visible(self.work, self.include_dir, self.allowed)

    def nvcc(self, *args: str) -> list[str]:
        # gcc quotes a file's lines in its messages; it never needs to here (kgen quotes the
        # source itself), so it never opens a file just to show it.
        return [str(toolkit.nvcc_path()), "-gencode", self.arch.gencode(self.embed_ptx),
                *(["-I", str(self.include_dir)] if self.include_dir else []), *self.flags,
                "-Xcompiler", "-fno-diagnostics-show-caret", *args]

    def launch(self, cmd: list[str], readonly: list[Path], timeout: float) -> tuple[
            process.Finished, bool]:
        sandbox = isolation.compile_sandbox(self.work, [toolkit.cuda_root(), *readonly])
        env = process.scrubbed_env(HOME=str(self.work), TMPDIR=str(self.work))
        done = process.run_limited([*sandbox, *cmd], cwd=self.work, timeout=timeout, env=env,
                                   memory_bytes=self.limits.memory_bytes,
                                   max_output=self.limits.max_log_bytes)
        return done, bool(sandbox)

    def run(self, text: str) -> CompileResult:
        """List what the preprocessor reads; refuse or compile."""
        visible_now = ([self.include_dir] if self.allowed is None else
                       [self.include_dir / h for h in sorted(self.allowed)]
                       ) if self.include_dir else []
        done, sandboxed = self.launch(self.nvcc("-M", "-MF", "deps.d", SOURCE_NAME),
                                      [p for p in visible_now if os.path.lexists(p)],
                                      min(self.limits.deps_timeout_s, self.limits.timeout_s))
        where = "bubblewrap" if sandboxed else "limits only"
        listing = self.work / "deps.d"
        if done.returncode == 0 and listing.is_file():
            found = deps.classify(deps.parse_make_rule(listing.read_text(errors="replace")),
                                  self.visible)
            if not found.refused:
                return self.compile(text, found.headers)
            problems = tuple(self._refusal(path, text) for path in found.refused)
        else:
            problems = self._preprocessor_failed(done, text)
        return CompileResult(self.arch.name, None, problems, seconds=done.seconds,
                             summary=summarize(problems, text), isolation=where)

    def _refusal(self, name: str, text: str, line: int | None = None) -> Diagnostic:
        """The same words whether the file exists or not, so a refusal says nothing about it."""
        written = [(n, w) for n, w in directives(text) if name == w or name.endswith("/" + w)]
        if written:
            line, name = written[0]
        elif line is None:
            name = os.path.basename(name) + " (reached through a header or a macro)"
        allowed = ("the header files of the source's folder" if self.allowed is None else
                   "the local headers the input already includes: " +
                   (", ".join(sorted(self.allowed)) or "none"))
        source = line_text(text, line)
        return Diagnostic("error", line, None, None, f"include refused: {name} is not one of "
                          f"the CUDA/system headers or {allowed}", source, category="policy")

    def _preprocessor_failed(self, done: process.Finished, text: str) -> tuple[Diagnostic, ...]:
        """The preprocessor stopped: its own errors in the source (a bad #if, #error) are the
        compile's errors; a file it could not open is a refusal like any other."""
        if done.timed_out:
            limit = min(self.limits.deps_timeout_s, self.limits.timeout_s)
            return (Diagnostic("error", None, None, None, "the include check (the preprocessor) "
                               f"did not finish within {limit:g} s (an include of a device or "
                               "an endless file?)", category="toolchain"),)
        found = []
        for d in rules.parse(deps.scrub_log(done.output, self.visible), text):
            m = _CANNOT_OPEN.match(d.message)
            # For a candidate, "missing" and "refused" read the same, so its includes learn
            # nothing about which files exist; the user's own file gets the compiler's words.
            found.append(self._refusal(m.group("name") or m.group("edg"), text, d.line)
                         if m and self.allowed is not None else d)
        if not any(d.severity == "error" for d in found):
            found.append(Diagnostic("error", None, None, None, "the preprocessor failed "
                                    f"(exit code {done.returncode}) before listing the includes",
                                    notes=_memory_notes(done, done.output, self.limits),
                                    category="toolchain"))
        return tuple(found)

    def compile(self, text: str, headers: tuple[str, ...]) -> CompileResult:
        cmd = self.nvcc("-cubin", "-lineinfo", "-Xptxas", "-v", "--keep", "--keep-dir",
                        str(self.work), "-o", "kernel.cubin", SOURCE_NAME)
        if self.embed_ptx:  # a fatbin carries both the SASS and the PTX for the driver to JIT
            cmd[cmd.index("-cubin")] = "-fatbin"
        readonly = [self.include_dir / h for h in headers] if self.include_dir else []
        done, sandboxed = self.launch(cmd, readonly, self.limits.timeout_s)
        ptx_file, cubin_file = self.work / "kernel.ptx", self.work / "kernel.cubin"
        ptx = ptx_file.read_text(errors="replace") if ptx_file.exists() else None
        cubin = cubin_file.read_bytes() if done.returncode == 0 and cubin_file.exists() else None
        log = deps.scrub_log(done.output, self.visible)
        found = rules.parse(log, text, ptx)
        found += _failure(done, cubin, found, log, self.limits)
        resources = parse_resources(log)
        if cubin is not None and not resources:
            cubin = None  # it compiled, but there is nothing to launch
            found += (Diagnostic("error", None, None, None,
                                 "no __global__ kernel in the file: nothing to launch (declare "
                                 "the entry point as extern \"C\" __global__ void ...)",
                                 category="contract"),)
        return CompileResult(self.arch.name, cubin, found, resources, done.seconds,
                             self._stored(log), ptx, summarize(found, text, resources),
                             isolation="bubblewrap" if sandboxed else "limits only",
                             headers=headers)

    def _stored(self, log: str) -> str:
        """The log as run directories and the cache keep it: no keys, no host paths."""
        keep = {str(self.work): "", str(toolkit.cuda_root()): "<cuda>"}
        if self.include_dir:
            keep[str(self.include_dir)] = "<source folder>"
        return redact_paths(redact_secrets(log), keep)


_CANNOT_OPEN = re.compile(r"^(?P<name>.+?): (?:No such file or directory|Is a directory|"
                          r"Permission denied|Not a directory|Too many levels of symbolic links|"
                          r"No such device or address)$|"
                          r"^cannot open source file \"(?P<edg>[^\"]+)\"")
_OUT_OF_MEMORY = re.compile(r"failed to map segment|out of memory|bad_alloc|cannot allocate|"
                            r"memory allocation fail", re.IGNORECASE)


def _failure(done: process.Finished, cubin: bytes | None, found: tuple[Diagnostic, ...],
             log: str, limits: Limits) -> tuple[Diagnostic, ...]:
    """A diagnostic for a compile that ended without saying why: a timeout, or nvcc's exit."""
    if done.timed_out:
        return (Diagnostic("error", None, None, None,
                           f"compilation did not finish within {limits.timeout_s:g} s and was "
                           "stopped", category="toolchain"),)
    if cubin is None and not any(d.severity == "error" for d in found):
        tail = log.strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        return (Diagnostic("error", None, None, None, f"nvcc failed: {tail[0][:300]}",
                           notes=_memory_notes(done, log, limits), category="toolchain"),)
    return ()


def _memory_notes(done: process.Finished, log: str, limits: Limits) -> tuple[str, ...]:
    """Say when a failure looks like the address-space limit rather than the source."""
    if (done.returncode or 0) < 0 or _OUT_OF_MEMORY.search(log):
        return (f"the compile may have hit the memory limit of {limits.memory_bytes / 2**30:.2g} "
                "GiB (Limits.memory_bytes)",)
    return ()
