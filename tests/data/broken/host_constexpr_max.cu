// std::max (a constexpr host function) in a kernel: what to use instead, not the experimental flag.
// expect: line=6 contains="std::max is host-only" note="fmaxf"
#include <algorithm>

extern "C" __global__ void clip(float* y) {
    y[0] = std::max(y[0], 0.0f);
}
