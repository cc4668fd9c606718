// The last '}' of the file is missing: nvcc reports it at the end of the source.
// expect: line=7 category=syntax contains="}"
extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
