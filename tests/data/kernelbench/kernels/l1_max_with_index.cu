// A correct kernel for tests/data/kernelbench/l1_max_with_index.py: one warp per row, the
// (value, index) pairs merged by shuffles; on equal values the lower index wins, as torch.max.
// kgen: op=l1_max_with_index dtype=float32
// kgen: choices warp per row, 8 rows per block
// kgen: launch row_max_f32 grid=(cdiv(rows, 8)) block=(256) args=(x, out0, out1, rows, cols)
extern "C" __global__ void row_max_f32(const float* __restrict__ x, float* __restrict__ out0,
                                       long long* __restrict__ out1, int rows, int cols) {
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * 8 + (threadIdx.x >> 5);
  if (row >= rows) return;
  const float* r = x + (size_t)row * cols;
  float best = -INFINITY;
  int where = cols;
  for (int j = lane; j < cols; j += 32) {
    const float v = r[j];
    if (v > best) { best = v; where = j; }
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float v = __shfl_down_sync(0xffffffffu, best, offset);
    const int w = __shfl_down_sync(0xffffffffu, where, offset);
    if (v > best || (v == best && w < where)) { best = v; where = w; }
  }
  if (lane == 0) {
    out0[row] = best;
    out1[row] = where < cols ? where : 0;
  }
}
