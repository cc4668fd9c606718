// std::sort in a kernel: one record that names the device-side alternatives.
// expect: line=7 contains="std::sort is host-only" note="cub::BlockRadixSort"
#include <algorithm>

extern "C" __global__ void sort4(float* y) {
    float v[4] = {y[0], y[1], y[2], y[3]};
    std::sort(v, v + 4);
    y[0] = v[0];
}
