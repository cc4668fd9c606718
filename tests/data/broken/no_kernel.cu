// Compiles, but has no __global__ entry point: nothing to launch.
// expect: line=none category=contract contains="__global__"
__device__ float square(float v) { return v * v; }
