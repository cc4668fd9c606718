// expect-verdict: wrong
// Bug: breaks ties the wrong way. The scan uses >= instead of >, so among equal maxima it returns
// the LAST index; the spec (and torch.argmax) want the first. With the spec's continuous float32
// inputs ties almost never happen and this kernel passes: it is caught only by a test whose init
// makes ties common, e.g. the argmax spec with X: {init: {dist: randint, low: 0, high: 8}} (8
// distinct values per row, so nearly every row of 16+ elements has a tied maximum). Wire it with
// such a spec override; against the shipped spec expect it to pass in float32.
// test-spec: argmax_ties (tests/data/specs/argmax_ties/spec.yaml: the shipped argmax, X randint)
// kgen: op=argmax dtype=float32
// kgen: launch argmax_lasttie grid=(cdiv(M, 128)) block=(128) args=(X, I, M, N)
extern "C" __global__ void argmax_lasttie(const float* X, long long* I, int M, int N) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M) return;
    const float* x = X + (size_t)row * N;
    float best = x[0];
    int arg = 0;
    for (int j = 1; j < N; ++j) {
        if (x[j] >= best) {  // should be >
            best = x[j];
            arg = j;
        }
    }
    I[row] = arg;
}
