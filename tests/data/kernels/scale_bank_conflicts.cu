// Deliberate shared-memory bank conflicts: each 32x32 tile goes through shared memory in
// column-major order, so the 32 threads of a warp (same y, x = 0..31) store to and load from
// addresses 32 floats apart: one bank, 32-way conflicts on every access. Correct results.
// kgen: op=scale dtype=float32
// kgen: launch scale_bank_conflicts grid=(cdiv(N, 1024)) block=(32, 32) args=(A, C, N)
extern "C" __global__ void scale_bank_conflicts(const float* __restrict__ A, float* __restrict__ C,
                                                int N) {
    __shared__ float tile[32][32];
    int i = blockIdx.x * 1024 + threadIdx.y * 32 + threadIdx.x;
    tile[threadIdx.x][threadIdx.y] = i < N ? A[i] : 0.0f;
    __syncthreads();
    if (i < N) C[i] = 2.0f * tile[threadIdx.x][threadIdx.y];
}
