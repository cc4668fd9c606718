// CPU stand-in for cuda_fp16.h: the storage types and the conversions the templates use.
#pragma once
#include <string.h>
struct __half {
  unsigned short bits;
};
inline float __half2float(__half h) {
  _Float16 f;
  memcpy(&f, &h.bits, 2);
  return (float)f;
}
inline __half __float2half_rn(float v) {
  _Float16 f = (_Float16)v;  // round to nearest even, as __float2half_rn
  __half h;
  memcpy(&h.bits, &f, 2);
  return h;
}
struct __half2 {
  __half x, y;
};
inline __half2 __floats2half2_rn(float a, float b) { return {__float2half_rn(a), __float2half_rn(b)}; }
inline __half __float2half(float v) { return __float2half_rn(v); }
