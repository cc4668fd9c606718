"""What the two mma.sync gemm templates' parameters share (mma.py: float16/bfloat16; tf32x3.py:
float32 as 3xTF32): a block tile, a grid of warps over it, a cp.async ring of stages and a
grouped block raster, and the launch line and constants that follow from them. Each template
adds its own fields, shared-memory size and labels."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WarpTiledParams:
    bm: int = 128
    bn: int = 128
    bk: int = 32
    wm: int = 2  # warps along M
    wn: int = 4  # warps along N
    stages: int = 3
    group: int = 1  # block rows per raster group (1: plain row-major block order)

    @property
    def threads(self) -> int:
        return self.wm * self.wn * 32

    @property
    def smem_bytes(self) -> int:
        raise NotImplementedError  # the template's padded tiles

    @property
    def acc_per_thread(self) -> int:
        """float32 accumulators per thread: a warp's tile in m16n8 pieces of 4."""
        return (self.bm // self.wm // 16) * (self.bn // self.wn // 8) * 4

    @property
    def tile_choices(self) -> str:
        """The common part of the `choices` line that reports and the search read back."""
        return (f"tile={self.bm}x{self.bn}x{self.bk} warps={self.wm}x{self.wn} "
                f"stages={self.stages} group={self.group}")

    @property
    def raster(self) -> str:
        if self.group > 1:
            return f"grouped raster of {self.group} block rows"
        return "row-major raster"

    def launch(self, name: str) -> str:
        """The contract's launch line: a block per output tile."""
        return (f"{name} grid=(cdiv(N,{self.bn}), cdiv(M,{self.bm})) block=({self.threads}) "
                f"smem={self.smem_bytes} args=(A, B, C, M, N, K)")

    def constants(self) -> str:
        """The template's tile constants (the parameter block's common lines)."""
        return (f"constexpr int BM = {self.bm}, BN = {self.bn}, BK = {self.bk}, WM = {self.wm}, "
                f"WN = {self.wn};\n")
