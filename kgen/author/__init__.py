"""The builtin author's gemm templates (simt, mma), their parameter space, cost model and search."""
