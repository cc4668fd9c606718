"""gemm_tf32x3.cu with other parameters: the parameter block and the launch line rewritten.

    python3 variants.py OUT_DIR   # writes one .cu per configuration below, named by it
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).parent
# (BM, BN, BK, WM, WN, STAGES, GROUP, MIN_BLOCKS)
CONFIGS = [
    (128, 128, 32, 2, 4, 3, 8, 1),  # the file as it is
    (128, 128, 32, 2, 4, 4, 8, 1),
    (128, 128, 16, 2, 4, 4, 8, 1),
    (128, 128, 32, 4, 2, 3, 8, 1),
    (64, 128, 32, 2, 2, 4, 8, 1),
    (128, 128, 32, 2, 4, 3, 16, 1),
]
# Since the per-slice partial (twentieth session) takes 4 * MF * NF more registers, MIN_BLOCKS 2
# and 128x256 tiles spill; they were dropped from the list.


def render(bm: int, bn: int, bk: int, wm: int, wn: int, stages: int, group: int,
           min_blocks: int) -> str:
    source = (HERE / "gemm_tf32x3.cu").read_text()
    smem = stages * (bm * (bk + 4) + bk * (bn + 8)) * 4
    source = re.sub(r"constexpr int BM = .*;\n", f"constexpr int BM = {bm}, BN = {bn}, BK = {bk}, "
                    f"WM = {wm}, WN = {wn};\n", source, count=1)
    source = re.sub(r"constexpr int STAGES = .*\n", f"constexpr int STAGES = {stages}, GROUP = "
                    f"{group}, MIN_BLOCKS = {min_blocks};\n", source, count=1)
    return re.sub(r"// kgen: launch .*\n",
                  f"// kgen: launch gemm_tf32x3 grid=(cdiv(N,{bn}), cdiv(M,{bm})) "
                  f"block=({wm * wn * 32}) smem={smem} args=(A, B, C, M, N, K)\n",
                  source, count=1)


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for config in CONFIGS:
        name = "tf32x3_" + "_".join(map(str, config)) + ".cu"
        (out / name).write_text(render(*config))
        print(out / name)
