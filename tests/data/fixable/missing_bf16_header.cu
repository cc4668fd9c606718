// bfloat16 scale without cuda_bf16.h.
extern "C" __global__ void scale_bf16(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y,
                                      float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __float2bfloat16(a * __bfloat162float(x[i]));
}
