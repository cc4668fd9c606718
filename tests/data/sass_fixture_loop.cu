// A shared-memory dot-product loop: the fixture for tests/test_sass_loop.py.
extern "C" __global__ void fixture_loop(const float* __restrict__ a, const float* __restrict__ b,
                                        float* __restrict__ out, int n) {
  __shared__ float sa[256], sb[256];
  float acc0 = 0.f, acc1 = 0.f;
  for (int k = 0; k < n; k += 256) {
    sa[threadIdx.x] = a[k + threadIdx.x];
    sb[threadIdx.x] = b[k + threadIdx.x];
    __syncthreads();
#pragma unroll 8
    for (int j = 0; j < 256; j += 2) {
      acc0 = fmaf(sa[j], sb[(j + threadIdx.x) & 255], acc0);
      acc1 = fmaf(sa[j + 1], sb[(j + 1 + threadIdx.x) & 255], acc1);
    }
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc0 + acc1;
}
