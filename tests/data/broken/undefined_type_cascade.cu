// An undefined template type: the follow-on errors on the same line collapse into the root.
// expect: line=6 category=syntax contains="Accum" note="Acc"
template <typename T> struct Acc { T sum; };

extern "C" __global__ void total(const float* x, float* out) {
    Accum<float> a;
    a.sum = 0.0f;
    for (int i = 0; i < 4; ++i) a.sum += x[i];
    out[0] = a.sum;
}
