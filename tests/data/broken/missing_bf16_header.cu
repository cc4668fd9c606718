// __nv_bfloat16 used without #include <cuda_bf16.h>; each later use of the type folds into the first.
// expect: line=4 category=syntax contains="__nv_bfloat16" note="cuda_bf16.h"
// expect: line=6 category=syntax note="__float2bfloat16"
extern "C" __global__ void to_bf16(const float* x, __nv_bfloat16* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __nv_bfloat16 v = __float2bfloat16(x[i]);
    __nv_bfloat16 w = v;
    if (i < n) y[i] = w;
}
