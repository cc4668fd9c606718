// A header that does not exist in the source's folder.
// expect: line=3 category=syntax contains="tile_config.h"
#include "tile_config.h"

extern "C" __global__ void k(float* x) { x[0] = TILE; }
