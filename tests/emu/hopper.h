// CPU stand-ins for the PTX wrappers of the builtin Hopper gemm template (gemm_wgmma.cu):
// tests/emulate.py puts this file in place of the template's `kgen:ptx` block and runs the kernel
// with emu::launch_async (tests/emu/kgen_emu.h), every thread of every CTA a coroutine.
//
// What is modelled, from the PTX ISA:
// - mbarriers: arrival count, transaction bytes and phase; try_wait.parity succeeds once the
//   phase of that parity has completed. Waiting on a barrier nobody initialised, arriving more
//   often than the count, and writing shared memory over a barrier fail.
// - TMA (cp.async.bulk.tensor.2d): the box, zero fill outside the tensor, the 128-byte swizzle
//   (bits 4-6 of the shared address XOR bits 7-9), complete_tx of the whole box's bytes on the
//   barrier; multicast writes every CTA of the mask at the same offset. Stores clip to the tensor.
// - wgmma.mma_async m64nNk16 with both operands in shared memory: the matrix descriptors are
//   decoded (start, LBO, SBO; layout 1 = 128-byte swizzle, the only one the template uses), A
//   K-major, B N-major (imm-trans-b = 1), and each thread's accumulator fragment (register
//   4j + 2h + e: row 16w + l/4 + 8h, column 8j + 2(l%4) + e) gets its 16-deep dot products.
//   The multiply-adds run as late as the program allows: a committed group when wgmma.wait_group
//   lets fewer groups stay pending, so a stage handed back to the producer before its wgmmas were
//   waited for, or accumulators read too early, give wrong results here as they can on a GPU.
// - TMA stores (cp.async.bulk.tensor shared -> global) may read their shared-memory source at any
//   time from their issue to the issuing thread's next cp.async.bulk.wait_group: the emulator
//   reads it at both ends and fails where the two differ (a staging area written after the store
//   was issued, before all of it was written or before the store was waited for); the global
//   writes happen at the wait, so a store never waited for never lands.
// - named barriers (bar.sync), the cluster barrier, the cluster rank and mapa (cluster-mapped
//   arrivals). Fences, prefetches and setmaxnreg order nothing in a sequential emulator and are
//   empty.
#pragma once
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <map>
#include <vector>

namespace emu_hopper {
struct Mbar {
  int count = 0, pending = 0;
  long tx = 0;
  unsigned phase = 0;
};
inline std::vector<std::map<uint32_t, Mbar>> bars;  // per CTA, by shared-memory offset

struct Wgmma {
  float* d;
  int n;
  uint64_t da, db;
};
struct TmaStore {
  const CUtensorMap* tm;
  uint32_t src;
  int c0, c1;
  std::vector<char> issued;  // the box's source bytes when the store was issued
};
// Per thread: the committed groups not yet waited for, the wgmmas issued since the last commit,
// and the TMA stores issued since the last bulk wait.
struct Pending {
  std::vector<std::vector<Wgmma>> groups;
  std::vector<Wgmma> open;
  std::vector<TmaStore> stores;
};
inline std::vector<Pending> pending;

inline std::map<uint32_t, Mbar>& cta_bars(int cta) {
  if (bars.size() != emu::ctas.size()) bars.assign(emu::ctas.size(), {});
  return bars[cta];
}
inline Mbar& bar_at(int cta, uint32_t addr) {
  auto& m = cta_bars(cta);
  auto it = m.find(addr);
  if (it == m.end()) emu::fail("an mbarrier used before mbarrier.init");
  return it->second;
}
inline void settle(Mbar& b) {
  if (b.pending == 0 && b.tx == 0) {
    ++b.phase;
    b.pending = b.count;
  }
  ++emu::progress;
}
inline void arrive(int cta, uint32_t addr) {
  Mbar& b = bar_at(cta, addr);
  if (b.pending <= 0) emu::fail("more arrivals on an mbarrier than its count");
  --b.pending;
  settle(b);
}
inline char* smem(int cta, uint32_t addr, size_t bytes) {
  std::vector<char>& s = emu::ctas[cta].smem;
  if ((size_t)addr + bytes > s.size()) emu::fail("a shared-memory access past the dynamic size");
  return s.data() + addr;
}
inline void write_smem(int cta, uint32_t addr, const void* src, size_t bytes) {
  auto& m = cta_bars(cta);
  auto it = m.lower_bound(addr >= 7 ? addr - 7 : 0);
  if (it != m.end() && it->first < addr + bytes) emu::fail("a shared-memory write over an mbarrier");
  memcpy(smem(cta, addr, bytes), src, bytes);
}
// The byte that a swizzled tensor layout keeps at linear shared offset `lin`.
inline uint32_t swizzled(uint32_t lin, uint32_t swizzle_bytes) {
  const uint32_t bits = swizzle_bytes == 128 ? 7u : swizzle_bytes == 64 ? 3u : swizzle_bytes == 32 ? 1u : 0u;
  return lin ^ (((lin >> 7) & bits) << 4);
}
inline int cluster_base() { return emu::cta - emu::cta % emu::cluster_size; }

inline void tma_box_load(int cta, uint32_t dst, const CUtensorMap* tm, int c0, int c1, uint32_t bar) {
  if (!tm->base) emu::fail("a TMA load through an all-zeros tensor map");
  if (dst % 128) emu::fail("a TMA destination not 128-byte aligned");
  const uint32_t e = tm->elem_bytes;
  if (tm->swizzle && tm->box[0] * e > tm->swizzle) emu::fail("a TMA box row wider than its swizzle");
  std::vector<char> zero(e, 0);
  for (uint32_t y = 0; y < tm->box[1]; ++y)
    for (uint32_t x = 0; x < tm->box[0]; ++x) {
      const long gx = (long)c0 + x, gy = (long)c1 + y;
      const bool in = gx >= 0 && gy >= 0 && gx < (long)tm->dims[0] && gy < (long)tm->dims[1];
      const char* from = in ? tm->base + gy * tm->row_bytes + gx * e : zero.data();
      write_smem(cta, swizzled(dst + (y * tm->box[0] + x) * e, tm->swizzle), from, e);
    }
  Mbar& b = bar_at(cta, bar);
  b.tx -= (long)tm->box[0] * tm->box[1] * e;
  settle(b);
}

inline float to_float(__half v) { return __half2float(v); }
inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
struct Desc {
  uint32_t start, lbo, sbo;
};
inline Desc decode(uint64_t d) {
  if ((d >> 62) != 1) emu::fail("a wgmma descriptor with a layout other than the 128-byte swizzle");
  if ((d >> 49) & 7) emu::fail("a wgmma descriptor with a base offset (the emulator assumes 0)");
  return {(uint32_t)(d & 0x3FFF) << 4, (uint32_t)((d >> 16) & 0x3FFF) << 4,
          (uint32_t)((d >> 32) & 0x3FFF) << 4};
}
inline float element(int cta, uint32_t lin) {
  T v;
  memcpy(&v, smem(cta, swizzled(lin, 128), sizeof(T)), sizeof(T));
  return to_float(v);
}
// One m64nNk16 for the calling thread's fragment: A K-major (rows 128 B apart inside an 8-row
// atom, atoms SBO apart), B N-major (K rows 128 B apart inside an 8-row group, groups SBO apart,
// 64-column chunks LBO apart).
inline void mma(int cta, int lt, const Wgmma& op) {
  const Desc a = decode(op.da), b = decode(op.db);
  const int w = lt >> 5, l = lt & 31;
  for (int j = 0; j < op.n / 8; ++j)
    for (int h = 0; h < 2; ++h)
      for (int e = 0; e < 2; ++e) {
        const int row = 16 * w + (l >> 2) + 8 * h, col = 8 * j + 2 * (l & 3) + e;
        float sum = 0.f;
        for (int k = 0; k < 16; ++k) {
          const uint32_t ai = a.start + (row / 8) * a.sbo + (row % 8) * 128 + k * sizeof(T);
          const uint32_t bi = b.start + (col / 64) * b.lbo + (k / 8) * b.sbo + (k % 8) * 128 +
                              (col % 64) * sizeof(T);
          sum += element(cta, ai) * element(cta, bi);
        }
        op.d[4 * j + 2 * h + e] += sum;
      }
}
inline Pending& mine() {
  if (pending.size() != emu::threads.size()) pending.assign(emu::threads.size(), {});
  return pending[emu::current];
}
}  // namespace emu_hopper

inline uint32_t smem_u32(const void* p) {
  return (uint32_t)((const char*)p - emu::ctas[emu::cta].smem.data());
}
inline void mbar_init(uint32_t bar, uint32_t count) {
  auto& m = emu_hopper::cta_bars(emu::cta);
  emu_hopper::smem(emu::cta, bar, 8);
  if (bar % 8) emu::fail("an mbarrier not 8-byte aligned");
  m[bar] = {(int)count, (int)count, 0, 0};
  ++emu::progress;
}
inline void fence_mbarrier_init() {}
inline void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  emu_hopper::bar_at(emu::cta, bar).tx += bytes;
  emu_hopper::arrive(emu::cta, bar);
}
// An arrival hands something over (a stage, a tile), so the other threads run at once, before
// the arriving thread goes on: what it still does to the handed-over thing then comes too late,
// as it can on a GPU.
inline void mbar_arrive(uint32_t bar) {
  emu_hopper::arrive(emu::cta, bar);
  emu::yield();
}
inline void mbar_arrive_cluster(uint32_t bar, uint32_t cta) {
  if ((int)cta >= emu::cluster_size) emu::fail("mapa to a CTA outside the cluster");
  emu_hopper::arrive(emu_hopper::cluster_base() + (int)cta, bar);
  emu::yield();
}
inline void mbar_wait(uint32_t bar, uint32_t parity) {
  emu_hopper::Mbar& b = emu_hopper::bar_at(emu::cta, bar);
  while ((b.phase & 1u) == parity) emu::yield();
  ++emu::progress;
}
inline void tma_prefetch(const CUtensorMap*) {}
inline void tma_load(uint32_t dst, const CUtensorMap* tm, int c0, int c1, uint32_t bar) {
  emu_hopper::tma_box_load(emu::cta, dst, tm, c0, c1, bar);
}
inline void tma_load_mc(uint32_t dst, const CUtensorMap* tm, int c0, int c1, uint32_t bar,
                        uint16_t mask) {
  for (int r = 0; r < emu::cluster_size; ++r)
    if (mask >> r & 1) emu_hopper::tma_box_load(emu_hopper::cluster_base() + r, dst, tm, c0, c1, bar);
  if (mask >> emu::cluster_size) emu::fail("a multicast mask with CTAs outside the cluster");
}
inline void fence_proxy_async() {}
inline void st_shared_v4(uint32_t addr, uint4 v) {
  if (addr % 16) emu::fail("st.shared.v4 not 16-byte aligned");
  emu_hopper::write_smem(emu::cta, addr, &v, 16);
}
inline void st_shared_b32(uint32_t addr, uint32_t v) {
  if (addr % 4) emu::fail("st.shared.b32 not 4-byte aligned");
  emu_hopper::write_smem(emu::cta, addr, &v, 4);
}
// The source bytes of a TMA store's box as shared memory holds them now (swizzled).
inline std::vector<char> tma_store_source(const emu_hopper::TmaStore& st) {
  const uint32_t e = st.tm->elem_bytes, n = st.tm->box[0] * st.tm->box[1];
  std::vector<char> bytes(n * e);
  for (uint32_t i = 0; i < n; ++i)
    memcpy(bytes.data() + i * e,
           emu_hopper::smem(emu::cta, emu_hopper::swizzled(st.src + i * e, st.tm->swizzle), e), e);
  return bytes;
}
inline void tma_store(const CUtensorMap* tm, uint32_t src, int c0, int c1) {
  if (!tm->base) emu::fail("a TMA store through an all-zeros tensor map");
  emu_hopper::TmaStore st{tm, src, c0, c1, {}};
  st.issued = tma_store_source(st);
  emu_hopper::mine().stores.push_back(std::move(st));
}
// The calling thread's TMA stores, done now (the box clipped to the tensor).
inline void bulk_wait() {
  for (const emu_hopper::TmaStore& st : emu_hopper::mine().stores) {
    if (tma_store_source(st) != st.issued)
      emu::fail("a TMA store's shared-memory source was written between its issue and its wait");
    const uint32_t e = st.tm->elem_bytes;
    for (uint32_t y = 0; y < st.tm->box[1]; ++y)
      for (uint32_t x = 0; x < st.tm->box[0]; ++x) {
        const long gx = (long)st.c0 + x, gy = (long)st.c1 + y;
        if (gx < 0 || gy < 0 || gx >= (long)st.tm->dims[0] || gy >= (long)st.tm->dims[1]) continue;
        memcpy((char*)st.tm->base + gy * st.tm->row_bytes + gx * e,
               st.issued.data() + (y * st.tm->box[0] + x) * e, e);
      }
  }
  emu_hopper::mine().stores.clear();
}
inline void bulk_commit() {}
inline void bulk_wait_read0() { bulk_wait(); }
inline void bulk_wait0() { bulk_wait(); }
inline void named_bar_sync(int id, int nthreads) {
  if (id < 0 || id >= 16 || nthreads % 32) emu::fail("bar.sync: id 0-15, a multiple of 32 threads");
  emu::counted_barrier(id, nthreads);
}
inline uint32_t cluster_ctarank() { return (uint32_t)(emu::cta % emu::cluster_size); }
inline uint32_t cluster_nctarank() { return (uint32_t)emu::cluster_size; }
inline void __trap() { emu::fail("__trap"); }
inline void cluster_sync() { emu::cluster_barrier(); }
template <int R> inline void setmaxnreg_inc() {}
template <int R> inline void setmaxnreg_dec() {}
inline void wgmma_fence() {}
inline void wgmma_commit() {
  emu_hopper::Pending& p = emu_hopper::mine();
  p.groups.push_back(std::move(p.open));
  p.open.clear();
}
template <int N_> inline void wgmma_wait() {
  emu_hopper::Pending& p = emu_hopper::mine();
  const int lt = (int)(emu::linear() & 127);
  while ((int)p.groups.size() > N_) {
    for (const auto& op : p.groups.front()) emu_hopper::mma(emu::cta, lt, op);
    p.groups.erase(p.groups.begin());
  }
}
template <class Acc> inline void fence_acc(Acc&) {}
template <int N_> inline void wgmma_emu(float* d, uint64_t da, uint64_t db) {
  emu_hopper::mine().open.push_back({d, N_, da, db});
}
inline void wgmma_n64(float (&d)[32], uint64_t da, uint64_t db) { wgmma_emu<64>(d, da, db); }
inline void wgmma_n128(float (&d)[64], uint64_t da, uint64_t db) { wgmma_emu<128>(d, da, db); }
inline void wgmma_n192(float (&d)[96], uint64_t da, uint64_t db) { wgmma_emu<192>(d, da, db); }
inline void wgmma_n256(float (&d)[128], uint64_t da, uint64_t db) { wgmma_emu<256>(d, da, db); }
