// An inline PTX typo inside an unrolled loop: ptxas reports it once per copy, kgen once with a count.
// expect: line=7 category=syntax count=4 contains="u33"
extern "C" __global__ void bump4(unsigned* x) {
    unsigned v = x[threadIdx.x];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        asm volatile("add.u33 %0, %0, 1;" : "+r"(v));
    }
    x[threadIdx.x] = v;
}
