// A saxpy whose closing brace is missing at the end of the file.
extern "C" __global__ void saxpy(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = a * x[i] + y[i];
  }
