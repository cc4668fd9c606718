"""The builtin 3xTF32 template (kgen/author/templates/gemm_tf32x3.cu, which the file prepared here
in the nineteenth session became) at the parameters the twentieth session timed on an H100, one
.cu each, for `kgen bench`.

    python3 benchmarks/s19-2026-12-05/tf32x3/variants.py OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from kgen.author.tf32x3 import Tf32x3Params, render

# (BM, BN, BK, WM, WN, STAGES, GROUP); the first is the template's default. MIN_BLOCKS 2 and
# 128x256 tiles, tried with the prepared file, spill since the per-slice partial.
CONFIGS = [
    (128, 128, 32, 2, 4, 3, 8),
    (128, 128, 32, 2, 4, 4, 8),
    (128, 128, 16, 2, 4, 4, 8),
    (128, 128, 32, 4, 2, 3, 8),
    (64, 128, 32, 2, 2, 4, 8),
    (128, 128, 32, 2, 4, 3, 16),
]

if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for config in CONFIGS:
        name = "tf32x3_" + "_".join(map(str, config)) + ".cu"
        (out / name).write_text(render(Tf32x3Params(*config), "float32"))
        print(out / name)
