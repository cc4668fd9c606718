// CPU stand-ins for the PTX wrappers of the builtin mma.sync gemm templates (gemm_mma.cu for
// float16/bfloat16, gemm_tf32x3.cu for float32): tests/emulate.py puts this file in place of a
// template's `kgen:mma` block and runs the kernel in lockstep (tests/emu/kgen_emu.h), its warps'
// collective instructions exchanging registers through a slot per thread, as shuffles do.
//
// What is modelled, from the PTX ISA:
// - cp.async: each copy waits in its thread's open group until cp.async.commit_group closes it,
//   and lands (16 bytes, or zeros where src-size is 0) only when cp.async.wait_group lets fewer
//   groups stay pending; a stage read before its wait holds the poison of the shared buffer or an
//   older tile.
// - ldmatrix .x4 (and .trans): lanes 8i..8i+7 give the row addresses of matrix i; lane l gets
//   the 32-bit word l % 4 of row l / 4 of each matrix (.trans: the two 16-bit elements of column
//   l / 4 in rows 2 (l % 4) and 2 (l % 4) + 1).
// - mma.sync m16n8k8 .tf32 and m16n8k16 .f16/.bf16 with float32 accumulators, each lane's
//   fragment as the ISA lays it out (g = lane / 4, t = lane % 4). TF32 operands keep their top 19
//   bits. Each instruction's products are summed exactly with the accumulator and the sum rounded
//   toward zero, as the tensor cores do (the reason tf32x3 adds its k-slices outside them).
// - cvt.rna.tf32.f32: round to 10 mantissa bits, ties away from zero.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

#include <vector>

#define __noinline__
struct __align__(8) float2 {
  float x, y;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float __uint_as_float(unsigned u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned u;
  memcpy(&u, &f, 4);
  return u;
}

namespace emu_mma {
struct Copy {
  uint32_t dst;
  const void* src;
  int bytes;
};
struct Pending {
  std::vector<std::vector<Copy>> groups;
  std::vector<Copy> open;
};
inline std::vector<Pending> pending;  // per thread of the block
inline uint32_t lanes[1024][8];       // the registers a collective instruction exchanges

inline Pending& mine() {
  if (pending.size() < 1024) pending.resize(1024);
  return pending[emu::linear()];
}
inline char* smem(uint32_t addr, size_t bytes) {
  if ((size_t)addr + bytes > emu::dynamic_smem.size())
    emu::fail("a shared-memory access past the dynamic size");
  return emu::dynamic_smem.data() + addr;
}
// Every lane's `n` registers in the slots, then (after the warp's other lanes have put theirs)
// the calling lane's warp base.
inline int exchange(const uint32_t* regs, int n) {
  const int me = emu::linear();
  for (int i = 0; i < n; ++i) lanes[me][i] = regs[i];
  emu::barrier(1);
  return me & ~31;
}
inline float tf32_value(uint32_t bits) {  // the tensor cores read the top 19 bits
  return __uint_as_float(bits & 0xFFFFE000u);
}
inline float half_value(uint32_t bits, int which, bool bf16) {
  const unsigned short h = (unsigned short)(bits >> (16 * which));
  if (bf16) return __uint_as_float((uint32_t)h << 16);
  __half v;
  v.bits = h;
  return __half2float(v);
}
inline float toward_zero(double sum) {
  float f = (float)sum;
  if (fabs((double)f) > fabs(sum)) f = nextafterf(f, 0.f);
  return f;
}
}  // namespace emu_mma

inline uint32_t smem_u32(const void* p) {
  const char* at = (const char*)p;
  if (at < emu::dynamic_smem.data() || at >= emu::dynamic_smem.data() + emu::dynamic_smem.size())
    emu::fail("a shared-memory address outside the dynamic shared memory");
  return (uint32_t)(at - emu::dynamic_smem.data());
}
inline void cp_async16(void* dst, const void* src, int src_bytes) {
  const uint32_t at = smem_u32(dst);
  if (at % 16 || (uintptr_t)src % 16) emu::fail("cp.async of 16 bytes not 16-byte aligned");
  if (src_bytes != 0 && src_bytes != 16) emu::fail("cp.async src-size other than 0 or 16");
  emu_mma::mine().open.push_back({at, src, src_bytes});
}
inline void cp_async_commit() {
  emu_mma::Pending& p = emu_mma::mine();
  p.groups.push_back(std::move(p.open));
  p.open.clear();
}
template <int N_> inline void cp_async_wait() {
  emu_mma::Pending& p = emu_mma::mine();
  while ((int)p.groups.size() > N_) {
    for (const emu_mma::Copy& c : p.groups.front()) {
      char* to = emu_mma::smem(c.dst, 16);
      if (c.bytes) memcpy(to, c.src, 16); else memset(to, 0, 16);
    }
    p.groups.erase(p.groups.begin());
  }
}
inline bool aligned16(const void* p) { return ((uintptr_t)p & 15) == 0; }

template <class E> inline void ldmatrix_emu(unsigned* r, const E* p, bool trans) {
  const uint32_t addr = smem_u32(p);
  if (addr % 16) emu::fail("an ldmatrix row address not 16-byte aligned");
  const int base = emu_mma::exchange(&addr, 1), lane = emu::linear() & 31;
  for (int i = 0; i < 4; ++i) {
    if (!trans) {
      memcpy(&r[i], emu_mma::smem(emu_mma::lanes[base + 8 * i + lane / 4][0] + (lane % 4) * 4, 4), 4);
      continue;
    }
    unsigned short lo, hi;  // column lane / 4 of rows 2 (lane % 4) and 2 (lane % 4) + 1
    memcpy(&lo, emu_mma::smem(emu_mma::lanes[base + 8 * i + 2 * (lane % 4)][0] + (lane / 4) * 2, 2), 2);
    memcpy(&hi, emu_mma::smem(emu_mma::lanes[base + 8 * i + 2 * (lane % 4) + 1][0] + (lane / 4) * 2, 2), 2);
    r[i] = (unsigned)lo | (unsigned)hi << 16;
  }
  emu::barrier(1);
}
template <class E> inline void ldmatrix_x4(unsigned* r, const E* p) { ldmatrix_emu(r, p, false); }
template <class E> inline void ldmatrix_x4_trans(unsigned* r, const E* p) { ldmatrix_emu(r, p, true); }

inline void split(unsigned x, unsigned& big, unsigned& small) {
  auto rna = [](float v) { return (__float_as_uint(v) + 0x1000u) & 0xFFFFE000u; };
  big = rna(__uint_as_float(x));
  small = rna(__uint_as_float(x) - __uint_as_float(big));
}

// One mma.sync for the calling lane's four accumulators: A 16xK (row), B Kx8 (col), K = 8 (tf32:
// a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); b0 (t, g), b1 (t+4, g)) or 16 (f16/bf16:
// each register two k-adjacent elements; a0 (g, 2t..), a1 (g+8, 2t..), a2 (g, 2t+8..),
// a3 (g+8, 2t+8..); b0 (2t.., g), b1 (2t+8.., g)); d0,d1 (g, 2t..2t+1), d2,d3 (g+8, 2t..2t+1).
inline void mma_emu(float* d, const unsigned* a, const unsigned* b, int kind /* 0 tf32, 1 f16, 2 bf16 */) {
  const uint32_t regs[6] = {a[0], a[1], a[2], a[3], b[0], b[1]};
  const int base = emu_mma::exchange(regs, 6), lane = emu::linear() & 31;
  const int K = kind == 0 ? 8 : 16;
  auto A = [&](int row, int k) -> double {  // element (row, k) of A, from the lane that holds it
    if (kind == 0) {
      const int reg = (row >= 8) + 2 * (k >= 4);
      return emu_mma::tf32_value(emu_mma::lanes[base + (row % 8) * 4 + k % 4][reg]);
    }
    const int reg = (row >= 8) + 2 * (k >= 8), kk = k % 8;
    return emu_mma::half_value(emu_mma::lanes[base + (row % 8) * 4 + kk / 2][reg], kk % 2, kind == 2);
  };
  auto B = [&](int k, int col) -> double {
    if (kind == 0) return emu_mma::tf32_value(emu_mma::lanes[base + col * 4 + k % 4][4 + (k >= 4)]);
    const int kk = k % 8;
    return emu_mma::half_value(emu_mma::lanes[base + col * 4 + kk / 2][4 + (k >= 8)], kk % 2, kind == 2);
  };
  const int g = lane / 4, t = lane % 4;
  float out[4];
  for (int e = 0; e < 4; ++e) {
    const int row = g + 8 * (e / 2), col = 2 * t + e % 2;
    double sum = d[e];
    for (int k = 0; k < K; ++k) sum += A(row, k) * B(k, col);
    out[e] = emu_mma::toward_zero(sum);
  }
  emu::barrier(1);  // every lane has read the slots before any lane writes them again
  for (int e = 0; e < 4; ++e) d[e] = out[e];
}
inline void mma1688(float* d, const unsigned* a, const unsigned* b) { mma_emu(d, a, b, 0); }
#ifdef MMA_TYPE  // gemm_mma.cu: "f16" or "bf16"
inline void mma16816(float* d, const unsigned* a, const unsigned* b) {
  mma_emu(d, a, b, MMA_TYPE[0] == 'b' ? 2 : 1);
}
#endif
