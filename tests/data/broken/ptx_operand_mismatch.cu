// Inline PTX with the wrong operand type for the instruction; ptxas error mapped via .loc.
// expect: line=9 category=syntax
extern "C" __global__ void mix(float* x, const float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = x[i];
    float b = y[i];
    float r;
    asm("add.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "l"(y));
    x[i] = r + b;
}
