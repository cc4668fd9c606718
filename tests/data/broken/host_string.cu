// std::string in a kernel: its constructor, allocator, size() and destructor errors are one cause.
// expect: line=7 contains="std::string is host-only" note="collapsed"
#include <string>

extern "C" __global__ void label(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    std::string name = "k";
    if (i < n) y[i] = (float)name.size();
}
