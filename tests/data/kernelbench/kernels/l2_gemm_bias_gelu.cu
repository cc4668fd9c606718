// A correct kernel for tests/data/kernelbench/l2_gemm_bias_gelu.py: one thread per output,
// out = gelu(x @ W^T + b) * 0.5 with the exact (erf) GELU, as F.gelu's default.
// kgen: op=l2_gemm_bias_gelu dtype=float32
// kgen: choices thread per output, 16x16 blocks
// kgen: launch gemm_bias_gelu_f32 grid=(cdiv(out_features, 16), cdiv(batch_size, 16)) block=(16, 16) args=(x, linear_weight, linear_bias, out, batch_size, in_features, out_features)
extern "C" __global__ void gemm_bias_gelu_f32(const float* __restrict__ x,
                                              const float* __restrict__ linear_weight,
                                              const float* __restrict__ linear_bias,
                                              float* __restrict__ out, int batch_size,
                                              int in_features, int out_features) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= batch_size || col >= out_features) return;
  const float* a = x + (size_t)row * in_features;
  const float* w = linear_weight + (size_t)col * in_features;
  float acc = 0.0f;
  for (int k = 0; k < in_features; ++k) acc += a[k] * w[k];
  acc += linear_bias[col];
  const float g = 0.5f * acc * (1.0f + erff(acc * 0.70710678118654752f));
  out[(size_t)row * out_features + col] = g * 0.5f;
}
