// Two independent errors in one file: both must be reported.
// expect: line=5 category=syntax contains="blockdim"
// expect: line=11 category=syntax contains="modifiable"
extern "C" __global__ void first(float* x, int n) {
    int i = blockIdx.x * blockdim.x + threadIdx.x;
    if (i < n) x[i] = 0.0f;
}

extern "C" __global__ void second(const float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 1.0f;
}
