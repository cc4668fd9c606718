// A missing ';': nvcc names the next line, the fix belongs at the end of this one.
// expect: line=4 category=syntax contains=";"
extern "C" __global__ void scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x

    // bounds check
    if (i < n) x[i] *= a;
}
