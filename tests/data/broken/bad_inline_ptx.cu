// An inline PTX typo (u33 is not a type): ptxas names a PTX line, mapped back through .loc.
// expect: line=6 category=syntax
extern "C" __global__ void bump(unsigned* x) {
    unsigned v = x[threadIdx.x];
    unsigned r;
    asm("add.u33 %0, %1, 1;" : "=r"(r) : "r"(v));
    x[threadIdx.x] = r;
}
