// Compiles, with warnings: an unused variable and a set-but-unused one.
// expect-ok
// expect: line=6 severity=warning contains="unused_value"
extern "C" __global__ void copy(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int unused_value;
    if (i < n) y[i] = x[i];
}
