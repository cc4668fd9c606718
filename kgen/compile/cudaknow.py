"""CUDA knowledge the diagnostics rules and the builtin fixer share: which header declares a
name, which intrinsics were removed, which names an author may mistype (facts from the CUDA guide).
"""

from __future__ import annotations

import re

# Names a CUDA author may mistype; offered beside the file's own identifiers.
CUDA_NAMES = ("threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "__syncthreads",
              "__syncwarp", "__shfl_sync", "__shfl_down_sync", "__shfl_up_sync",
              "__shfl_xor_sync", "atomicAdd", "__ldg", "fmaxf", "fminf", "sqrtf", "rsqrtf",
              "expf", "__expf", "__fdividef")

# An undefined name that a CUDA header declares: which header.
_HEADERS = (
    ("cuda_fp16.h", re.compile(r"^(__half2?|half2?|__float2half\w*|__half2float|__float22half2\w*|"
                               r"__floats2half2\w*|__half22float2|__low2float|__high2float|"
                               r"h(exp|log|sqrt|rsqrt|rcp|sin|cos)2?|__h(add|sub|mul|div|fma|max|"
                               r"min|neg|abs|eq|ne|lt|le|gt|ge|isnan|isinf)\w*)$")),
    ("cuda_bf16.h", re.compile(r"^(__nv_bfloat16\w*|nv_bfloat16\w*|__float2bfloat16\w*|"
                               r"__bfloat162float|__floats2bfloat162\w*|__bfloat1622float2)$")),
    ("mma.h", re.compile(r"^(wmma|nvcuda)$")),
    ("cooperative_groups.h", re.compile(r"^(cooperative_groups|cg)$")),
)
_HEADER_NOTES = {"mma.h": " (and `using namespace nvcuda;`)"}

# Pre-Volta warp intrinsics that CUDA 9+ removed in favour of the _sync forms.
REMOVED_WARP_INTRINSICS = re.compile(r"^__shfl(_up|_down|_xor)?$|^__(any|all|ballot)$")


def header_for(name: str) -> str | None:
    """The header (`cuda_fp16.h`) that declares `name`, or None."""
    return next((h for h, pattern in _HEADERS if pattern.match(name)), None)


def include_advice(header: str) -> str:
    """`<mma.h> (and using namespace nvcuda;)`: what to add, as a note says it."""
    return f"<{header}>{_HEADER_NOTES.get(header, '')}"
