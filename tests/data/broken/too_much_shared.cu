// 2 x 40 KiB of static shared memory: more than the 48 KiB a static allocation may use.
// expect: line=5 category=resource contains="shared"
// expect: line=6 category=resource contains="shared"
extern "C" __global__ void big_tiles(const float* a, float* c) {
    __shared__ float tile_a[10240];
    __shared__ float tile_b[10240];
    int t = threadIdx.x;
    tile_a[t] = a[t];
    tile_b[t] = a[t + 1];
    __syncthreads();
    c[t] = tile_a[10239 - t] + tile_b[t];
}
