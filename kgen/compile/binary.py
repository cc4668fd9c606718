"""Which SASS and PTX architectures a cubin, fatbin, PTX file or host binary holds.

Parsed directly (CUDA ELF e_flags, fatbin entry headers); `cuobjdump` is asked only when the
parse finds nothing and it is installed. Answers "no kernel image is available" before loading.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kgen.errors import UsageError

EM_CUDA = 190
FATBIN_MAGIC = b"\x50\xed\x55\xba"  # 0xBA55ED50 little-endian
_KINDS = {1: "ptx", 2: "sass"}


@dataclass(frozen=True)
class BinaryInfo:
    path: str
    kind: str  # cubin | fatbin | ptx | host binary | unknown
    sass: tuple[int, ...]  # 89 for sm_89
    ptx: tuple[int, ...]
    tool: str  # "parsed" or "cuobjdump"

    def runs_on(self, cc: int) -> str:
        """'native' (SASS for cc), 'ptx' (JIT from PTX for an older or equal arch) or 'no'."""
        if cc in self.sass:
            return "native"
        if any(p <= cc for p in self.ptx):
            return "ptx"
        return "no"

    def describe(self) -> str:
        sass = ", ".join(f"sm_{a}" for a in self.sass) or "none"
        ptx = ", ".join(f"compute_{a}" for a in self.ptx) or "none"
        return f"{self.path}: {self.kind}; SASS: {sass}; PTX: {ptx}"


def cubin_arch(data: bytes) -> int | None:
    """The SM version in a CUDA ELF header (e_flags), or None if `data` is not a CUDA ELF."""
    if len(data) < 52 or data[:4] != b"\x7fELF" or data[4] != 2:
        return None
    if struct.unpack_from("<H", data, 18)[0] != EM_CUDA:
        return None
    flags = struct.unpack_from("<I", data, 48)[0]
    abi_version = data[8]
    # ELF ABI version 8 (CUDA 12.8+) moved the SM number from bits 0-7 to bits 8-15.
    return (flags >> 8) & 0xFF if abi_version >= 8 else flags & 0xFF


def fatbin_entries(data: bytes, start: int = 0) -> list[tuple[str, int]]:
    """(kind, arch) of each entry of the fatbin that starts at `start`."""
    if len(data) < start + 16:
        return []
    _, _, header, size = struct.unpack_from("<IHHQ", data, start)
    entries, offset, end = [], start + header, min(start + header + size, len(data))
    while offset + 32 <= end:
        kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, offset)
        if entry_header < 32 or kind not in _KINDS:
            break
        arch = struct.unpack_from("<I", data, offset + 28)[0]
        entries.append((_KINDS[kind], arch))
        offset += entry_header + payload
    return entries


def inspect(path: Path) -> BinaryInfo:
    """What device code `path` holds; UsageError if it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    sass: set[int] = set()
    ptx: set[int] = set()
    kind = "unknown"
    arch = cubin_arch(data)
    if arch is not None:
        kind, sass = "cubin", {arch}
    elif data.startswith(FATBIN_MAGIC):
        kind = "fatbin"
        _collect(fatbin_entries(data), sass, ptx)
    elif data[:4] == b"\x7fELF":
        kind = "host binary"
        for m in re.finditer(re.escape(FATBIN_MAGIC), data):
            _collect(fatbin_entries(data, m.start()), sass, ptx)
    elif b".target" in data[:4096] and b".version" in data[:4096]:
        kind = "ptx"
        ptx |= {int(t) for t in re.findall(rb"\.target\s+sm_(\d+)", data[:4096])}
    tool = "parsed"
    if not sass and not ptx and kind != "ptx" and shutil.which("cuobjdump"):
        sass, ptx, tool = _cuobjdump(path)
    return BinaryInfo(str(path), kind, tuple(sorted(sass)), tuple(sorted(ptx)), tool)


def _collect(entries: list[tuple[str, int]], sass: set[int], ptx: set[int]) -> None:
    for what, arch in entries:
        (sass if what == "sass" else ptx).add(arch)


def _cuobjdump(path: Path) -> tuple[set[int], set[int], str]:
    found: dict[str, set[int]] = {"elf": set(), "ptx": set()}
    for what in found:
        try:
            out = subprocess.run(["cuobjdump", f"--list-{what}", str(path)], capture_output=True,
                                 text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        found[what] = {int(a) for a in re.findall(r"sm_(\d+)", out.stdout)}
    return found["elf"], found["ptx"], "cuobjdump"
