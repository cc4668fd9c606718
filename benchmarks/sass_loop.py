"""What ptxas made of a kernel's main loop, read from its SASS: a check that needs no GPU.

\b
    python -m benchmarks.sass_loop --dtype float32 --arch sm_90 --set "" --set "sk=1"
    python -m benchmarks.sass_loop kernel.cu other.cubin --arch sm_90

`--set` renders the builtin gemm default with those fields changed (as `benchmarks.gemm_configs`
does); files are .cu sources (compiled like any candidate) or cubins. For every kernel it finds
the main loop (the innermost loop with the most FFMA/HMMA/HGMMA instructions) and prints:

\b
- registers and spill bytes (ptxas);
- `hot`: the instructions of the steady-state trip through the loop (the path that moves the most
  bytes through global and shared memory, and of those the shortest: an interior tile's full
  k-step, not the guarded edge-tile loads or a last step without a prefetch);
- `cycles`: the hot path's issue cycles as ptxas scheduled them: the sum of the stall counts in
  the control bits, with no wait on a memory result counted;
- `near LDS`: shared-memory loads (LDS, LDSM) whose result is awaited fewer than `--near` issue
  cycles after the load (a shared load takes about 30 cycles on Hopper, so each of these stalls
  its warp: what Nsight Compute reports as short-scoreboard stalls);
- `bank`: FFMAs with two source registers in one register bank (register number mod 4, operands
  from the reuse cache aside).

Calibrated against versions of the SIMT gemm default (128x256x16, thread tile 8x16) timed on
the H200 (benchmarks/sass-2026-12-04-s12/): those that ran at 2.90-2.93 ms (4096^3) show
2,432-2,436 cycles and 2 near LDS; the versions that ran 4-12% slower show 2,583-2,599 cycles
(two of them also 12-15 near LDS), or two near LDS at 18-19 cycles (fragments double-buffered by
hand). On an H100 (benchmarks/s26-2026-12-06/): the one-tile kernel at 2,380 cycles against
2,432 ran 2.0-2.4% faster, and a stream-K version at 2,403 cycles against 2,449 but with 877
bank collisions against 275 ran 4.6-5.5% slower, so `bank` costs time too. A static view: it
cannot see L2, DRAM or the other warps, so a kernel it passes still has to be timed
(`benchmarks.gemm_configs`).

Needs cuobjdump and nvdisasm (`KGEN_CUOBJDUMP`, PATH, beside nvcc, or NVIDIA's pip wheels
`nvidia-cuda-cuobjdump` and `nvidia-cuda-nvdisasm`, which install on a machine without a GPU).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import click

from benchmarks.gemm_configs import configure
from kgen.arch import parse_arch
from kgen.author import space
from kgen.compile import compile_source
from kgen.errors import KgenError
from kgen.toolkit import missing, tool

FMA_OPS = ("FFMA", "HMMA", "HGMMA")
_INSTRUCTION = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\* (0x[0-9a-f]{16}) \*/")
_CONTROL_WORD = re.compile(r"^\s+/\* (0x[0-9a-f]{16}) \*/")
_BRANCH = re.compile(r"\bBRA\b.*?\b(0x[0-9a-f]+)")


@dataclass(frozen=True)
class Instruction:
    address: int
    text: str  # without the trailing semicolon, predicate included
    control: int  # the high 64 bits of the 128-bit instruction word

    # Volta and later keep the scheduling decisions in the top bits of each instruction
    # (bits 105-125 of 128): stall cycles, the scoreboard a result sets, the scoreboards waited on.
    @property
    def stall(self) -> int:
        return (self.control >> 41) & 0xF

    @property
    def sets_scoreboard(self) -> int | None:
        board = (self.control >> 46) & 0x7
        return None if board == 7 else board

    @property
    def waits_on(self) -> int:
        return (self.control >> 52) & 0x3F

    @property
    def mnemonic(self) -> str:
        """The opcode with its modifiers (`LDG.E.128.CONSTANT`), past any `@P` predicate."""
        words = self.text.split()
        return words[1] if words[0].startswith("@") and len(words) > 1 else words[0]

    @property
    def opcode(self) -> str:
        return self.mnemonic.split(".")[0]

    @property
    def operands(self) -> list[str]:
        """Destination first, then the sources, as written."""
        rest = self.text.split(None, 2 if self.text.startswith("@") else 1)
        return rest[-1].split(",") if len(rest) > 1 else []


def parse_sass(text: str) -> dict[str, list[Instruction]]:
    """cuobjdump -sass output: each function's instructions with their control bits."""
    functions: dict[str, list[Instruction]] = {}
    current: list[Instruction] | None = None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "Function : " in line:
            current = functions.setdefault(line.split("Function : ", 1)[1].strip(), [])
            continue
        m = _INSTRUCTION.match(line)
        if m and current is not None and i + 1 < len(lines):
            control = _CONTROL_WORD.match(lines[i + 1])
            if control:
                current.append(Instruction(int(m.group(1), 16), m.group(2),
                                           int(control.group(1), 16)))
    return functions


def main_loop(code: list[Instruction]) -> list[Instruction]:
    """The innermost loop (a backward branch's span holding no shorter loop with FMA-class
    instructions) with the most of them, the shorter on a tie; empty when no loop has any. A loop
    that merely encloses FMA loops is not one: a kernel with two copies of its main loop (the
    wgmma kernel built for two cluster sizes) may have a backward branch around both."""
    index = {ins.address: i for i, ins in enumerate(code)}
    spans = []  # (first index, last index, FMA-class count) of every loop that has any
    for i, ins in enumerate(code):
        m = _BRANCH.search(ins.text)
        if not m or int(m.group(1), 16) > ins.address or int(m.group(1), 16) not in index:
            continue
        start = index[int(m.group(1), 16)]
        fmas = sum(x.opcode in FMA_OPS for x in code[start:i + 1])
        if fmas:
            spans.append((start, i, fmas))
    innermost = [(a, b, f) for a, b, f in spans
                 if not any(a <= a2 and b2 <= b and (a2, b2) != (a, b) for a2, b2, _ in spans)]
    if not innermost:
        return []
    a, b, _ = max(innermost, key=lambda span: (span[2], -(span[1] - span[0])))
    return code[a:b + 1]


def _bytes_moved(ins: Instruction) -> int:
    """Bytes one thread moves with a global load or a shared load or store (0 for the rest)."""
    if ins.opcode not in ("LDG", "LDS", "STS", "LDSM"):
        return 0
    width = re.search(r"\.(64|128)\b", ins.mnemonic)  # not the operands' R2.64 register pairs
    return int(width.group(1)) // 8 if width else 4


def hot_path(loop: list[Instruction]) -> list[Instruction]:
    """The steady-state trip through the loop: of the paths from its head to its back edge, one
    that moves the most bytes through global and shared memory (so every load and store of a full
    k-step, not a last step that skips the prefetch), and of those the fewest instructions (so an
    interior tile's plain loads, not the guarded edge-tile loads that move the same bytes)."""
    if not loop:
        return []
    first, last = loop[0].address, loop[-1].address
    starts = {first} | {int(m.group(1), 16) for ins in loop if (m := _BRANCH.search(ins.text))
                        and first <= int(m.group(1), 16) <= last}
    blocks: list[list[Instruction]] = []
    for ins in loop:
        if not blocks or ins.address in starts or blocks[-1][-1].opcode in ("BRA", "EXIT"):
            blocks.append([])
        blocks[-1].append(ins)
    at = {block[0].address: i for i, block in enumerate(blocks)}
    # score[i]: (bytes, -instructions) of the best path from block i to the back edge; then[i]:
    # the block it goes on to. Blocks are in address order and, in an innermost loop, every edge
    # but the back edge goes forward, so one pass from the end settles them.
    score: list[tuple[int, int] | None] = [None] * len(blocks)
    then: list[int | None] = [None] * len(blocks)
    for i in range(len(blocks) - 1, -1, -1):
        block, tail = blocks[i], blocks[i][-1]
        here = (sum(_bytes_moved(x) for x in block), -len(block))
        if i == len(blocks) - 1:  # ends with the back edge
            score[i] = here
            continue
        options = []
        m = _BRANCH.search(tail.text)
        if m and int(m.group(1), 16) in at and int(m.group(1), 16) > tail.address:
            options.append(at[int(m.group(1), 16)])
        predicated = tail.text.startswith("@") or re.search(r"\bBRA\s+!?P\d", tail.text)
        if tail.opcode not in ("BRA", "EXIT") or predicated:  # it can fall through
            options.append(i + 1)
        reachable = [(onward, j) for j in options if (onward := score[j]) is not None]
        if reachable:
            (moved, count), j = max(reachable)
            score[i], then[i] = (here[0] + moved, here[1] + count), j
    path: list[Instruction] = []
    at_block: int | None = 0
    while at_block is not None and score[at_block] is not None:
        path += blocks[at_block]
        at_block = then[at_block]
    return path


def near_shared_loads(code: list[Instruction], near: int) -> list[int]:
    """For each shared load that sets a scoreboard: the issue cycles until the first instruction
    that waits on that scoreboard, where fewer than `near`. (Shared loads complete in order, so
    ptxas gives a scoreboard only to the loads whose results are awaited first.)"""
    found = []
    for i, ins in enumerate(code):
        board = ins.sets_scoreboard
        if ins.opcode not in ("LDS", "LDSM") or board is None:
            continue
        cycles = 0
        for later in code[i + 1:]:
            if later.waits_on >> board & 1:
                if cycles < near:
                    found.append(cycles)
                break
            cycles += later.stall
    return sorted(found)


def bank_collisions(code: list[Instruction]) -> int:
    """FFMAs with two source registers in one bank (number mod 4), reuse-cache operands aside."""
    count = 0
    for ins in code:
        if ins.opcode != "FFMA":
            continue
        banks = [int(m.group(1)) % 4 for op in ins.operands[1:]
                 if (m := re.match(r"\s*-?\|?R(\d+)(\.reuse)?", op)) and not m.group(2)]
        count += len(banks) != len(set(banks))
    return count


@dataclass(frozen=True)
class LoopReport:
    kernel: str
    loop: int
    hot: int
    cycles: int
    near: tuple[int, ...]
    bank: int
    fmas: int

    def line(self) -> str:
        return (f"{self.kernel}: loop {self.loop} instructions ({self.fmas} FMA), hot {self.hot}, "
                f"cycles {self.cycles}, near LDS {len(self.near)} {list(self.near)}, "
                f"bank {self.bank}")


def report(functions: dict[str, list[Instruction]], near: int = 30) -> list[LoopReport]:
    out = []
    for name, code in functions.items():
        loop = main_loop(code)
        if not loop:
            continue
        hot = hot_path(loop)
        out.append(LoopReport(name, len(loop), len(hot), sum(x.stall for x in hot),
                              tuple(near_shared_loads(hot, near)), bank_collisions(hot),
                              sum(x.opcode in FMA_OPS for x in loop)))
    return out


def disassemble(cubin: bytes) -> str:
    cuobjdump = tool("cuobjdump")
    if cuobjdump is None:
        raise SystemExit(missing("cuobjdump") + "; pip install nvidia-cuda-cuobjdump "
                         "nvidia-cuda-nvdisasm gives one")
    env = dict(os.environ)
    if (nvdisasm := tool("nvdisasm")) is not None:  # cuobjdump runs it to print SASS
        env["NVDISASM_PATH"] = str(nvdisasm.parent)
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        done = subprocess.run([str(cuobjdump), "-sass", f.name], capture_output=True, text=True,
                              timeout=120, env=env)
    if done.returncode:
        raise SystemExit(f"cuobjdump -sass failed: {done.stderr.strip()[:300]}")
    return done.stdout


@click.command(help=__doc__)
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--arch", "arch_name", default="sm_90", show_default=True)
@click.option("--dtype", default="float32", show_default=True, help="with --set")
@click.option("--set", "sets", multiple=True, help="builtin gemm default with field=value ...")
@click.option("--near", default=30, show_default=True, help="cycles that count as near")
def main(files: tuple[Path, ...], arch_name: str, dtype: str, sets: tuple[str, ...],
         near: int) -> None:
    try:
        arch = parse_arch(arch_name)
    except KgenError as e:
        raise SystemExit(f"--arch {arch_name}: {e}") from None
    if not files and not sets:
        raise SystemExit("give .cu or .cubin files, or --set (\"\" for the default)")
    jobs: list[tuple[str, bytes | str]] = [(str(f), f.read_bytes() if f.suffix == ".cubin"
                                            else f.read_text(errors="replace")) for f in files]
    for changes in sets:
        p = configure(arch_name, dtype, changes)
        jobs.append((p.choices, space.render(p, dtype)))
    for label, content in jobs:
        resources = ""
        if isinstance(content, str):
            result = compile_source(content, arch)
            if result.cubin is None:
                raise SystemExit(f"{label}: does not compile: {result.summary[:300]}")
            cubin = result.cubin
            resources = "; ".join(
                f"{k}: {u.registers} registers, {u.spill_stores + u.spill_loads} spill bytes"
                for k, u in result.resources.items())
        else:
            cubin = content
        click.echo(label + (f" ({resources})" if resources else ""))
        functions = parse_sass(disassemble(cubin))
        rows = {row.kernel: row for row in report(functions, near)}
        for name in functions:
            click.echo("  " + (rows[name].line() if name in rows else
                               f"{name}: no loop of {'/'.join(FMA_OPS)} instructions"))


if __name__ == "__main__":
    main()
