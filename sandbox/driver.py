"""What cupy does not offer, from the CUDA driver through ctypes: building a CUtensorMap
(cuTensorMapEncodeTiled) and launching with thread-block clusters (cuLaunchKernelEx).

ctypes rather than cuda-bindings: it needs no package beyond the driver itself (the worker imports
only the standard library, torch and cupy), and both calls were verified on the H200 this way.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

from kgen.dtypes import DTYPES
from kgen.sandbox.rejected import Rejected

# CUtensorMapDataType (cuda.h, CUDA 13.0).
_TMA_TYPES = {"uint8": 0, "int32": 3, "int64": 5, "float16": 6, "float32": 7, "float64": 8,
              "bfloat16": 9}
_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}  # bytes -> CUtensorMapSwizzle
_L2_PROMOTION_128B = 2
_CLUSTER_DIMENSION = 4  # CUlaunchAttributeID
TENSOR_MAP_BYTES = 128


@functools.cache
def _libcuda() -> Any:
    return ctypes.CDLL("libcuda.so.1")


def _check(status: int, what: str) -> None:
    if status == 0:
        return
    name = ctypes.c_char_p()
    _libcuda().cuGetErrorName(status, ctypes.byref(name))
    text = name.value.decode() if name.value else f"CUresult {status}"
    raise Rejected("launch_error", f"{what} failed: {text}")


def can_map(ptr: int, shape: tuple[int, ...], element_size: int) -> bool:
    """Whether TMA can address this row-major tensor: 16-byte aligned base and strides."""
    stride = element_size
    for extent in reversed(shape[1:]):
        stride *= extent
        if stride % 16:
            return False
    return ptr % 16 == 0


def encode_tensor_map(ptr: int, dtype: str, shape: tuple[int, ...], box: tuple[int, ...],
                      swizzle: int, what: str) -> bytes:
    """A tiled tensor map over a row-major tensor: dims and box innermost first, zero fill."""
    size = DTYPES[dtype].size
    rank = len(shape)
    dims = (ctypes.c_uint64 * rank)(*reversed(shape))
    strides_bytes = []
    stride = size
    for extent in reversed(shape[1:]):
        stride *= extent
        strides_bytes.append(stride)
    strides = (ctypes.c_uint64 * max(1, rank - 1))(*(strides_bytes or [0]))
    boxes = (ctypes.c_uint32 * rank)(*box)
    elements = (ctypes.c_uint32 * rank)(*([1] * rank))
    # The driver asks for a 64-byte aligned CUtensorMap: place it inside a larger buffer.
    buffer = (ctypes.c_uint8 * (TENSOR_MAP_BYTES + 64))()
    address = ctypes.addressof(buffer) + (-ctypes.addressof(buffer)) % 64
    status = _libcuda().cuTensorMapEncodeTiled(
        ctypes.c_void_p(address), _TMA_TYPES[dtype], rank, ctypes.c_void_p(ptr), dims, strides,
        boxes, elements, 0, _SWIZZLE[swizzle], _L2_PROMOTION_128B, 0)
    _check(status, f"building the tensor map {what} (dims {tuple(shape)}, box {tuple(box)}, "
                   f"swizzle {swizzle})")
    return ctypes.string_at(address, TENSOR_MAP_BYTES)


class _ClusterDim(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint32), ("y", ctypes.c_uint32), ("z", ctypes.c_uint32)]


class _AttributeValue(ctypes.Union):
    _fields_ = [("pad", ctypes.c_char * 64), ("clusterDim", _ClusterDim)]


class _Attribute(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", _AttributeValue)]


class _LaunchConfig(ctypes.Structure):
    _fields_ = [("gridDimX", ctypes.c_uint32), ("gridDimY", ctypes.c_uint32),
                ("gridDimZ", ctypes.c_uint32), ("blockDimX", ctypes.c_uint32),
                ("blockDimY", ctypes.c_uint32), ("blockDimZ", ctypes.c_uint32),
                ("sharedMemBytes", ctypes.c_uint32), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_Attribute)), ("numAttrs", ctypes.c_uint32)]


def _pad3(dims: tuple[int, ...]) -> tuple[int, int, int]:
    x, y, z = (*dims, 1, 1)[:3]
    return x, y, z


def launch_with_cluster(function_ptr: int, grid: tuple[int, ...], block: tuple[int, ...],
                        smem: int, stream_ptr: int, cluster: tuple[int, ...],
                        args: list[Any]) -> None:
    """cuLaunchKernelEx with a cluster-dimension attribute; args are ctypes values in order."""
    attribute = _Attribute()
    attribute.id = _CLUSTER_DIMENSION
    attribute.value.clusterDim.x, attribute.value.clusterDim.y, attribute.value.clusterDim.z = \
        _pad3(cluster)
    config = _LaunchConfig(*_pad3(grid), *_pad3(block), smem, ctypes.c_void_p(stream_ptr),
                           ctypes.pointer(attribute), 1)
    params = (ctypes.c_void_p * len(args))(*(ctypes.cast(ctypes.byref(a), ctypes.c_void_p)
                                             for a in args))
    status = _libcuda().cuLaunchKernelEx(ctypes.byref(config), ctypes.c_void_p(function_ptr),
                                         params, None)
    _check(status, f"launching with cluster {tuple(cluster)}")
