// A float used to initialize a pointer.
// expect: line=4 category=syntax contains="float *"
extern "C" __global__ void wrong_type(float* x, int n) {
    float* p = 1.0f;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = *p;
}
