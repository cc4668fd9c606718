// A shared array sized by a runtime value.
// expect: line=4 category=syntax contains="constant"
extern "C" __global__ void tile(const float* x, float* y, int tile_size) {
    __shared__ float buf[tile_size];
    buf[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    y[threadIdx.x] = buf[tile_size - 1 - threadIdx.x];
}
