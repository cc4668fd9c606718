// A __global__ function must return void.
// expect: line=3 category=syntax contains="void"
extern "C" __global__ int count_positive(const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    return (i < n && x[i] > 0.0f) ? 1 : 0;
}
