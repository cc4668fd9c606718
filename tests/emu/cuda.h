// CPU stand-in for cuda.h: a CUtensorMap is the 128-byte value kgen passes by value; here it
// holds what the emulated TMA needs (tests/emu/hopper.h) instead of the driver's encoding. A map
// whose base is null is the all-zeros map of tmap(..., optional=1) where TMA cannot address a
// tensor.
#pragma once
#include <stdint.h>
struct alignas(64) CUtensorMap {
  const char* base;      // the tensor's first byte (a 2-D row-major tensor)
  uint64_t dims[2];      // elements, innermost first
  uint64_t row_bytes;    // stride of dimension 1
  uint32_t box[2];       // elements, innermost first
  uint32_t elem_bytes;
  uint32_t swizzle;      // bytes: 0, 32, 64 or 128
  char pad[128 - 8 - 16 - 8 - 8 - 4 - 4];
};
static_assert(sizeof(CUtensorMap) == 128, "a CUtensorMap is 128 bytes");
#define __grid_constant__
#define __cluster_dims__(...)

// The map kgen's launcher builds for tmap(TENSOR, box=..., swizzle=...) over a rows x cols
// row-major tensor; with `optional`, all zeros where TMA cannot address it (a base or row stride
// that is not a multiple of 16 bytes), as kgen/sandbox/launch.py does.
inline CUtensorMap emu_tensor_map(const void* base, uint64_t rows, uint64_t cols, uint32_t elem,
                                  uint32_t box0, uint32_t box1, uint32_t swizzle, bool optional) {
  CUtensorMap m = {};
  const bool can = (cols * elem) % 16 == 0 && (uintptr_t)base % 16 == 0;
  if (!can && optional) return m;
  if (!can) emu::fail("a tensor map TMA cannot address (base or row stride not 16-byte aligned)");
  m.base = (const char*)base;
  m.dims[0] = cols;
  m.dims[1] = rows;
  m.row_bytes = cols * elem;
  m.box[0] = box0;
  m.box[1] = box1;
  m.elem_bytes = elem;
  m.swizzle = swizzle;
  return m;
}
