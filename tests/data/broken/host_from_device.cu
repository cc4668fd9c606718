// A __host__ function called from device code.
// expect: line=9 category=syntax contains="__host__" note="host_scale is declared at line 5 without __device__"
#include <cmath>

float host_scale(float v) { return v * 2.0f; }

extern "C" __global__ void apply(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = host_scale(x[i]);
}
