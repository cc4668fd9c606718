// A __device__ variable defined twice: the earlier definition's text is in the notes.
// expect: line=5 contains="already been defined" note="earlier declaration at line 3: __device__ float bias = 1.0f;"
__device__ float bias = 1.0f;

__device__ int bias = 2;

extern "C" __global__ void add_bias(float* x) { x[0] += bias; }
