// An undefined identifier: a typo of a declared name.
// expect: line=10 category=syntax contains="strid" note="stride"
extern "C" __global__ void row_sum(const float* x, float* out, int n) {
    __shared__ float partial[256];
    int tid = threadIdx.x;
    partial[tid] = tid < n ? x[tid] : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (tid < stride) {
            partial[threadIdx.x] += partial[threadIdx.x + strid];
        }
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = partial[0];
}
