// A correct kernel for tests/data/kernelbench/l1_relu.py: one thread per element.
// kgen: op=l1_relu dtype=float32
// kgen: choices thread per element, 256 threads
// kgen: launch relu_f32 grid=(cdiv(batch_size * dim, 256)) block=(256) args=(x, out, batch_size, dim)
extern "C" __global__ void relu_f32(const float* __restrict__ x, float* __restrict__ out,
                                    int batch_size, int dim) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (long long)batch_size * dim) out[i] = fmaxf(x[i], 0.0f);
}
