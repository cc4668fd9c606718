// Shared by the builtin author's mma.sync gemm templates (mma, tf32x3): the guarded load of one
// stage's A and B tiles, for blocks at an edge of the matrices and for ragged or misaligned ones.
// A template includes this file by name; kgen pastes it in when it renders the template.
//
// The includer defines, before the #include: the element type T and ZERO (its zero), the tile
// BM x BN x BK, THREADS, the padded row lengths LDA and LDB of the shared tiles, A_CHUNKS and
// B_CHUNKS (16-byte chunks per thread and tile), and cp_async16 / aligned16 (cpasync.cuh).
#pragma once

constexpr int CHUNK = 16 / sizeof(T);  // elements per 16-byte chunk

// One chunk of a row: cp.async when whole and aligned, element by element at a ragged edge,
// zeros when the row or the chunk lies outside the matrix.
__device__ __forceinline__ void load_chunk(T* dst, const T* base, int row, int rows, int col,
                                           int cols, bool fast) {
  if (row < rows && col + CHUNK - 1 < cols && fast) {
    cp_async16(dst, base + (size_t)row * cols + col, 16);
  } else if (row < rows && col < cols) {
#pragma unroll
    for (int e = 0; e < CHUNK; ++e)
      dst[e] = col + e < cols ? base[(size_t)row * cols + col + e] : ZERO;
  } else {
    // Plain zeros, not cp.async's zero fill: that would still name `base` as its source, which
    // the PTX ISA wants 16-byte aligned, and a misaligned matrix's is not.
    *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
  }
}

// The guarded tile load. Not inlined: its addresses and bounds would otherwise stay live across
// the fast main loop.
__device__ __noinline__ void load_tile_guarded(T* as, T* bs, const T* A, const T* B, int m0,
                                               int n0, int M, int N, int K, int k0, int tid,
                                               bool fastA, bool fastB) {
  constexpr int A_CPR = BK / CHUNK, B_CPR = BN / CHUNK;
#pragma unroll
  for (int i = 0; i < A_CHUNKS; ++i) {
    const int c = tid + i * THREADS, r = c / A_CPR, kc = (c % A_CPR) * CHUNK;
    load_chunk(as + r * LDA + kc, A, m0 + r, M, k0 + kc, K, fastA);
  }
#pragma unroll
  for (int i = 0; i < B_CHUNKS; ++i) {
    const int c = tid + i * THREADS, r = c / B_CPR, nc = (c % B_CPR) * CHUNK;
    load_chunk(bs + r * LDB + nc, B, k0 + r, K, n0 + nc, N, fastB);
  }
}
