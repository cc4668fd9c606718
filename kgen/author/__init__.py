"""The builtin author: templates (gemm: simt, mma, wgmma; memory-bound: elementwise, rowwise,
transpose), their parameter spaces and cost models, the op -> family registry, and the search."""
