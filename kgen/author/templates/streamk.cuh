// Shared by the builtin author's persistent gemm templates (wgmma, simt): which (tile, k-block)
// units one CTA of a persistent grid works on, and the flags that pass partial tiles between CTAs.
// A template includes this file by name; kgen pastes it in when it renders the template.
//
// The includer defines, before the #include:
//   KGEN_STREAM_K  1: tiles may be cut along K (stream-K); 0: whole tiles only.
//   SK_SLOTS       CTAs the partial-tile workspace serves (more CTAs: nothing is cut).
//   SK_PIECES      CTAs per cut tile, on average (SK_SPREAD = 0 only).
//   SK_SPREAD      which tiles are cut (below).
//
// With T tiles on G CTAs, whole tiles go round-robin (t = c, c + G, ...). When T % G != 0 the
// last round leaves SMs idle (133 tiles on 132 SMs: the one left over takes a whole round), so
// with stream-K the last tiles are cut along K instead, and each CTA takes one contiguous range
// of their (tile, k-block) sequence:
//   SK_SPREAD = 1: the last T % G + G tiles, dealt evenly over all G CTAs (the "data-parallel +
//     two-tile stream-K" hybrid of Osama et al., PPoPP 2023), so every CTA ends at the same
//     k-block count. Each CTA's range is then longer than a tile, so a tile is cut at most once
//     (two pieces). The CTAs work at different k offsets of different tiles, so that they share
//     less in L2: right for the SIMT kernel, whose loads are light; the wgmma kernel, which
//     streams operands about eight times as fast, ran slower for it (H200, bfloat16: 4096^3 0.205
//     against 0.182 ms, 2688x2048x8192 0.201 against 0.134 ms).
//   SK_SPREAD = 0: only where few are left over (2 (T % G) <= G): those T % G tiles, about
//     SK_PIECES CTAs each; otherwise the last round stays whole.
//   SK_SPREAD = 2: over half a round left over (2 (T % G) > G): those T % G tiles over all G
//     CTAs; fewer: the last T % G + G, as SK_SPREAD = 1 (so that no CTA's range is a small
//     piece of one tile). For a persistent launch that follows a one-tile grid of the tiles
//     before them (the SIMT kernel's sk=3, whose CTAs skip those; sk_one_tile_tiles below).
// A cut tile's pieces: the owner's, from k-block 0, is the last unit of its CTA c; the
// contributors' are the first cut unit of CTAs c+1, ... (each starting inside the tile). A
// contributor does its piece first, publishes the float32 partial tile to its CTA's workspace
// slot and raises the slot's flag; the owner does its piece last, waits for each contributor's
// flag, adds the partials and stores the tile. No CTA waits before it has published, so the
// waits cannot deadlock while every CTA is resident (a persistent grid of at most one CTA per SM
// is).
#pragma once
#ifndef SK_WIDE
#define SK_WIDE 0  // SK_SPREAD = 0: 1 also cuts a last round over half full, over all G CTAs
#endif

struct Schedule {
  int nkb, stride, t_dp, whole, users, i, hi, sk0, q, r;
  // cut_ok = false: whole tiles only (the wgmma kernel where its CTAs outnumber the slots).
  __host__ __device__ Schedule(int ntiles, int nkb_, int c, int g, bool cut_ok = true)
      : nkb(nkb_), stride(g), t_dp(c) {
    int cut = 0;
    users = 0;
#if KGEN_STREAM_K
    // cut * nkb < 2 * SK_SLOTS * nkb must stay an int: K up to BK * (2^30 / SK_SLOTS).
    const int left =
        cut_ok && ntiles > g && g <= SK_SLOTS && nkb < (1 << 30) / SK_SLOTS ? ntiles % g : 0;
#if SK_SPREAD
    if (left) {
      cut = SK_SPREAD == 2 && 2 * left > g ? left : left + g;
      users = g;
    }
#else
    if (left && 2 * left <= g) {
      // Every extra piece costs the owner a read of a partial tile on its critical path (one
      // tile left over on the H200, 2432x1792x4096, dealt over 64 CTAs ran 1.7x slower than
      // leaving it whole), hence about SK_PIECES pieces, up to two more: the CTAs' k-block
      // ranges are rounded and need not start on a tile.
      cut = left;
      users = cut * min(SK_PIECES, g / cut);
    }
#if SK_WIDE
    else if (left) {  // more than half a round left over: cut it over every CTA
      cut = left;
      users = g;
    }
#endif
#endif
#endif
    whole = ntiles - cut;
    // CTA c's k-blocks of the cut tiles: q each, the first r CTAs one more (no 64-bit divide).
    sk0 = whole * nkb;
    q = users ? cut * nkb / users : 0;
    r = users ? cut * nkb % users : 0;
    i = start(c);
    hi = start(c + 1);
  }
  // Where CTA cc's range of the cut tiles' (tile, k-block) sequence begins (CTAs past `users`
  // have none).
  __host__ __device__ __forceinline__ int start(int cc) const {
    cc = min(cc, users);
    return sk0 + cc * q + min(cc, r);
  }
  // The next unit: tile t, k-blocks [kb0, kb1); false when this CTA has no work left.
  __host__ __device__ __forceinline__ bool next(int& t, int& kb0, int& kb1) {
    if (t_dp < whole) {
      t = t_dp;
      kb0 = 0;
      kb1 = nkb;
      t_dp += stride;
      return true;
    }
    if (i < hi) {
      t = i / nkb;
      kb0 = i - t * nkb;
      kb1 = min(nkb, hi - t * nkb);
      i = t * nkb + kb1;
      return true;
    }
    return false;
  }
  // For the owner (CTA c) of cut tile t: one past the last CTA with a piece of it.
  __host__ __device__ __forceinline__ int contributors_end(int t, int c) const {
    int e = c + 1;
    while (e < stride && start(e) < (t + 1) * nkb) ++e;
    return e;
  }
};

// SK_SPREAD = 2: how many of the tiles a one-tile grid runs before the persistent launch, which
// takes the rest (the SIMT kernel's sk=3): all of them where the last round is whole or nearly
// (at most 1/SK_FULL of its CTAs would idle: cutting costs the persistent kernel's slower tiles
// and the hand-off, about 5% of a round on an H100); otherwise the tiles before those the
// Schedule cuts. No persistent launch where it returns ntiles; no one-tile grid where 0.
#define SK_FULL 20
__host__ __device__ __forceinline__ int sk_one_tile_tiles(int ntiles, int g) {
  const int left = ntiles % g;
  if (ntiles < g) return 0;
  if (left == 0 || (g - left) * SK_FULL <= g) return ntiles;
  return ntiles - (2 * left > g ? left : left + g);
}

#if KGEN_STREAM_K
// Contributor, one thread, after its group's partial-tile stores and a __threadfence by every
// storing thread and a barrier: the slot is ready.
__device__ __forceinline__ void sk_raise(unsigned* flag) { atomicExch(flag, 1u); }
// Owner, one thread, before its group's barrier and reads: wait for the flag and lower it again
// for the next launch (every flag is down when a launch ends).
__device__ __forceinline__ void sk_wait(unsigned* flag) {
  while (atomicCAS(flag, 1u, 0u) != 1u) __nanosleep(64);
  __threadfence();
}
#endif
