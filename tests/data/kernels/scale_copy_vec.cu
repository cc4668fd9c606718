// A copy-like kernel with enough bytes in flight to saturate DRAM: each thread loads four float4
// (64 B) before it stores any, so a full SM keeps ~128 KiB of loads in flight. (scale_copy.cu,
// one float per thread, keeps 8 KiB per SM in flight: on the H200 it reached 55% of DRAM peak,
// latency-bound.) Misaligned pointers and the last partial block take the scalar path.
// kgen: op=scale dtype=float32
// kgen: launch scale_copy_vec grid=(cdiv(N, 4096)) block=(256) args=(A, C, N)
extern "C" __global__ void scale_copy_vec(const float* __restrict__ A, float* __restrict__ C, int N) {
    const long long per_block = 256 * 16;
    const long long base = (long long)blockIdx.x * per_block;
    const bool aligned = ((reinterpret_cast<unsigned long long>(A) |
                           reinterpret_cast<unsigned long long>(C)) & 15) == 0;
    if (aligned && base + per_block <= N) {
        const float4* a = reinterpret_cast<const float4*>(A + base);
        float4* c = reinterpret_cast<float4*>(C + base);
        float4 v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) v[u] = a[u * 256 + threadIdx.x];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            v[u].x *= 2.0f; v[u].y *= 2.0f; v[u].z *= 2.0f; v[u].w *= 2.0f;
            c[u * 256 + threadIdx.x] = v[u];
        }
        return;
    }
    for (long long i = base + threadIdx.x; i < N && i < base + per_block; i += 256) C[i] = 2.0f * A[i];
}
