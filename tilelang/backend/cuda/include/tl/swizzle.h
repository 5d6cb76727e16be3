// Shared-memory tile layouts: the XOR swizzles of tilelang/layout/swizzle.py, in C++.
//
// A (ROWS, COLS) tile of E-byte elements with swizzle width S bytes (0: row-major) is
// stored in panels of S bytes (panel-major, then row, then column); the byte offset a is
// then permuted as a ^ (((a >> 7) & (S/16 - 1)) << 4). Usable on host and device so the
// host tests can check it against the Python layout element by element.
#pragma once

#if defined(__CUDACC__)
#define TL_HD __host__ __device__ __forceinline__
#else
#define TL_HD inline
#endif

namespace tl {

template <int ROWS, int COLS, int E, int S>
struct SmemLayout {
  static constexpr int kRows = ROWS, kCols = COLS, kSwizzle = S;
  static TL_HD int offset(int row, int col) {
    if constexpr (S == 0) {
      return row * COLS + col;
    } else {
      int byte = col * E;
      int panel = byte / S, inner = byte % S;
      int a = panel * (ROWS * S) + row * S + inner;
      a ^= ((a >> 7) & (S / 16 - 1)) << 4;
      return a / E;
    }
  }
};

}  // namespace tl
