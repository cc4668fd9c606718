// A CPU stand-in for the small part of CUDA C++ the builtin memory-bound templates and the SIMT
// gemm template use, so their kernels can run under g++ (with AddressSanitizer) in tests on
// machines without a GPU.
// Every CUDA thread of a block is a ucontext coroutine; a barrier (__syncthreads, and each
// __shfl_xor_sync, which exchanges values through a slot per thread) switches back to the
// scheduler, which runs the block's threads in lockstep from barrier to barrier and fails loudly
// when they disagree (one thread at a barrier, another at a shuffle or already finished).
// Blocks run one after another, the last first: a stream-K owner waits only for CTAs numbered
// above it, which have then published (a wait that never ends fails instead). __shared__
// variables are function statics; dynamic shared memory (`extern __shared__`, rewritten by
// tests/emulate.py) is one buffer, filled with 0xFF (NaN) before each block so that a read before
// a write shows.
// The warp-specialized Hopper kernel cannot run in lockstep (its producer and consumers wait on
// different things at once), so launch_async runs it another way: every thread of every CTA is a
// coroutine at the same time, each CTA with its own poisoned shared memory, and a thread runs
// until it must wait (a counted barrier, an mbarrier phase, a stream-K flag). The scheduler goes
// round all threads; a round in which nothing happened (no arrival, no barrier passed, no flag,
// no thread finished) while threads still wait is a deadlock, and fails.
#pragma once
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <algorithm>
#include <functional>
#include <vector>

using std::max;  // CUDA's integer min and max
using std::min;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
struct uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
struct uint2 {
  unsigned x, y;
};
struct __align__(16) float4 {
  float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

namespace emu {
inline dim3 tid, bid, bdim, gdim;
struct Thread {
  ucontext_t ctx;
  char* stack = nullptr;  // malloc'ed, not zeroed: only the pages a thread uses get memory
  bool done = false;
  int at = -1;  // the barrier kind it waits at: 0 __syncthreads, 1 shuffle
  int cta = 0;  // launch_async: its CTA (linear block index)
};
constexpr size_t STACK_BYTES = 256 * 1024;
inline ucontext_t scheduler;
inline std::vector<Thread> threads;
inline int current = 0;
inline std::function<void()> kernel;
inline uint64_t slots[1024];
inline std::vector<char> dynamic_smem;
inline long spins = 0;

// launch_async's state: a CTA's shared memory and named barriers (bar.sync ids; 0 is
// __syncthreads), a cluster's barrier, and a count of everything that can end a wait.
struct Cta {
  std::vector<char> smem;
  int arrived[16] = {}, generation[16] = {};
};
inline bool async_mode = false;
inline std::vector<Cta> ctas;
inline int cta = 0;           // the running thread's CTA
inline int cluster_size = 1;  // CTAs per cluster along x
inline std::vector<int> cluster_arrived, cluster_generation;
inline long progress = 0;

inline void yield() { swapcontext(&threads[current].ctx, &scheduler); }
inline void fail(const char* what);
// A barrier for `count` threads of this CTA: arrive, then wait until the last one has arrived.
inline void counted_barrier(int id, int count) {
  Cta& c = ctas[cta];
  const int g = c.generation[id];
  ++progress;
  if (++c.arrived[id] == count) {
    c.arrived[id] = 0;
    ++c.generation[id];
    return;
  }
  while (c.generation[id] == g) yield();
}
inline void cluster_barrier() {
  const int k = cta / cluster_size;
  const int g = cluster_generation[k];
  ++progress;
  if (++cluster_arrived[k] == cluster_size * (int)(bdim.x * bdim.y * bdim.z)) {
    cluster_arrived[k] = 0;
    ++cluster_generation[k];
    return;
  }
  while (cluster_generation[k] == g) yield();
}

inline void barrier(int kind) {
  if (async_mode) {
    if (kind != 0) fail("shuffles are not emulated in launch_async");
    counted_barrier(0, (int)(bdim.x * bdim.y * bdim.z));
    return;
  }
  threads[current].at = kind;
  swapcontext(&threads[current].ctx, &scheduler);
}
// Dynamic shared memory as the kernel sees it (tests/emulate.py rewrites `extern __shared__`).
inline char* smem_base() { return async_mode ? ctas[cta].smem.data() : dynamic_smem.data(); }
inline int linear() { return (int)(tid.x + bdim.x * (tid.y + bdim.y * tid.z)); }

inline void entry() {
  kernel();
  threads[current].done = true;
  ++progress;
}

inline void fail(const char* what) {
  fprintf(stderr, "emu: %s (block %u,%u)\n", what, bid.x, bid.y);
  exit(3);
}

// A fresh coroutine for thread t at the kernel's entry (its stack allocated on first use).
inline void begin(Thread& t) {
  if (!t.stack) t.stack = (char*)malloc(STACK_BYTES);
  t.done = false;
  t.at = -1;
  getcontext(&t.ctx);
  t.ctx.uc_stack.ss_sp = t.stack;
  t.ctx.uc_stack.ss_size = STACK_BYTES;
  t.ctx.uc_link = &scheduler;
  makecontext(&t.ctx, entry, 0);
}

inline void run_block(int count) {
  if (!dynamic_smem.empty()) memset(dynamic_smem.data(), 0xFF, dynamic_smem.size());
  for (int i = 0; i < count; ++i) begin(threads[i]);
  for (;;) {
    int waiting = 0, finished = 0, kind = -1;
    for (int i = 0; i < count; ++i) {
      if (threads[i].done) continue;
      current = i;
      tid = {(unsigned)i % bdim.x, (unsigned)i / bdim.x % bdim.y, (unsigned)i / (bdim.x * bdim.y)};
      threads[i].at = -1;
      swapcontext(&scheduler, &threads[i].ctx);
    }
    for (int i = 0; i < count; ++i) {
      if (threads[i].done) {
        ++finished;
        continue;
      }
      ++waiting;
      if (kind >= 0 && threads[i].at != kind) fail("threads wait at different barriers");
      kind = threads[i].at;
    }
    if (!waiting) return;
    if (finished) fail("some threads finished while others wait at a barrier");
  }
}

// `smem_bytes` of dynamic shared memory per block.
inline void launch(dim3 grid, dim3 block, size_t smem_bytes, std::function<void()> fn) {
  const int count = (int)(block.x * block.y * block.z);
  if (count > 1024) fail("more than 1024 threads per block");
  if ((int)threads.size() < count) threads.resize(count);
  kernel = fn;
  dynamic_smem.assign(smem_bytes, 0);
  bdim = block;
  gdim = grid;
  for (int z = (int)grid.z - 1; z >= 0; --z)
    for (int y = (int)grid.y - 1; y >= 0; --y)
      for (int x = (int)grid.x - 1; x >= 0; --x) {
        bid = {(unsigned)x, (unsigned)y, (unsigned)z};
        run_block(count);
      }
}

// Every thread of the grid at once (see the top of this file); a 1-D grid of clusters of
// `cluster` CTAs; `smem_bytes` of dynamic shared memory per CTA, filled with 0xFF.
inline void launch_async(dim3 grid, dim3 block, int cluster, size_t smem_bytes,
                         std::function<void()> fn) {
  const int per_cta = (int)(block.x * block.y * block.z);
  const int nctas = (int)(grid.x * grid.y * grid.z);
  if (per_cta > 1024) fail("more than 1024 threads per block");
  if (grid.y != 1 || grid.z != 1 || nctas % cluster) fail("launch_async: a 1-D grid of clusters");
  async_mode = true;
  kernel = fn;
  bdim = block;
  gdim = grid;
  cluster_size = cluster;
  ctas.assign(nctas, Cta{});
  for (auto& c : ctas) c.smem.assign(smem_bytes, (char)0xFF);
  cluster_arrived.assign(nctas / cluster, 0);
  cluster_generation.assign(nctas / cluster, 0);
  threads.resize((size_t)nctas * per_cta);
  for (size_t i = 0; i < threads.size(); ++i) {
    threads[i].cta = (int)(i / per_cta);
    begin(threads[i]);
  }
  for (;;) {
    const long before = progress;
    int live = 0;
    for (size_t i = 0; i < threads.size(); ++i) {
      if (threads[i].done) continue;
      ++live;
      current = (int)i;
      cta = threads[i].cta;
      const int l = (int)(i % per_cta);
      tid = {(unsigned)l % bdim.x, (unsigned)l / bdim.x % bdim.y, (unsigned)l / (bdim.x * bdim.y)};
      bid = {(unsigned)cta, 0, 0};
      swapcontext(&scheduler, &threads[i].ctx);
    }
    if (!live) return;
    if (progress == before) {
      fprintf(stderr, "emu: deadlock: %d threads wait and none can go on\n", live);
      exit(3);
    }
  }
}
}  // namespace emu

#define threadIdx (emu::tid)
#define blockIdx (emu::bid)
#define blockDim (emu::bdim)
#define gridDim (emu::gdim)
#define __syncthreads() emu::barrier(0)

// The warp shuffles: each thread reads the value of lane `src` of its warp, every thread of the
// block exchanging at once through a slot per thread.
template <class V> inline V shfl_lane(V v, int src) {
  static_assert(sizeof(V) <= 8, "one register");
  const int me = emu::linear();
  uint64_t bits = 0;
  memcpy(&bits, &v, sizeof(V));
  emu::slots[me] = bits;
  emu::barrier(1);
  V out;
  memcpy(&out, &emu::slots[(me & ~31) | (src & 31)], sizeof(V));
  emu::barrier(1);
  return out;
}
template <class V> inline V __shfl_up_sync(unsigned, V v, unsigned delta) {
  const int lane = emu::linear() & 31;  // no lane `delta` below: its own value
  return shfl_lane(v, lane >= (int)delta ? lane - (int)delta : lane);
}
template <class V> inline V __shfl_sync(unsigned, V v, int src) { return shfl_lane(v, src); }
template <class V> inline V __shfl_xor_sync(unsigned, V v, int offset) {
  return shfl_lane(v, (emu::linear() & 31) ^ offset);
}

template <class R> inline R __ldcs(const R* p) { return *p; }
template <class R> inline void __stcs(R* p, R v) { *p = v; }
inline float rsqrtf(float x) { return 1.f / sqrtf(x); }
inline float __expf(float x) { return expf(x); }
inline float __fdividef(float x, float y) { return x / y; }

// Global-memory hints and the flag protocol of the stream-K kernels: plain accesses, one thread at
// a time. A flag that is not up can never come up (the blocks that raise flags ran first).
template <class R> inline R __ldcg(const R* p) { return *p; }
template <class R> inline void __stcg(R* p, R v) { *p = v; }
inline void __threadfence() {}
inline void __nanosleep(unsigned) {
  if (emu::async_mode) return emu::yield();  // launch_async: other CTAs run meanwhile
  if (++emu::spins > 1000) emu::fail("a wait that never ends (a stream-K flag never came up)");
}
inline unsigned atomicExch(unsigned* p, unsigned v) {
  const unsigned old = *p;
  *p = v;
  ++emu::progress;
  return old;
}
inline unsigned atomicCAS(unsigned* p, unsigned expected, unsigned v) {
  const unsigned old = *p;
  if (old == expected) {
    *p = v;
    ++emu::progress;
  }
  return old;
}
template <class R> inline R __ldg(const R* p) { return *p; }
