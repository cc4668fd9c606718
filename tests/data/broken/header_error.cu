// An error inside a CUDA header (libcu++ array), attributed to the line that instantiated it.
// expect: line=7 category=syntax contains="Index out of bounds"
#include <cuda/std/array>

extern "C" __global__ void pick(float* x) {
    cuda::std::array<float, 2> a{x[0], x[1]};
    x[2] = cuda::std::get<5>(a);
}
