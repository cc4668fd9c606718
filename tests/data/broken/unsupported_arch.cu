// Compiled for an architecture nvcc 13 does not have: nvcc fatal, category arch.
// expect-arch: sm_50
// expect: line=none category=arch contains="compute_50"
extern "C" __global__ void k(float* x) { x[0] = 1.0f; }
