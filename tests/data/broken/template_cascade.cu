// A template whose body fails only for one instantiation: both lines must be named.
// expect: line=6 category=syntax
// expect: line=11 category=syntax
template <typename T>
__device__ T twice(T v) {
    return v.twice();
}

extern "C" __global__ void apply_twice(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = twice(x[i]);
}
