// Warp-tiled block GEMM on mma.sync (Ampere path): C(regs) += op(A) * op(B).
//
// Conventions (shared with tilelang/layout/gemm.py, which the layout pass uses):
// - warp w sits at (w % WARPS_M, w / WARPS_M) of the warp grid; it owns rows
//   [wm*M/WARPS_M, ...) and columns [wn*N/WARPS_N, ...) of C;
// - inside a warp tile, m16n8 accumulator atoms are numbered row-major (N fastest),
//   atom k holds registers [4k, 4k+4) in the instruction's c0..c3 order;
// - shared tiles are addressed through tl::SmemLayout (the same XOR swizzle the
//   layout pass gives the copies that fill them).
#pragma once
#include "common.h"
#include "ldmatrix.h"
#include "mma.h"
#include "swizzle.h"

namespace tl {

template <class T>
struct mma_k_of {
  static constexpr int value = sizeof(T) == 1 ? 32 : (sizeof(T) == 2 ? 16 : 8);
};

// Loads the A operand of one m16k? atom for warp row `m0`, k offset `k0`.
template <class AT, class ALayout, bool TRANS_A>
TL_DEVICE void load_a_atom(uint32_t* a, const AT* smem, int m0, int k0, int lane) {
  if constexpr (sizeof(AT) == 2) {
    if constexpr (!TRANS_A) {  // smem (M, K)
      int row = m0 + (lane % 16), col = k0 + (lane / 16) * 8;
      ldmatrix_x4(a, smem + ALayout::offset(row, col));
    } else {  // smem (K, M)
      int k = k0 + (lane % 8) + (lane / 16) * 8, m = m0 + ((lane / 8) % 2) * 8;
      ldmatrix_x4_trans(a, smem + ALayout::offset(k, m));
    }
  } else if constexpr (sizeof(AT) == 1) {
    static_assert(!TRANS_A, "8-bit gemm needs A as (M, K) (transpose_A=False)");
    int row = m0 + (lane % 16), col = k0 + (lane / 16) * 16;
    ldmatrix_x4(a, smem + ALayout::offset(row, col));
  } else {  // 32-bit (tf32): a_r = A[g + 8(r%2)][t + 4(r/2)]
    int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      int row = m0 + g + 8 * (r % 2), col = k0 + t + 4 * (r / 2);
      float v = TRANS_A ? smem[ALayout::offset(col, row)] : smem[ALayout::offset(row, col)];
      a[r] = float_to_tf32(v);
    }
  }
}

// Loads the B operands of two n8 atoms (n0 and n0 + 8) at k offset k0: b[0..1] atom n0, b[2..3] atom n0+8.
template <class BT, class BLayout, bool TRANS_B>
TL_DEVICE void load_b_pair(uint32_t* b, const BT* smem, int n0, int k0, int lane) {
  if constexpr (sizeof(BT) == 2) {
    if constexpr (!TRANS_B) {  // smem (K, N)
      int k = k0 + (lane % 8) + ((lane / 8) % 2) * 8, n = n0 + (lane / 16) * 8;
      ldmatrix_x4_trans(b, smem + BLayout::offset(k, n));
    } else {  // smem (N, K)
      int n = n0 + (lane % 8) + (lane / 16) * 8, k = k0 + ((lane / 8) % 2) * 8;
      ldmatrix_x4(b, smem + BLayout::offset(n, k));
    }
  } else if constexpr (sizeof(BT) == 1) {
    static_assert(TRANS_B, "8-bit gemm needs B as (N, K) (transpose_B=True)");
    int n = n0 + (lane % 8) + (lane / 16) * 8, k = k0 + ((lane / 8) % 2) * 16;
    ldmatrix_x4(b, smem + BLayout::offset(n, k));
  } else {  // tf32: b_r = B[k = t + 4r][n = g]
    int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        int k = k0 + t + 4 * r, n = n0 + 8 * half + g;
        float v = TRANS_B ? smem[BLayout::offset(n, k)] : smem[BLayout::offset(k, n)];
        b[2 * half + r] = float_to_tf32(v);
      }
    }
  }
}

template <class AT, class BT, class CT>
TL_DEVICE void mma_atom(CT* c, const uint32_t* a, const uint32_t* b) {
  constexpr int K = mma_k_of<AT>::value;
  mma_sync<AT, BT, CT, 16, 8, K>(c, a, b);
}

// A and B in shared memory.
template <int M, int N, int K, int WARPS_M, int WARPS_N, bool TRANS_A, bool TRANS_B, class ALayout, class BLayout,
          class AT, class BT, class CT>
TL_DEVICE void gemm_ss(const AT* A, const BT* B, CT* C) {
  constexpr int WM = M / WARPS_M, WN = N / WARPS_N;
  constexpr int MT = WM / 16, NT = WN / 8, KA = mma_k_of<AT>::value;
  static_assert(WM % 16 == 0 && WN % 16 == 0 && K % KA == 0, "gemm tile does not fit the mma atom");
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int m_base = (warp % WARPS_M) * WM, n_base = (warp / WARPS_M) * WN;
#pragma unroll
  for (int kk = 0; kk < K; kk += KA) {
    uint32_t a[MT][4];
    uint32_t b[NT][2];
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) load_a_atom<AT, ALayout, TRANS_A>(a[mi], A, m_base + mi * 16, kk, lane);
#pragma unroll
    for (int ni = 0; ni < NT; ni += 2) load_b_pair<BT, BLayout, TRANS_B>(&b[ni][0], B, n_base + ni * 8, kk, lane);
#pragma unroll
    for (int mi = 0; mi < MT; ++mi)
#pragma unroll
      for (int ni = 0; ni < NT; ++ni) mma_atom<AT, BT, CT>(C + (mi * NT + ni) * 4, a[mi], b[ni]);
  }
}

// A in registers (the accumulator layout of a previous gemm converted to AT, see
// tilelang/layout/gemm.py): the warp tile of A is MT x (K/16) atoms of 8 registers
// (4 x 32-bit words), atom (mi, ki) = C atoms (mi, 2ki) and (mi, 2ki+1) of the producer.
template <int M, int N, int K, int WARPS_M, int WARPS_N, bool TRANS_B, class BLayout, class AT, class BT, class CT>
TL_DEVICE void gemm_rs(const AT* A_regs, const BT* B, CT* C) {
  static_assert(sizeof(AT) == 2, "register A operand must be float16/bfloat16");
  constexpr int WM = M / WARPS_M, WN = N / WARPS_N;
  constexpr int MT = WM / 16, NT = WN / 8, KT = K / 16;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int n_base = (warp / WARPS_M) * WN;
  const uint32_t* a_words = reinterpret_cast<const uint32_t*>(A_regs);
#pragma unroll
  for (int ki = 0; ki < KT; ++ki) {
    uint32_t b[NT][2];
#pragma unroll
    for (int ni = 0; ni < NT; ni += 2) load_b_pair<BT, BLayout, TRANS_B>(&b[ni][0], B, n_base + ni * 8, ki * 16, lane);
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) {
      // producer C atoms (mi, 2ki), (mi, 2ki+1): each 4 values = 2 words in AT
      const uint32_t* c0 = a_words + ((mi * (K / 8) + 2 * ki) * 4) / 2;
      const uint32_t* c1 = a_words + ((mi * (K / 8) + 2 * ki + 1) * 4) / 2;
      uint32_t a[4] = {c0[0], c0[1], c1[0], c1[1]};
#pragma unroll
      for (int ni = 0; ni < NT; ++ni) mma_atom<AT, BT, CT>(C + (mi * NT + ni) * 4, a, b[ni]);
    }
  }
}

}  // namespace tl
