// std::vector in a kernel: a dozen "calling a __host__ function" and "undefined in device code"
// errors on three lines collapse into one record at the declaration, saying what to use instead.
// expect: line=8 contains="std::vector is host-only" note="use instead: a fixed-size array"
#include <vector>

extern "C" __global__ void gather(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    std::vector<float> scratch(4);
    scratch[0] = x[i];
    if (i < n) y[i] = scratch[0] * 2.0f;
}
