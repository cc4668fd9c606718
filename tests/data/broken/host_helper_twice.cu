// A host helper called on two lines: one record at the first call that names the helper's own
// line (the one to edit: add __device__) with its signature, not four separate errors.
// expect: line=11 contains="__host__" note="declared at line 5 without __device__"
// expect: line=5 note="float clamp01(float v)"
float clamp01(float v) {
    return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
}

extern "C" __global__ void saturate(float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = clamp01(x[i]);
    if (i < n) y[i] = clamp01(y[i]);
}
