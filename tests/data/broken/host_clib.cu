// A host C library function in a kernel: one record with what to do instead.
// expect: line=7 contains="rand is a host-only C library function" note="curand"
#include <cstdlib>

extern "C" __global__ void noise(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = (float)rand();
}
