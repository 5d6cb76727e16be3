// tl/gemm_sm90.h -- block GEMM on wgmma (Hopper, sm_90a): C (registers) += op(A) * op(B)
//
//   wgmma_gemm_ss<M, N, K, WG_M, WG_N, INST_N, TRANS_A, TRANS_B, ALayout, BLayout,
//                 CLEAR, WAIT, THREAD_BASE>(A_smem, B_smem, C_regs)
//   wgmma_gemm_rs<M, N, K, WG_M, WG_N, INST_N, TRANS_B, BLayout, CLEAR, WAIT, THREAD_BASE>(A_regs, B_smem, C_regs)
//
// Conventions (shared with tilelang/layout/gemm.py: make_wgmma_accumulator_fragment,
// make_wgmma_operand_a_fragment, plan_wgmma):
// - the threads [THREAD_BASE, THREAD_BASE + 128 * WG_M * WG_N) call together (a warp-
//   specialised consumer passes its first thread); warpgroup g = (tid - THREAD_BASE) / 128
//   sits at (g % WG_M, g / WG_M) and owns an (M / WG_M) x (N / WG_N) tile of C;
// - inside a warpgroup tile C registers run over m64n8 atoms row-major (N fastest), 4 per
//   atom in the wgmma d order, so one m64nINST_N instruction on row atom mi and columns
//   [n0, n0 + INST_N) updates the contiguous registers from 4 * (mi * WGN / 8 + n0 / 8);
// - shared tiles are tl::SmemLayout panels with a 32/64/128-byte swizzle (the layout pass
//   only plans wgmma for those): A is (M, K) (K-major) or, TRANS_A, (K, M) (M-major);
//   B is (K, N) (N-major) or, TRANS_B, (N, K) (K-major); MN-major only for 16-bit types;
// - RS: A (M x K, 16-bit) in registers with the accumulator layout of an (M, K) tile
//   (WG_N == 1): k-step s of row atom mi is the 8 halves at 4 * (mi * K / 8 + 2 s);
// - CLEAR: the first k-step ignores the old C (scale-d = 0) instead of zero-filling it;
// - WAIT: wait for the whole group before returning (the shared tiles may then be
//   overwritten and C read); WAIT = false leaves it in flight for tl::wgmma_wait<N>().
// Descriptors: a K-major operand stored in panels of S bytes of K (rows of S bytes,
// 8-row atoms of 8 S bytes) has SBO = 8 S and, per 32-byte k-step, start = panel base +
// row0 * S + (kbyte % S); an MN-major one stores panels of S bytes of MN with K as rows:
// LBO = panel stride (ROWS * S), SBO = 8 S, start = panel base + k0 * S (tl/README.md).
#pragma once
#include "common.h"
#include "swizzle.h"
#include "sync.h"
#include "wgmma.h"

namespace tl {

namespace detail {

// Byte offset, from the tile base, of the descriptor start address for rows [mn0, ...)
// of an operand at 32-byte k-step k_step (host-callable: tests/cuda/test_wgmma_lowering.py
// checks it against the hardware's address formula and the Python layouts).
template <class Layout, int E, bool MN_MAJOR>
TL_HOST_DEVICE constexpr uint32_t wgmma_operand_offset(int mn0, int k_step) {
  constexpr int S = Layout::kSwizzle, R = Layout::kRows;
  if constexpr (!MN_MAJOR) {  // panels of S bytes of K; rows of S bytes inside a panel
    const int kb = k_step * 32;
    return (kb / S) * (R * S) + mn0 * S + (kb % S);
  } else {  // panels of S bytes of MN; k-rows of S bytes inside a panel
    return (mn0 * E / S) * (R * S) + k_step * (32 / E) * S;
  }
}

}  // namespace detail

#if TL_SM90A_DECLARE

namespace detail {

template <class Layout, bool MN_MAJOR>
TL_DEVICE uint64_t wgmma_operand_desc(const void* tile) {
  constexpr int S = Layout::kSwizzle;
  static_assert(S == 32 || S == 64 || S == 128, "tl::wgmma_gemm: operand tiles must be 32/64/128-byte swizzled");
  static_assert(Layout::kRows % 8 == 0, "tl::wgmma_gemm: swizzle atoms need a multiple of 8 rows");
  return make_wgmma_desc(tile, S, MN_MAJOR ? Layout::kRows * S : 16, 8 * S);
}

}  // namespace detail

template <int M, int N, int K, int WG_M, int WG_N, int INST_N, bool TRANS_A, bool TRANS_B, class ALayout,
          class BLayout, bool CLEAR = false, bool WAIT = true, int THREAD_BASE = 0, class AT, class BT, class CT>
TL_DEVICE void wgmma_gemm_ss(const AT* A, const BT* B, CT* C) {
  constexpr int E = sizeof(AT), KI = 32 / E;  // one instruction consumes 32 bytes of K
  constexpr int WGM = M / WG_M, WGN = N / WG_N, MT = WGM / 64, NT = WGN / INST_N, KT = K / KI;
  static_assert(sizeof(AT) == sizeof(BT), "tl::wgmma_gemm_ss: A and B must have the same element size");
  static_assert(WGM % 64 == 0 && WGN % INST_N == 0 && K % KI == 0, "tl::wgmma_gemm_ss: tile does not fit m64nNk");
  static_assert(E == 2 || (!TRANS_A && TRANS_B), "tl::wgmma_gemm_ss: only 16-bit operands may be MN-major");
  const int wg = (static_cast<int>(threadIdx.x) - THREAD_BASE) / 128;
  const int m_base = (wg % WG_M) * WGM, n_base = ((wg / WG_M) % WG_N) * WGN;
  const uint64_t da = detail::wgmma_operand_desc<ALayout, TRANS_A>(A);
  const uint64_t db = detail::wgmma_operand_desc<BLayout, !TRANS_B>(B);
  warpgroup_fence_operands<MT * WGN / 2>(C);
  wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < KT; ++ks) {
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) {
      const uint64_t a = wgmma_desc_advance(da, detail::wgmma_operand_offset<ALayout, E, TRANS_A>(m_base + 64 * mi, ks));
#pragma unroll
      for (int ni = 0; ni < NT; ++ni) {
        const uint64_t b =
            wgmma_desc_advance(db, detail::wgmma_operand_offset<BLayout, E, !TRANS_B>(n_base + INST_N * ni, ks));
        wgmma_ss<AT, BT, CT, INST_N, TRANS_A, !TRANS_B>(a, b, C + (mi * (WGN / 8) + ni * (INST_N / 8)) * 4,
                                                       (CLEAR && ks == 0) ? 0 : 1);
      }
    }
  }
  wgmma_commit_group();
  if constexpr (WAIT) wgmma_wait<0>();
  warpgroup_fence_operands<MT * WGN / 2>(C);
}

template <int M, int N, int K, int WG_M, int WG_N, int INST_N, bool TRANS_B, class BLayout, bool CLEAR = false,
          bool WAIT = true, int THREAD_BASE = 0, class AT, class BT, class CT>
TL_DEVICE void wgmma_gemm_rs(const AT* A_regs, const BT* B, CT* C) {
  static_assert(sizeof(AT) == 2 && sizeof(BT) == 2, "tl::wgmma_gemm_rs: register A needs 16-bit operands");
  static_assert(WG_N == 1, "tl::wgmma_gemm_rs: a register A operand needs every warpgroup along M");
  constexpr int E = 2, KI = 16;
  constexpr int WGM = M / WG_M, MT = WGM / 64, NT = N / INST_N, KT = K / KI;
  static_assert(WGM % 64 == 0 && N % INST_N == 0 && K % KI == 0, "tl::wgmma_gemm_rs: tile does not fit m64nNk16");
  const uint64_t db = detail::wgmma_operand_desc<BLayout, !TRANS_B>(B);
  // The A words are read asynchronously: the operand fences keep them (and C) live and
  // unmoved until the wait below.
  uint32_t* a_words = reinterpret_cast<uint32_t*>(const_cast<AT*>(A_regs));
  constexpr int kAWords = MT * K / 4;
  warpgroup_fence_operands<kAWords>(a_words);
  warpgroup_fence_operands<MT * N / 2>(C);
  wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < KT; ++ks) {
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) {
      const uint32_t* a = a_words + (mi * (K / 8) + 2 * ks) * 2;
#pragma unroll
      for (int ni = 0; ni < NT; ++ni) {
        const uint64_t b = wgmma_desc_advance(db, detail::wgmma_operand_offset<BLayout, E, !TRANS_B>(INST_N * ni, ks));
        wgmma_rs<AT, BT, CT, INST_N, !TRANS_B>(a, b, C + (mi * (N / 8) + ni * (INST_N / 8)) * 4,
                                               (CLEAR && ks == 0) ? 0 : 1);
      }
    }
  }
  wgmma_commit_group();
  if constexpr (WAIT) wgmma_wait<0>();
  warpgroup_fence_operands<kAWords>(a_words);
  warpgroup_fence_operands<MT * N / 2>(C);
}

#endif  // TL_SM90A_DECLARE

}  // namespace tl
