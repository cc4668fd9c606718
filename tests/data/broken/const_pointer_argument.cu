// A pointer to const passed where the callee writes: both lines to edit are named, the callee's
// parameter and the const declaration the argument comes from.
// expect: line=11 contains="incompatible" note="store is declared at line 5"
// expect: line=9 note="`in` is declared const at line 9"
__device__ void store(float* out, int i, float v) {
    out[i] = v;
}

extern "C" __global__ void copy(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) store(in, i, 2.0f * out[i]);
}
