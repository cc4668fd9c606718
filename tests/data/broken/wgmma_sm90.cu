// wgmma needs the arch-specific target sm_90a; this file targets plain sm_90.
// expect-arch: sm_90
// expect: line=5 category=arch contains="sm_90a"
extern "C" __global__ void fence_only(float* x) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    x[threadIdx.x] = 1.0f;
}
