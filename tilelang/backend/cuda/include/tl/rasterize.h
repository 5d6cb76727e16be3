// tl/rasterize.h -- block-index rasterization for T.use_swizzle(panel_size, order).
//
// Blocks are launched in linear order L = blockIdx.x + blockIdx.y * gridDim.x.
// Rasterization maps L to a new (bx, by) so that consecutive blocks stay in a
// narrow panel of the output (better L2 reuse of the operand tiles):
//
// order = "row"   : the grid is cut into panels of `panel` consecutive rows
//   (by values; the last panel may be shorter).  Inside a panel, consecutive
//   blocks walk down the panel's rows first, then move to the next column;
//   odd-numbered panels walk the columns right-to-left (serpentine).
//       p = L / (panel * gx), o = L % (panel * gx), h = min(panel, gy - p * panel)
//       by = p * panel + o % h,  bx = o / h  (bx = gx - 1 - o / h when p is odd)
// order = "column": the same with the roles of x and y exchanged (panels of
//   `panel` consecutive columns, walking along the columns first).
//
// The map is a bijection of [0, gx) x [0, gy) for every grid shape and every
// panel >= 1 (also when the grid is not divisible by the panel); panel <= 0
// is the identity.  blockIdx.z is passed through unchanged.
#pragma once

#include "common.h"

namespace tl {

// Pure index maps (host and device): linear block id -> (bx, by).
TL_HOST_DEVICE void rasterize2d_row_map(int linear, int grid_x, int grid_y, int panel, int& bx, int& by) {
  if (panel <= 0) {
    bx = linear % grid_x;
    by = linear / grid_x;
    return;
  }
  const int panel_blocks = panel * grid_x;
  const int p = linear / panel_blocks;
  const int o = linear - p * panel_blocks;
  const int rows_left = grid_y - p * panel;
  const int h = rows_left < panel ? rows_left : panel;
  const int col = o / h;
  by = p * panel + (o - col * h);
  bx = (p & 1) ? grid_x - 1 - col : col;
}

TL_HOST_DEVICE void rasterize2d_column_map(int linear, int grid_x, int grid_y, int panel, int& bx, int& by) {
  if (panel <= 0) {
    bx = linear % grid_x;
    by = linear / grid_x;
    return;
  }
  const int panel_blocks = panel * grid_y;
  const int p = linear / panel_blocks;
  const int o = linear - p * panel_blocks;
  const int cols_left = grid_x - p * panel;
  const int w = cols_left < panel ? cols_left : panel;
  const int row = o / w;
  bx = p * panel + (o - row * w);
  by = (p & 1) ? grid_y - 1 - row : row;
}

// Device forms reading blockIdx / gridDim.  Return (bx, by, blockIdx.z).
template <int kPanel>
TL_DEVICE dim3 rasterize2d_row() {
  int bx, by;
  rasterize2d_row_map(static_cast<int>(blockIdx.x + blockIdx.y * gridDim.x), static_cast<int>(gridDim.x),
                      static_cast<int>(gridDim.y), kPanel, bx, by);
  return dim3(static_cast<unsigned>(bx), static_cast<unsigned>(by), blockIdx.z);
}

template <int kPanel>
TL_DEVICE dim3 rasterize2d_column() {
  int bx, by;
  rasterize2d_column_map(static_cast<int>(blockIdx.x + blockIdx.y * gridDim.x), static_cast<int>(gridDim.x),
                         static_cast<int>(gridDim.y), kPanel, bx, by);
  return dim3(static_cast<unsigned>(bx), static_cast<unsigned>(by), blockIdx.z);
}

// Runtime-panel form: column_order=false is order="row".
TL_DEVICE dim3 rasterize2d(int panel, bool column_order) {
  int bx, by;
  const int linear = static_cast<int>(blockIdx.x + blockIdx.y * gridDim.x);
  if (column_order) {
    rasterize2d_column_map(linear, static_cast<int>(gridDim.x), static_cast<int>(gridDim.y), panel, bx, by);
  } else {
    rasterize2d_row_map(linear, static_cast<int>(gridDim.x), static_cast<int>(gridDim.y), panel, bx, by);
  }
  return dim3(static_cast<unsigned>(bx), static_cast<unsigned>(by), blockIdx.z);
}

}  // namespace tl
