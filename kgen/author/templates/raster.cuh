// Shared by the builtin author's mma.sync gemm templates (mma, tf32x3): the order in which a
// one-tile-per-block grid takes its tiles. A template includes this file by name; kgen pastes it in
// when it renders the template.
#pragma once

// The tile of this block, (tile_m, tile_n). group 1: blockIdx as is (row-major block order).
// group > 1, a grouped raster: consecutive blocks walk down `group` block rows before moving
// right, so the blocks resident at once share A row panels and B column panels in L2. A bijection
// on the same grid (the last group may have fewer rows).
__device__ __forceinline__ void grouped_tile(int group, int& tile_m, int& tile_n) {
  tile_m = blockIdx.y;
  tile_n = blockIdx.x;
  if (group > 1) {
    const int pid = blockIdx.y * gridDim.x + blockIdx.x, per_group = group * gridDim.x;
    const int first = pid / per_group * group, rows = min((int)gridDim.y - first, group);
    tile_m = first + pid % per_group % rows;
    tile_n = pid % per_group / rows;
  }
}
