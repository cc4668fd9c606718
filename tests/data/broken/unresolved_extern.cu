// A device function that is declared but never defined: ptxas cannot resolve it.
// expect: line=7 category=link contains="helper"
extern __device__ float helper(float v);

extern "C" __global__ void use_helper(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = helper(x[i]);
}
