// A host C library function with no device counterpart: compute it on the host.
// expect: line=6 contains="atof is a host-only C library function" note="on the host"
#include <cstdlib>

extern "C" __global__ void offset(float* y) {
    y[0] += (float)atof("0.5");
}
