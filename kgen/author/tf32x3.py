"""The 3xTF32 gemm template's parameters and rendering (the CUDA is templates/gemm_tf32x3.cu):
float32 on the tensor cores of sm_80+, each input split into two TF32 values and three mma.sync
m16n8k8 products taken per term, with each k-slice's partial sum added to the float32 accumulator
rounded to nearest. Close to float32 accuracy, not the same arithmetic: the search keeps it only
where it passes the spec's float32 tolerance at every test size, and every label says 3xTF32."""

from __future__ import annotations

from dataclasses import dataclass

from kgen.author.common import contract_header, fill

# What the reports and `make bench` call this template.
LABEL = "3xTF32"


@dataclass(frozen=True)
class Tf32x3Params:
    bm: int = 128
    bn: int = 128
    bk: int = 32
    wm: int = 2  # warps along M
    wn: int = 4  # warps along N
    stages: int = 3
    group: int = 8  # block rows per raster group (1: plain row-major block order)

    template = "tf32x3"

    @property
    def threads(self) -> int:
        return self.wm * self.wn * 32

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory: A rows padded by 4 floats, B rows by 8, for every stage."""
        return self.stages * (self.bm * (self.bk + 4) + self.bk * (self.bn + 8)) * 4

    @property
    def acc_per_thread(self) -> int:
        """Accumulator registers; the per-slice partial takes as many again."""
        return (self.bm // self.wm // 16) * (self.bn // self.wn // 8) * 4

    @property
    def choices(self) -> str:
        return (f"template=tf32x3 tile={self.bm}x{self.bn}x{self.bk} warps={self.wm}x{self.wn} "
                f"stages={self.stages} group={self.group} precision={LABEL}")


def render(p: Tf32x3Params, dtype: str) -> str:
    """The full .cu source (contract header first); float32 only."""
    assert dtype == "float32", "3xTF32 splits float32 inputs"
    name = "gemm_tf32x3_f32"
    launch = (f"{name} grid=(cdiv(N,{p.bn}), cdiv(M,{p.bm})) block=({p.threads}) "
              f"smem={p.smem_bytes} args=(A, B, C, M, N, K)")
    raster = f"grouped raster of {p.group} block rows" if p.group > 1 else "row-major raster"
    about = (f"{LABEL} float32 gemm on the tensor cores (mma.sync m16n8k8 .tf32, three products "
             f"per term of the inputs split into TF32 halves), block tile {p.bm}x{p.bn}x{p.bk}, "
             f"{p.wm}x{p.wn} warps, {p.stages}-stage cp.async pipeline, {raster}, each k-slice "
             "added to a float32 accumulator rounded to nearest; sm_80+, any M, N, K.\n"
             "// C[M,N] = A[M,K] @ B[K,N], all row-major.")
    params = (f"constexpr int BM = {p.bm}, BN = {p.bn}, BK = {p.bk}, WM = {p.wm}, WN = {p.wn};\n"
              f"constexpr int STAGES = {p.stages}, GROUP = {p.group};\n")
    return contract_header("gemm", dtype, p.choices, launch, about) + fill("gemm_tf32x3", params,
                                                                           name)
