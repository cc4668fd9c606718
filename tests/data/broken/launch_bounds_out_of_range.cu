// __launch_bounds__(1024, 2) asks for 2048 threads per SM; sm_89 has 1536: ptxas warns.
// expect-ok
// expect: line=4 severity=warning category=resource contains="minnctapersm"
extern "C" __global__ void __launch_bounds__(1024, 2) fill(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 1.0f;
}
