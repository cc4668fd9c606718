// A missing ')' in a condition.
// expect: line=5 category=syntax contains=")"
extern "C" __global__ void clamp(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n {
        x[i] = fminf(fmaxf(x[i], 0.0f), 1.0f);
    }
}
