// Writing through a pointer to const.
// expect: line=6 category=syntax contains="modifiable" note="`x` is declared const at line 3"
extern "C" __global__ void relu(const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] < 0.0f) {
        x[i] = 0.0f;
    }
}
