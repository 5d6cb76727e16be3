// tl/gemm.h -- warp-tiled block GEMM on mma.sync (Ampere path, sm_80+):
//   C (registers) += op(A) * op(B)
//
//   gemm_ss<M, N, K, WARPS_M, WARPS_N, TRANS_A, TRANS_B, ALayout, BLayout>(A_smem, B_smem, C_regs)
//   gemm_rs<M, N, K, WARPS_M, WARPS_N, TRANS_B, BLayout>(A_regs, B_smem, C_regs)
//
// Conventions (shared with tilelang/layout/gemm.py, which the layout pass uses):
// - the block has WARPS_M * WARPS_N warps; warp w sits at (w % WARPS_M, w / WARPS_M) of
//   the warp grid and owns rows [wm*M/WARPS_M, ...) and columns [wn*N/WARPS_N, ...) of C;
// - inside a warp tile, m16n8 accumulator atoms are numbered row-major (N fastest);
//   atom k holds C registers [4k, 4k+4) in the instruction's c0..c3 order
//   (c0 = (g, 2t), c1 = (g, 2t+1), c2 = (g+8, 2t), c3 = (g+8, 2t+1), g = lane/4, t = lane%4);
// - shared tiles are addressed through ALayout / BLayout (tl::SmemLayout: the XOR
//   swizzles of tilelang/layout/swizzle.py); A is (M, K) or, TRANS_A, (K, M); B is (K, N)
//   or, TRANS_B, (N, K);
// - gemm_rs: A (M x K, 16-bit) is in registers with the layout of
//   make_mma_operand_a_fragment: per warp, m16k16 atoms row-major over (M/16, K/16),
//   8 halves each in PTX a0..a7 order (= the accumulator of a previous gemm converted
//   element-wise when that gemm put all warps along M).
// Element types are deduced from the pointers: half_t / bfloat16_t (m16n8k16),
// float (TF32 m16n8k8, rounded inside mma_sync), int8_t / uint8_t and fp8 (m16n8k32, B
// must be (N, K)). All threads of the block call these together.
#pragma once
#include "common.h"
#include "ldmatrix.h"
#include "mma.h"
#include "swizzle.h"

namespace tl {

namespace detail {

template <class T>
struct mma_k_of {
  static constexpr int value = sizeof(T) == 1 ? 32 : (sizeof(T) == 2 ? 16 : 8);
};

// One m16 x k atom of A into 4 registers (PTX order), from shared memory.
template <class AT, class ALayout, bool TRANS_A>
TL_DEVICE void load_a(uint32_t* a, const AT* smem, int m0, int k0, int lane) {
  if constexpr (sizeof(AT) == 2) {
    if constexpr (!TRANS_A) {  // (M, K): matrices (m0-7,k0-7) (m8-15,k0-7) (m0-7,k8-15) (m8-15,k8-15)
      const int row = m0 + (lane % 16), col = k0 + (lane / 16) * 8;
      ldmatrix_x4(a, smem + ALayout::offset(row, col));
    } else {  // (K, M): transposed 8x8 loads
      const int k = k0 + (lane % 8) + (lane / 16) * 8, m = m0 + ((lane / 8) % 2) * 8;
      ldmatrix_x4_trans(a, smem + ALayout::offset(k, m));
    }
  } else if constexpr (sizeof(AT) == 1) {
    static_assert(!TRANS_A, "tl::gemm: 8-bit A must be (M, K) (transpose_A=False)");
    const int row = m0 + (lane % 16), col = k0 + (lane / 16) * 16;
    ldmatrix_x4(a, smem + ALayout::offset(row, col));
  } else {  // tf32: a_r = A[g + 8 (r % 2)][t + 4 (r / 2)] (raw float bits; mma_sync rounds)
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = m0 + g + 8 * (r % 2), col = k0 + t + 4 * (r / 2);
      const float v = TRANS_A ? smem[ALayout::offset(col, row)] : smem[ALayout::offset(row, col)];
      a[r] = __float_as_uint(v);
    }
  }
}

// B operands of two n8 atoms (n0 and n0 + 8) at k offset k0: b[0..1] atom n0, b[2..3] atom n0 + 8.
template <class BT, class BLayout, bool TRANS_B>
TL_DEVICE void load_b2(uint32_t* b, const BT* smem, int n0, int k0, int lane) {
  if constexpr (sizeof(BT) == 2) {
    if constexpr (!TRANS_B) {  // (K, N): transposed loads give the k-pairs of column n
      const int k = k0 + (lane % 8) + ((lane / 8) % 2) * 8, n = n0 + (lane / 16) * 8;
      ldmatrix_x4_trans(b, smem + BLayout::offset(k, n));
    } else {  // (N, K)
      const int n = n0 + (lane % 8) + (lane / 16) * 8, k = k0 + ((lane / 8) % 2) * 8;
      ldmatrix_x4(b, smem + BLayout::offset(n, k));
    }
  } else if constexpr (sizeof(BT) == 1) {
    static_assert(TRANS_B, "tl::gemm: 8-bit B must be (N, K) (transpose_B=True)");
    const int n = n0 + (lane % 8) + (lane / 16) * 8, k = k0 + ((lane / 8) % 2) * 16;
    ldmatrix_x4(b, smem + BLayout::offset(n, k));
  } else {  // tf32: b_r = B[k = t + 4 r][n = g]
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int k = k0 + t + 4 * r, n = n0 + 8 * h + g;
        const float v = TRANS_B ? smem[BLayout::offset(n, k)] : smem[BLayout::offset(k, n)];
        b[2 * h + r] = __float_as_uint(v);
      }
    }
  }
}

// B operand of one n8 atom (for warp tiles with an odd number of n8 atoms).
template <class BT, class BLayout, bool TRANS_B>
TL_DEVICE void load_b1(uint32_t* b, const BT* smem, int n0, int k0, int lane) {
  if constexpr (sizeof(BT) == 2) {
    const int l = lane % 16;  // lanes 16-31 repeat 0-15 (their addresses are ignored by .x2)
    if constexpr (!TRANS_B) {
      const int k = k0 + (l % 8) + (l / 8) * 8;
      ldmatrix_x2_trans(b, smem + BLayout::offset(k, n0));
    } else {
      const int n = n0 + (l % 8), k = k0 + (l / 8) * 8;
      ldmatrix_x2(b, smem + BLayout::offset(n, k));
    }
  } else if constexpr (sizeof(BT) == 1) {
    static_assert(TRANS_B, "tl::gemm: 8-bit B must be (N, K) (transpose_B=True)");
    const int l = lane % 16;
    const int n = n0 + (l % 8), k = k0 + (l / 8) * 16;
    ldmatrix_x2(b, smem + BLayout::offset(n, k));
  } else {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int k = k0 + t + 4 * r, n = n0 + g;
      const float v = TRANS_B ? smem[BLayout::offset(n, k)] : smem[BLayout::offset(k, n)];
      b[r] = __float_as_uint(v);
    }
  }
}

template <class BT, class BLayout, bool TRANS_B, int NT>
TL_DEVICE void load_b_row(uint32_t (&b)[NT][2], const BT* smem, int n_base, int k0, int lane) {
#pragma unroll
  for (int ni = 0; ni + 1 < NT; ni += 2) load_b2<BT, BLayout, TRANS_B>(&b[ni][0], smem, n_base + ni * 8, k0, lane);
  if constexpr (NT % 2 == 1) load_b1<BT, BLayout, TRANS_B>(&b[NT - 1][0], smem, n_base + (NT - 1) * 8, k0, lane);
}

template <class AT, class BT, class CT>
TL_DEVICE void mma_atom(CT* c, const uint32_t* a, const uint32_t* b) {
  mma_sync<AT, BT, CT, 16, 8, mma_k_of<AT>::value>(c, a, b);
}

}  // namespace detail

// Register-lean schedule (LEAN = true): per k-slice, the warp's A atoms, then B two
// n8-atoms at a time, each multiplied by every A atom at once -- for kernels whose
// other live registers (e.g. a second large accumulator) leave little room.
template <class AT, class BT, class CT, class BLayout, bool TRANS_B, int MT, int NT>
TL_DEVICE void mma_rows_lean(CT* C, const uint32_t (&a)[MT][4], const BT* B, int n_base, int k0, int lane) {
#pragma unroll
  for (int ni = 0; ni < NT; ni += 2) {
    uint32_t b[2][2];
    const bool pair = ni + 1 < NT;
    if (pair) {
      detail::load_b2<BT, BLayout, TRANS_B>(&b[0][0], B, n_base + ni * 8, k0, lane);
    } else {
      detail::load_b1<BT, BLayout, TRANS_B>(&b[0][0], B, n_base + ni * 8, k0, lane);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (h == 0 || pair) {
#pragma unroll
        for (int mi = 0; mi < MT; ++mi) detail::mma_atom<AT, BT, CT>(C + (mi * NT + ni + h) * 4, a[mi], b[h]);
      }
    }
  }
}

// A and B in shared memory.
template <int M, int N, int K, int WARPS_M, int WARPS_N, bool TRANS_A, bool TRANS_B, class ALayout, class BLayout,
          bool LEAN = false, class AT, class BT, class CT>
TL_DEVICE void gemm_ss(const AT* A, const BT* B, CT* C) {
  constexpr int WM = M / WARPS_M, WN = N / WARPS_N;
  constexpr int MT = WM / 16, NT = WN / 8, KA = detail::mma_k_of<AT>::value, KT = K / KA;
  static_assert(M % WARPS_M == 0 && N % WARPS_N == 0, "tl::gemm_ss: tile does not split over the warp grid");
  static_assert(WM % 16 == 0 && WN % 8 == 0 && K % KA == 0, "tl::gemm_ss: warp tile does not fit the mma atom");
  static_assert(sizeof(AT) == sizeof(BT), "tl::gemm_ss: A and B must have the same element size");
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int m_base = (warp % WARPS_M) * WM, n_base = ((warp / WARPS_M) % WARPS_N) * WN;
  if constexpr (LEAN) {
#pragma unroll 1
    for (int kt = 0; kt < KT; ++kt) {
      uint32_t a[MT][4];
#pragma unroll
      for (int mi = 0; mi < MT; ++mi) detail::load_a<AT, ALayout, TRANS_A>(a[mi], A, m_base + mi * 16, kt * KA, lane);
      mma_rows_lean<AT, BT, CT, BLayout, TRANS_B, MT, NT>(C, a, B, n_base, kt * KA, lane);
    }
    return;
  }
  uint32_t a[2][MT][4];
  uint32_t b[2][NT][2];
#pragma unroll
  for (int mi = 0; mi < MT; ++mi) detail::load_a<AT, ALayout, TRANS_A>(a[0][mi], A, m_base + mi * 16, 0, lane);
  detail::load_b_row<BT, BLayout, TRANS_B, NT>(b[0], B, n_base, 0, lane);
#pragma unroll
  for (int kt = 0; kt < KT; ++kt) {
    const int cur = kt % 2;
    if (kt + 1 < KT) {  // fetch the next k-slice while this one is multiplied
#pragma unroll
      for (int mi = 0; mi < MT; ++mi)
        detail::load_a<AT, ALayout, TRANS_A>(a[cur ^ 1][mi], A, m_base + mi * 16, (kt + 1) * KA, lane);
      detail::load_b_row<BT, BLayout, TRANS_B, NT>(b[cur ^ 1], B, n_base, (kt + 1) * KA, lane);
    }
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) {
#pragma unroll
      for (int nj = 0; nj < NT; ++nj) {
        const int ni = (mi % 2) ? NT - 1 - nj : nj;  // serpentine: reuse B registers across rows
        detail::mma_atom<AT, BT, CT>(C + (mi * NT + ni) * 4, a[cur][mi], b[cur][ni]);
      }
    }
  }
}

// A in registers (16-bit), B in shared memory.
template <int M, int N, int K, int WARPS_M, int WARPS_N, bool TRANS_B, class BLayout, bool LEAN = false, class AT,
          class BT, class CT>
TL_DEVICE void gemm_rs(const AT* A_regs, const BT* B, CT* C) {
  static_assert(sizeof(AT) == 2 && sizeof(BT) == 2, "tl::gemm_rs: register A needs float16/bfloat16 operands");
  constexpr int WM = M / WARPS_M, WN = N / WARPS_N;
  constexpr int MT = WM / 16, NT = WN / 8, KT = K / 16;
  static_assert(WM % 16 == 0 && WN % 8 == 0 && K % 16 == 0, "tl::gemm_rs: warp tile does not fit the mma atom");
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int n_base = ((warp / WARPS_M) % WARPS_N) * WN;
  const uint32_t* a_words = reinterpret_cast<const uint32_t*>(A_regs);
  if constexpr (LEAN) {
#pragma unroll
    for (int kt = 0; kt < KT; ++kt) {
      uint32_t a[MT][4];
#pragma unroll
      for (int mi = 0; mi < MT; ++mi) {
#pragma unroll
        for (int w = 0; w < 4; ++w) a[mi][w] = a_words[(mi * KT + kt) * 4 + w];
      }
      mma_rows_lean<AT, BT, CT, BLayout, TRANS_B, MT, NT>(C, a, B, n_base, kt * 16, lane);
    }
    return;
  }
  uint32_t b[2][NT][2];
  detail::load_b_row<BT, BLayout, TRANS_B, NT>(b[0], B, n_base, 0, lane);
#pragma unroll
  for (int kt = 0; kt < KT; ++kt) {
    const int cur = kt % 2;
    if (kt + 1 < KT) detail::load_b_row<BT, BLayout, TRANS_B, NT>(b[cur ^ 1], B, n_base, (kt + 1) * 16, lane);
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) {
      const uint32_t* a = a_words + (mi * KT + kt) * 4;  // atom (mi, kt): 8 halves = 4 words
#pragma unroll
      for (int nj = 0; nj < NT; ++nj) {
        const int ni = (mi % 2) ? NT - 1 - nj : nj;
        detail::mma_atom<AT, BT, CT>(C + (mi * NT + ni) * 4, a, b[cur][ni]);
      }
    }
  }
}

}  // namespace tl
