// CPU stand-in for cuda_bf16.h: the storage types and the conversions the templates use.
#pragma once
#include <string.h>
struct __nv_bfloat16 {
  unsigned short bits;
};
inline float __bfloat162float(__nv_bfloat16 h) {
  const unsigned u = (unsigned)h.bits << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
inline __nv_bfloat16 __float2bfloat16_rn(float v) {
  unsigned u;
  memcpy(&u, &v, 4);
  __nv_bfloat16 h;
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    h.bits = 0x7fc0;  // NaN
  } else {
    h.bits = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);  // round to nearest even
  }
  return h;
}
struct __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
  return {__float2bfloat16_rn(a), __float2bfloat16_rn(b)};
}
inline __nv_bfloat16 __float2bfloat16(float v) { return __float2bfloat16_rn(v); }
