// std::map in a kernel: nvcc reports its constructor and destructor at the closing brace (where
// the destructor runs); the record points at the line that declares the map.
// expect: line=8 contains="std::map is host-only" note="sorted array"
#include <map>

extern "C" __global__ void count(const int* keys, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    std::map<int, float> seen;
    if (i < n) out[i] = (float)keys[i];
}
