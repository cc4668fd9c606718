// cp.async needs sm_80; this file targets sm_75.
// expect-arch: sm_75
// expect: line=9 category=arch contains="'cp.async' requires"
// expect: line=10 category=arch contains="wait_all"
extern "C" __global__ void copy_async(const float* src, float* dst) {
    __shared__ float buf[128];
    unsigned saddr = static_cast<unsigned>(__cvta_generic_to_shared(&buf[threadIdx.x]));
    const float* from = src + threadIdx.x;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" :: "r"(saddr), "l"(from));
    asm volatile("cp.async.wait_all;\n" ::);
    __syncthreads();
    dst[threadIdx.x] = buf[threadIdx.x];
}
