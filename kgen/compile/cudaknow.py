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


# Host-only library names nvcc rejects in device code ("calling a __host__ function ... is not
# allowed", "... is undefined in device code"), and what a kernel uses instead.
HOST_ONLY_INSTEAD = {
    "vector": "a fixed-size array (float v[N], N a compile-time constant), __shared__ memory for "
              "per-block data, or a buffer the host allocates and passes in",
    "array": "cuda::std::array (<cuda/std/array>) or a plain fixed-size array",
    "string": "no strings in device code: pass numbers in (device printf takes a literal format)",
    "map": "a sorted array searched with binary search, or a small hash table in a buffer the "
           "host allocates",
    "set": "a sorted array or a bitmask",
    "list": "an array with indices",
    "deque": "a ring buffer in a fixed-size array",
    "sort": "a sorting network in registers for a few values, or cub::BlockRadixSort / "
            "cub::WarpMergeSort (<cub/cub.cuh>) for a block's data",
    "cout": "device printf (printf(\"%f\\n\", x))",
    "min": "fminf/fmaxf for floats (or CUDA's device min/max)",
    "max": "fminf/fmaxf for floats (or CUDA's device min/max)",
    "function": "a functor or lambda passed as a template parameter",
    "unique_ptr": "plain pointers into buffers the host allocates",
    "accumulate": "a loop, a warp-shuffle reduction, or cub::BlockReduce",
    "rand": "curand (<curand_kernel.h>: curand_init, curand_uniform) or a hash of the global "
            "thread index",
}
HOST_ONLY_ALIASES = {"basic_string": "string", "_Rb_tree": "map", "_Hashtable": "map",
                     "unordered_map": "map", "multimap": "map", "unordered_set": "set",
                     "multiset": "set", "_Vector_base": "vector", "_Deque_base": "deque",
                     "_List_base": "list", "stable_sort": "sort", "partial_sort": "sort",
                     "basic_ostream": "cout", "cerr": "cout", "endl": "cout", "ostream": "cout",
                     "shared_ptr": "unique_ptr", "srand": "rand"}
# Helpers a library type drags in; their errors belong to the type's record.
HOST_ONLY_HELPERS = {"allocator", "char_traits", "pair", "less", "_Select1st",
                     "__new_allocator", "initializer_list", "iterator_traits", "_Identity",
                     "hash", "equal_to"}
STD_INSTEAD = ("a device-side equivalent: libcu++ (<cuda/std/...>) has device versions of many std "
               "facilities (array, tuple, complex, atomic, limits, span)")
CLIB_INSTEAD = ("compute it on the host and pass it in as a kernel argument (device code has "
                "printf, malloc and the math functions only)")
