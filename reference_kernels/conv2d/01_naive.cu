// kgen: op=conv2d dtype=float32
// kgen: launch conv2d_naive_f32 grid=(cdiv(NB*CO*H*W,256)) block=(256) smem=0 args=(X, Wt, Y, NB, CI, H, W, CO)
//
// Reference 01 (float32): the textbook kernel, one thread per output element (flat 64-bit index
// decoded into n, o, y, x), looping over the CI x 3 x 3 window straight from global memory and
// skipping taps that fall in the zero padding.
// Launch: 256 threads per block, grid covers NB * CO * H * W (x); any sizes.
// Neighbouring threads share most of their X window (L1 hits) and read the same filter taps
// (broadcast), but there is no explicit reuse: expect about 1-2 TFLOP/s at NB=32, CI=CO=64,
// H=W=128 on an H200 (estimate).

extern "C" __global__ void conv2d_naive_f32(const float* __restrict__ X,
                                            const float* __restrict__ Wt, float* __restrict__ Y,
                                            int NB, int CI, int H, int W, int CO) {
  const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (long long)NB * CO * H * W) return;
  const int x = (int)(idx % W);
  const int y = (int)((idx / W) % H);
  const int o = (int)((idx / ((long long)W * H)) % CO);
  const int n = (int)(idx / ((long long)W * H * CO));
  float acc = 0.f;
  for (int c = 0; c < CI; ++c) {
    const float* xc = X + ((size_t)n * CI + c) * H * W;
    const float* wc = Wt + ((size_t)o * CI + c) * 9;
    for (int ky = 0; ky < 3; ++ky) {
      const int yy = y + ky - 1;
      if (yy < 0 || yy >= H) continue;
      for (int kx = 0; kx < 3; ++kx) {
        const int xx = x + kx - 1;
        if (xx < 0 || xx >= W) continue;
        acc += wc[ky * 3 + kx] * xc[(size_t)yy * W + xx];
      }
    }
  }
  Y[idx] = acc;
}
