// A correct kernel for tests/data/kernelbench/l1_relu.py that needs the GPU's SM count: a
// grid-stride loop over 4 blocks per SM whose stride is computed from the SMS argument (so a
// wrong count leaves elements unwritten), and a second launch line, chosen by the SM count, with
// 128-thread blocks where the GPU has fewer than 100 SMs.
// kgen: op=l1_relu dtype=float32
// kgen: choices grid-stride, 4 blocks per SM
// kgen: launch relu_sms_f32 grid=(4 * SMS) block=(256) args=(x, out, batch_size, dim, SMS) when=(SMS >= 100)
// kgen: launch relu_sms_f32 grid=(min(4 * SMS, cdiv(batch_size * dim, 128))) block=(128) args=(x, out, batch_size, dim, SMS) when=(SMS < 100)
extern "C" __global__ void relu_sms_f32(const float* __restrict__ x, float* __restrict__ out,
                                        int batch_size, int dim, int sms) {
  const long long n = (long long)batch_size * dim;
  const long long stride = (long long)min(4 * sms, (int)gridDim.x) * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = fmaxf(x[i], 0.0f);
}
