"""Pieces every gemm template shares: C types, headers, the `// kgen:` contract header."""

from __future__ import annotations

CTYPE = {"float32": "float", "float16": "__half", "bfloat16": "__nv_bfloat16"}
SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}

# The KGEN_* macros switch on the conversion helpers of the dtype the file is for.
HEADERS = {
    "float32": "",
    "float16": "#include <cuda_fp16.h>\n#define KGEN_HALF 1\n",
    "bfloat16": "#include <cuda_bf16.h>\n#define KGEN_BF16 1\n",
}


def contract_header(dtype: str, choices: str, launch: str, about: str) -> str:
    """The contract lines plus a comment saying who wrote the file and what it is."""
    return (f"// kgen: op=gemm dtype={dtype}\n"
            f"// kgen: choices {choices}\n"
            f"// kgen: launch {launch}\n"
            f"// Written by kgen's builtin author (rule-based templates + search, not a language "
            f"model).\n// {about}\n"
            "// C[M,N] = A[M,K] @ B[K,N], all row-major.\n\n")
