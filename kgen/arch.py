"""GPU architectures: parse `sm_XX`, check it against nvcc, per-arch facts for prompts."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from dataclasses import dataclass

from kgen import toolkit
from kgen.errors import UsageError

_ARCH_RE = re.compile(r"^sm_(\d{2,3})([af]?)$")


@dataclass(frozen=True)
class ArchFacts:
    """What a kernel author must know about one compute capability (facts from NVIDIA's docs)."""

    family: str
    max_smem_per_block: int  # bytes, after cudaFuncSetAttribute opt-in
    default_smem_per_block: int  # bytes without the opt-in
    max_smem_per_sm: int
    registers_per_sm: int
    max_registers_per_thread: int
    max_threads_per_sm: int
    tensor_cores: tuple[str, ...]  # instruction families usable from CUDA C++ / inline PTX
    mma_dtypes: tuple[str, ...]
    cp_async: bool
    tma: bool
    wgmma: bool  # needs the arch-specific target (sm_90a)


_KB = 1024
_FACTS: dict[int, ArchFacts] = {
    75: ArchFacts("Turing", 64 * _KB, 48 * _KB, 64 * _KB, 65536, 255, 1024,
                  ("wmma", "mma.sync.m16n8k8"), ("float16",), False, False, False),
    80: ArchFacts("Ampere", 163 * _KB, 48 * _KB, 164 * _KB, 65536, 255, 2048,
                  ("wmma", "mma.sync.m16n8k16", "ldmatrix"), ("float16", "bfloat16", "tf32"),
                  True, False, False),
    86: ArchFacts("Ampere", 99 * _KB, 48 * _KB, 100 * _KB, 65536, 255, 1536,
                  ("wmma", "mma.sync.m16n8k16", "ldmatrix"), ("float16", "bfloat16", "tf32"),
                  True, False, False),
    87: ArchFacts("Ampere (Orin)", 163 * _KB, 48 * _KB, 164 * _KB, 65536, 255, 1536,
                  ("wmma", "mma.sync.m16n8k16", "ldmatrix"), ("float16", "bfloat16", "tf32"),
                  True, False, False),
    88: ArchFacts("Ampere-class", 99 * _KB, 48 * _KB, 100 * _KB, 65536, 255, 1536,
                  ("wmma", "mma.sync.m16n8k16", "ldmatrix"), ("float16", "bfloat16", "tf32"),
                  True, False, False),
    89: ArchFacts("Ada", 99 * _KB, 48 * _KB, 100 * _KB, 65536, 255, 1536,
                  ("wmma", "mma.sync.m16n8k16", "ldmatrix"),
                  ("float16", "bfloat16", "tf32", "fp8"), True, False, False),
    90: ArchFacts("Hopper", 227 * _KB, 48 * _KB, 228 * _KB, 65536, 255, 2048,
                  ("wmma", "mma.sync.m16n8k16", "ldmatrix", "wgmma (sm_90a)"),
                  ("float16", "bfloat16", "tf32", "fp8"), True, True, True),
    100: ArchFacts("Blackwell", 227 * _KB, 48 * _KB, 228 * _KB, 65536, 255, 2048,
                   ("wmma", "mma.sync.m16n8k16", "ldmatrix", "tcgen05 (sm_100a)"),
                   ("float16", "bfloat16", "tf32", "fp8", "fp4"), True, True, False),
    103: ArchFacts("Blackwell", 227 * _KB, 48 * _KB, 228 * _KB, 65536, 255, 2048,
                   ("wmma", "mma.sync.m16n8k16", "ldmatrix", "tcgen05 (sm_103a)"),
                   ("float16", "bfloat16", "tf32", "fp8", "fp4"), True, True, False),
    110: ArchFacts("Blackwell (Thor)", 227 * _KB, 48 * _KB, 228 * _KB, 65536, 255, 2048,
                   ("wmma", "mma.sync.m16n8k16", "ldmatrix", "tcgen05 (sm_110a)"),
                   ("float16", "bfloat16", "tf32", "fp8", "fp4"), True, True, False),
    120: ArchFacts("Blackwell (consumer)", 99 * _KB, 48 * _KB, 100 * _KB, 65536, 255, 1536,
                   ("wmma", "mma.sync.m16n8k16", "ldmatrix"),
                   ("float16", "bfloat16", "tf32", "fp8", "fp4"), True, True, False),
    121: ArchFacts("Blackwell (DGX Spark)", 99 * _KB, 48 * _KB, 100 * _KB, 65536, 255, 1536,
                   ("wmma", "mma.sync.m16n8k16", "ldmatrix"),
                   ("float16", "bfloat16", "tf32", "fp8", "fp4"), True, True, False),
}


@dataclass(frozen=True)
class Arch:
    """One target, spelled as the user wrote it (`sm_89`, `sm_90a`)."""

    name: str
    major_minor: int  # 89 for sm_89, 90 for sm_90a
    suffix: str  # "", "a" (arch-specific) or "f" (family)

    @property
    def compute(self) -> str:
        return f"compute_{self.major_minor}{self.suffix}"

    @property
    def facts(self) -> ArchFacts:
        return _FACTS[self.major_minor]

    @property
    def capability(self) -> tuple[int, int]:
        return divmod(self.major_minor, 10)

    def gencode(self, embed_ptx: bool = False) -> str:
        """The -gencode value; with embed_ptx the PTX rides along so a newer GPU can JIT it."""
        code = f"sm_{self.major_minor}{self.suffix}"
        return f"arch={self.compute},code=[{code},{self.compute}]" if embed_ptx else (
            f"arch={self.compute},code={code}")


def parse_arch(text: str, check_nvcc: bool = True) -> Arch:
    """Parse and check `sm_XX[a|f]`; raises UsageError naming the supported ones."""
    match = _ARCH_RE.match(text.strip())
    supported = supported_archs() if check_nvcc else tuple(f"sm_{n}" for n in _FACTS)
    if not match or int(match.group(1)) not in _FACTS:
        raise UsageError(f"unknown architecture {text!r}; supported: {', '.join(supported)}"
                         " (add 'a' for arch-specific features, e.g. sm_90a)")
    number, suffix = int(match.group(1)), match.group(2)
    if f"sm_{number}" not in supported:
        raise UsageError(f"{text} is not supported by the installed nvcc; it supports: "
                         f"{', '.join(supported)}")
    if suffix and number < 90:
        raise UsageError(f"{text}: arch-specific ('a') and family ('f') targets start at sm_90; "
                         f"supported: {', '.join(supported)} (and sm_90a, sm_100a, ...)")
    return Arch(text.strip(), number, suffix)


@functools.cache
def supported_archs() -> tuple[str, ...]:
    """The real architectures the installed nvcc can build for, from `nvcc --list-gpu-code`."""
    codes = {c for c in toolkit.gpu_codes() if c[3:].isdigit() and int(c[3:]) in _FACTS}
    return tuple(sorted(codes, key=lambda c: int(c[3:])))


@functools.cache
def local_gpu() -> tuple[str, Arch] | None:
    """(name, arch) of GPU 0 via nvidia-smi, without creating a CUDA context; None if no GPU."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=name,compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [ln for ln in out.stdout.splitlines() if ln.strip()]
    if out.returncode != 0 or not lines:
        return None
    name, _, cap = (part.strip() for part in lines[0].rpartition(","))
    try:
        number = int(cap.replace(".", ""))
    except ValueError:  # "[N/A]" or an unexpected format: treat as no usable GPU
        return None
    return name, Arch(f"sm_{number}", number, "")


def can_run_on(target: Arch, local: Arch) -> str:
    """'native' if a cubin for target loads on local, 'ptx' if only embedded PTX can, else 'no'."""
    if target.major_minor == local.major_minor:
        return "native"
    same_major = target.major_minor // 10 == local.major_minor // 10
    # SASS runs on later minors of the same major (sm_80 on sm_86); 'a' code only on its own chip.
    if same_major and target.major_minor < local.major_minor and target.suffix != "a":
        return "native"
    # Plain PTX JITs forward to any newer chip.
    if target.suffix == "" and target.major_minor < local.major_minor:
        return "ptx"
    return "no"
