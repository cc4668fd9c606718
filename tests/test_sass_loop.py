"""benchmarks.sass_loop: reading ptxas's schedule from SASS (no GPU; cuobjdump only for the CLI).

The fixture is `cuobjdump -sass` of tests/data/sass_fixture_loop.cu built for sm_90 by nvcc 13.0."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks import sass_loop
from benchmarks.sass_loop import (
    Instruction,
    bank_collisions,
    hot_path,
    main_loop,
    near_shared_loads,
    parse_sass,
    report,
)

FIXTURE = Path(__file__).parent / "data" / "sass_fixture_loop.sass"


def control(stall: int = 1, sets: int | None = None, waits: tuple[int, ...] = ()) -> int:
    """A control word as Volta and later encode it (the high 64 bits of an instruction)."""
    word = stall << 41 | (7 if sets is None else sets) << 46
    for board in waits:
        word |= 1 << (52 + board)
    return word


def program(*rows: tuple[str, int]) -> list[Instruction]:
    return [Instruction(16 * i, text, word) for i, (text, word) in enumerate(rows)]


@pytest.fixture(scope="module")
def fixture_code() -> list[Instruction]:
    functions = parse_sass(FIXTURE.read_text())
    assert list(functions) == ["fixture_loop"]
    return functions["fixture_loop"]


def test_every_instruction_is_read_with_its_control_word(fixture_code):
    listed = re.findall(r"^\s+/\*([0-9a-f]{4,})\*/", FIXTURE.read_text(), re.MULTILINE)
    assert [ins.address for ins in fixture_code] == [int(a, 16) for a in listed]
    assert fixture_code[0].address == 0 and fixture_code[0].opcode == "LDC"


def test_scoreboards_decode_where_the_results_are_used(fixture_code):
    """Not circular: for every shared load that sets a scoreboard, the first later instruction
    that reads its destination register waits on that scoreboard, or comes after one that did.
    With the bit fields misplaced the waits would not line up with the data flow."""
    checked = 0
    for i, ins in enumerate(fixture_code):
        board = ins.sets_scoreboard
        if ins.opcode != "LDS" or board is None:
            continue
        dest = re.search(r"LDS\S*\s+(R\d+)", ins.text).group(1)
        waited = False
        for later in fixture_code[i + 1:]:
            waited = waited or bool(later.waits_on >> board & 1)
            sources = later.text.split(",", 1)[1] if "," in later.text else ""
            if re.search(rf"\b{dest}\b", sources):
                assert waited, f"{later.text} reads {dest} before waiting on scoreboard {board}"
                checked += 1
                break
    assert checked >= 4


def test_main_loop_is_the_fma_loop(fixture_code):
    loop = main_loop(fixture_code)
    assert sum(x.opcode == "FFMA" for x in loop) == 16  # 8 unrolled steps, two FMAs each
    assert loop[-1].opcode == "BRA" and loop[-1].text.endswith(hex(loop[0].address))
    assert any(x.opcode == "LDS" for x in loop)
    rows = report({"fixture_loop": fixture_code}, near=1000)
    assert rows[0].fmas == 16 and rows[0].cycles == sum(x.stall for x in loop)


def test_main_loop_is_innermost_where_a_branch_encloses_two_copies():
    """Two FMA loops (a kernel body built twice) and a backward branch around both: the outer
    span holds more FMAs but is not a main loop; the inner one with more FMAs is."""
    code = program(("MOV R0, RZ", control()),             # 0x00: the outer loop's head
                   ("FFMA R6, R4, R5, R6", control()),    # 0x10: first copy
                   ("@P0 BRA 0x10", control()),           # 0x20
                   ("FFMA R7, R4, R5, R7", control()),    # 0x30: second copy, two FMAs
                   ("FFMA R8, R4, R5, R8", control()),    # 0x40
                   ("@P1 BRA 0x30", control()),           # 0x50
                   ("@P2 BRA 0x0", control()))            # 0x60: around both
    assert [x.address for x in main_loop(code)] == [0x30, 0x40, 0x50]


def test_near_shared_loads_counts_issue_cycles_to_the_first_wait():
    code = program(("LDS R8, [R2]", control(sets=0)),
                   ("FFMA R10, R4, R5, R10", control(stall=4)),
                   ("FFMA R11, R4, R6, R11", control(stall=6)),
                   ("FFMA R12, R8, R5, R12", control(waits=(0,))),
                   ("LDS R9, [R2+0x4]", control(sets=1)),
                   *[("FFMA R13, R4, R5, R13", control(stall=10))] * 5,
                   ("FFMA R14, R9, R5, R14", control(waits=(1,))),
                   ("LDS R15, [R2+0x8]", control()))  # no scoreboard: not counted
    assert near_shared_loads(code, near=30) == [10]  # the second load's 50 cycles are not near
    assert near_shared_loads(code, near=60) == [10, 50]


def test_bank_collisions_count_same_bank_sources_outside_the_reuse_cache():
    code = program(("FFMA R0, R4, R8, R1", control()),  # banks 0, 0, 1: a collision
                   ("FFMA R0, R4.reuse, R8, R1", control()),  # R4 from the reuse cache
                   ("FFMA R0, R5, R6, R7", control()),  # banks 1, 2, 3
                   ("@P0 FFMA R0, R2, R6, R3", control()),  # predicated, banks 2, 2, 3
                   ("IADD3 R0, R4, R8, RZ", control()))  # not an FFMA
    assert bank_collisions(code) == 2


def test_hot_path_is_the_full_step_with_the_fewest_instructions():
    """Three ways through: plain 128-bit loads (short), guarded scalar loads moving the same bytes
    (long), and a last step that skips the loads (short, but moves less): the first is taken."""
    guarded = [(f"@!P2 LDG.E R{12 + i}, desc[UR4][R10.64+{hex(4 * i)}]", control())
               for i in range(8)]  # the same 32 bytes; R10.64 is an address, not a 64-bit load
    code = program(("ISETP.GE.AND P0, PT, R1, R2, PT", control()),  # 0x00
                   ("@P0 BRA 0xe0", control()),  # 0x10: the last step, no prefetch
                   ("@P1 BRA 0x60", control()),  # 0x20: an edge tile
                   ("LDG.E.128 R4, desc[UR4][R10.64]", control()),  # 0x30: plain
                   ("LDG.E.128 R8, desc[UR4][R10.64+0x10]", control()),  # 0x40
                   ("BRA 0xe0", control()),  # 0x50
                   *guarded,  # 0x60-0xd0
                   ("FFMA R6, R4, R5, R6", control()),  # 0xe0
                   ("@P3 BRA 0x0", control()))  # 0xf0: the back edge
    assert [x.address for x in hot_path(code)] == [0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0xe0, 0xf0]


def test_cli_needs_something_to_read():
    result = CliRunner().invoke(sass_loop.main, [])
    assert result.exit_code != 0 and "give .cu or .cubin files" in result.output


def test_cli_says_how_to_get_cuobjdump(monkeypatch, tmp_path):
    monkeypatch.setattr(sass_loop, "tool", lambda name: None)
    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(b"\x7fELF")
    result = CliRunner().invoke(sass_loop.main, [str(cubin)])
    assert result.exit_code != 0
    assert "cuobjdump" in result.output and "pip install nvidia-cuda-cuobjdump" in result.output


# cuobjdump (NVIDIA's wheel, a test dependency) reads the SASS back.
with_cuobjdump = pytest.mark.skipif(
    sass_loop.tool("cuobjdump") is None,
    reason="no cuobjdump (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")


@pytest.mark.nvcc
@with_cuobjdump
def test_cli_reads_a_compiled_kernel_as_the_recorded_sass_says():
    """End to end: nvcc, cuobjdump (NVIDIA's wheel, a test dependency) and the report. The fixture
    was recorded with this CI's nvcc (13.0), so the fresh SASS reads the same."""
    source = FIXTURE.with_suffix(".cu")
    result = CliRunner().invoke(sass_loop.main, [str(source), "--arch", "sm_90"])
    assert result.exit_code == 0, result.output
    recorded = report(parse_sass(FIXTURE.read_text()))[0]
    assert result.output.splitlines()[0].startswith(f"{source} (fixture_loop: ")
    assert result.output.splitlines()[1].strip() == recorded.line()
    assert "(16 FMA)" in recorded.line()


@pytest.mark.nvcc
@pytest.mark.slow
@with_cuobjdump
def test_simt_stream_k_main_loop_reads_as_the_one_tile_grids():
    """A structural guard, not a timing: the float32 SIMT stream-K kernel (sk=1; the default,
    sk=3, launches it for the last tiles) once ran 7% slower per tile because ptxas scheduled its
    fragment loads too close to their use (benchmarks/sass-2026-12-04-s12), and a version with
    32-bit load indices ran 4.6% slower with three times the one-tile kernel's FFMA
    register-bank collisions (twenty-sixth session). Its hot loop must keep the one-tile
    kernel's shape: no more near shared loads, issue cycles within 4% (the one-tile kernel's
    32-bit load indices for A save it about 2%), and bank collisions within 1.5 times. The files
    with both kernels: sk=2's must each read exactly as the file built for it alone (ptxas
    allocates each kernel on its own); in the default's, the persistent kernel's loop reads as
    sk=1's and the one-tile kernel's (which returns early past its tiles) as sk=0's, within 1%
    of its issue cycles and 10% of its bank collisions (2,383 and 256 against 2,380 and 264 when
    it was timed, twenty-eighth session)."""
    import dataclasses

    from kgen.arch import parse_arch
    from kgen.author import space
    from kgen.compile import compile_source

    arch = parse_arch("sm_90")
    default = space.default(arch, "float32")
    assert default.sk == 3
    rows = []
    for sk in (0, 1, 2, 3):
        result = compile_source(space.render(dataclasses.replace(default, sk=sk), "float32"),
                                arch)
        assert result.cubin is not None, result.summary
        rows.append(report(parse_sass(sass_loop.disassemble(result.cubin))))
    [base], [stream_k], by_size, two_launches = rows
    assert base.fmas == stream_k.fmas == 2048
    assert len(stream_k.near) <= len(base.near), (base.line(), stream_k.line())
    assert stream_k.cycles <= 1.04 * base.cycles, (base.line(), stream_k.line())
    assert stream_k.bank <= 1.5 * base.bank, (base.line(), stream_k.line())
    renamed = dataclasses.replace(stream_k, kernel="gemm_simt_f32_sk")
    assert {row.kernel: row for row in by_size} == {"gemm_simt_f32": base,
                                                    "gemm_simt_f32_sk": renamed}
    rounds = {row.kernel: row for row in two_launches}
    assert rounds["gemm_simt_f32_sk"] == renamed
    one = rounds["gemm_simt_f32"]
    assert one.fmas == 2048 and len(one.near) <= len(base.near), (base.line(), one.line())
    assert one.cycles <= 1.01 * base.cycles and one.bank <= 1.1 * base.bank, \
        (base.line(), one.line())


@pytest.mark.nvcc
@with_cuobjdump
def test_wgmma_phase_stamps_are_only_in_the_diagnostic_build():
    """benchmarks/s22-2026-12-06/wgmma_phases.py builds the wgmma default with
    -DKGEN_DIAG_TIMES=1 to read each tile's phases from clock64() stamps. That build must compile
    without spills and read the SM clock; the kernel kgen renders must not read it."""
    from kgen.arch import parse_arch
    from kgen.author import space
    from kgen.compile import compile_source

    arch = parse_arch("sm_90a")
    source = space.render(space.default(arch, "bfloat16"), "bfloat16")
    reads_clock = re.compile(r"CS2R\s+R\d+,\s*SR_CLOCKLO")
    found = {}
    for label, text in (("rendered", source), ("stamped", "#define KGEN_DIAG_TIMES 1\n" + source)):
        result = compile_source(text, arch)
        assert result.cubin is not None, result.summary
        assert all(r.spill_stores == 0 for r in result.resources.values()), label
        found[label] = len(reads_clock.findall(sass_loop.disassemble(result.cubin)))
    assert found["rendered"] == 0 and found["stamped"] >= 5, found
