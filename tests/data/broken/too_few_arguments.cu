// A device helper called with too few arguments.
// expect: line=7 category=syntax contains="argument" note="axpy is declared at line 3: __device__ float axpy(float a, float x, float y) (3 parameters; this call passes 2)"
__device__ float axpy(float a, float x, float y) { return a * x + y; }

extern "C" __global__ void run_axpy(float* x, const float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = axpy(a, x[i]);
}
