"""Every fact kgen uses about a data type, in one table: size, C type, torch name, header,
tensor-core support and default tolerances. Spec checks, prompts, the author, the worker and the
report all read it from here."""

from __future__ import annotations

from dataclasses import dataclass

from kgen.errors import UsageError


@dataclass(frozen=True)
class DType:
    name: str  # as specs and the contract spell it: float16
    size: int  # bytes per element
    ctype: str  # the CUDA C++ element type
    short: str  # suffix for kernel names: f16
    header: str  # the header that declares ctype ("" when built in)
    torch: str  # the attribute of the torch module: torch.float16
    is_float: bool
    tensor_cores: bool  # mma.sync/wgmma take it as an input type (float16, bfloat16)
    reference: str  # the dtype a reference is computed in by default
    atol: float  # default tolerances of a spec that names none
    rtol: float


DTYPES: dict[str, DType] = {d.name: d for d in (
    DType("float32", 4, "float", "f32", "", "float32", True, False, "float64", 1e-4, 1e-4),
    DType("float16", 2, "__half", "f16", "cuda_fp16.h", "float16", True, True, "float32",
          1e-2, 1e-2),
    DType("bfloat16", 2, "__nv_bfloat16", "bf16", "cuda_bf16.h", "bfloat16", True, True,
          "float32", 5e-2, 2e-2),
    DType("float64", 8, "double", "f64", "", "float64", True, False, "float64", 1e-10, 1e-10),
    DType("int32", 4, "int", "i32", "", "int32", False, False, "int64", 0.0, 0.0),
    DType("int64", 8, "long long", "i64", "", "int64", False, False, "int64", 0.0, 0.0),
)}
FLOAT_DTYPES = tuple(n for n, d in DTYPES.items() if d.is_float)


def dtype(name: str) -> DType:
    """The facts of one dtype; UsageError naming the known ones."""
    try:
        return DTYPES[name]
    except KeyError:
        raise UsageError(f"unknown dtype {name!r} (known: {', '.join(DTYPES)})") from None


def ctypes() -> dict[str, str]:
    """dtype name -> CUDA C++ type, for the prompts."""
    return {n: d.ctype for n, d in DTYPES.items()}
