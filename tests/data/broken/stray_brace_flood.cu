// A loop lost its '{': the '}' meant for it closes the kernel, and the rest floods.
// expect: line=5|7 category=syntax contains="closes the function early"
extern "C" __global__ void accumulate(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int j = 0; j < n; ++j)
        x[j] += 1.0f;
    }
    x[i] = 2.0f;
    if (i < n) x[i] = 3.0f;
    __syncthreads();
    return;
}
