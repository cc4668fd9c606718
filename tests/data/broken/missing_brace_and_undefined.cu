// A missing '}' plus an independent error inside the unclosed block: both roots survive.
// expect: line=7 category=syntax contains="undefined_thing"
// expect: line=7|8 category=syntax contains='"}"'
extern "C" __global__ void first(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] += undefined_thing;
}

template <typename T>
__device__ T twice(T v) { return v * 2; }

extern "C" __global__ void second(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= 2.0f;
}
