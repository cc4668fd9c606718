// A definition that conflicts with an earlier declaration only in its return type: the record
// names the earlier declaration (the other line to edit).
// expect: line=6 contains="return type alone" note="earlier declaration at line 4"
__device__ float scale(float v);

__device__ double scale(float v) { return v * 2.0; }

extern "C" __global__ void apply_scale(float* x) { x[0] = scale(x[0]); }
