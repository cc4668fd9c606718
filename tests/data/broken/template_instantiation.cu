// A template that fails only when instantiated: the failing line and the instantiation line.
// expect: line=8 contains="has no member" note="instantiated at line 13"
template <typename T>
struct Vec2 { T x, y; };

template <typename T>
__device__ T dot2(const Vec2<T>& a, const Vec2<T>& b) {
    return a.x * b.x + a.y * b.z;
}

extern "C" __global__ void run_dot(float* out) {
    Vec2<float> a{1.f, 2.f}, b{3.f, 4.f};
    out[0] = dot2(a, b);
}
