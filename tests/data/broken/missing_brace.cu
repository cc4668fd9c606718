// A missing '}' in the middle of the file: the next function cascades into a flood.
// expect: line=6|7 category=syntax
extern "C" __global__ void first(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] += 1.0f;
}

extern "C" __global__ void second(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= 2.0f;
}

extern "C" __global__ void third(float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] -= 3.0f;
}
