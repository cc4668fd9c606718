// __launch_bounds__(768, 2) caps registers at 32 per thread; the big local array spills.
// expect-ok
// expect: line=4 severity=warning category=resource contains="spill"
extern "C" __global__ void __launch_bounds__(768, 2) heavy(const float* x, float* y, int n) {
    float acc[48];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
    for (int k = 0; k < 48; ++k) acc[k] = x[(i + k * 97) % n];
#pragma unroll
    for (int r = 0; r < 8; ++r) {
#pragma unroll
        for (int k = 0; k < 48; ++k) acc[k] = acc[k] * acc[(k + r + 1) % 48] + acc[(k * 7) % 48];
    }
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 48; ++k) s += acc[k] * (k + 1);
    y[i] = s;
}
