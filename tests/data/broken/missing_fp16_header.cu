// __half used without #include <cuda_fp16.h>.
// expect: line=4 category=syntax contains="__half" note="cuda_fp16.h"
// expect: line=6 category=syntax note="__float2half"
extern "C" __global__ void to_half(const float* x, __half* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2half(x[i]);
}
