"""The 3xTF32 gemm template's parameters and rendering (the CUDA is templates/gemm_tf32x3.cu):
float32 on the tensor cores of sm_80+, each input split into two TF32 values and three mma.sync
m16n8k8 products taken per term, with each k-slice's partial sum added to the float32 accumulator
rounded to nearest. Close to float32 accuracy, not the same arithmetic: the search keeps it only
where it passes the spec's float32 tolerance at every test size, and every label says 3xTF32."""

from __future__ import annotations

from dataclasses import dataclass

from kgen.author.common import contract_header, fill
from kgen.author.warptile import WarpTiledParams

# What the reports and `make bench` call this template.
LABEL = "3xTF32"


@dataclass(frozen=True)
class Tf32x3Params(WarpTiledParams):
    """Each thread also holds its k-slice's partial sums, as many registers again as
    `acc_per_thread` (the space's register estimate counts both)."""

    group: int = 8  # a grouped raster by default

    template = "tf32x3"

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory: A rows padded by 4 floats, B rows by 8, for every stage."""
        return self.stages * (self.bm * (self.bk + 4) + self.bk * (self.bn + 8)) * 4

    @property
    def choices(self) -> str:
        return f"template=tf32x3 {self.tile_choices} precision={LABEL}"


def render(p: Tf32x3Params, dtype: str) -> str:
    """The full .cu source (contract header first); float32 only."""
    assert dtype == "float32", "3xTF32 splits float32 inputs"
    name = "gemm_tf32x3_f32"
    about = (f"{LABEL} float32 gemm on the tensor cores (mma.sync m16n8k8 .tf32, three products "
             f"per term of the inputs split into TF32 halves), block tile {p.bm}x{p.bn}x{p.bk}, "
             f"{p.wm}x{p.wn} warps, {p.stages}-stage cp.async pipeline, {p.raster}, each k-slice "
             "added to a float32 accumulator rounded to nearest; sm_80+, any M, N, K.\n"
             "// C[M,N] = A[M,K] @ B[K,N], all row-major.")
    params = p.constants() + f"constexpr int STAGES = {p.stages}, GROUP = {p.group};\n"
    return (contract_header("gemm", dtype, p.choices, p.launch(name), about)
            + fill("gemm_tf32x3", params, name))
