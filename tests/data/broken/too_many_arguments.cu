// A call with one argument too many: the record names the callee's signature and its line (the
// declaration spans two lines).
// expect: line=12 contains="too many arguments" note="declared at line 5"
// expect: line=5 note="(3 parameters; this call passes 4)"
__device__ float fma3(float a, float x,
                      float y) {
    return a * x + y;
}

extern "C" __global__ void run_fma(float* x, const float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = fma3(a, x[i], y[i], 1.0f);
}
