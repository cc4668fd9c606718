// The pre-CUDA-9 shuffle without _sync is gone.
// expect: line=6 category=syntax contains="__shfl_down"
extern "C" __global__ void warp_sum(const float* x, float* out) {
    float v = x[threadIdx.x];
    for (int offset = 16; offset > 0; offset /= 2) {
        v += __shfl_down(v, offset);
    }
    if (threadIdx.x == 0) out[blockIdx.x] = v;
}
