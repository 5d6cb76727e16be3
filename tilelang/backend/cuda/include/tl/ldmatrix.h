// tl/ldmatrix.h -- ldmatrix (sm_75+) and stmatrix (sm_90+) for 8x8 b16 tiles.
//
// One "matrix" is 8 rows x 8 16-bit elements, each row 16 contiguous bytes in
// shared memory (16-byte aligned).  For .xN (N = 1, 2, 4) the row addresses
// of matrix i come from lanes 8*i .. 8*i+7 (lane 8*i + r gives row r); the
// pointer argument of the other lanes is ignored (but must still be a valid
// shared-memory pointer value).  Register i of every lane holds 2 elements of
// matrix i:
//   non-trans: lane l holds row l/4, columns 2*(l%4), 2*(l%4)+1   (low half = first)
//   trans    : lane l holds column l/4, rows 2*(l%4), 2*(l%4)+1   (i.e. the
//              fragment of the transposed matrix)
// This is exactly the mma.sync m16n8k16 A / B / C operand layout for one
// 8x8 sub-tile.  stmatrix is the inverse (same lane <-> element mapping).
// All 32 lanes of the warp must execute these instructions together.
#pragma once

#include "common.h"

namespace tl {

// dst: the lane's destination registers (1 / 2 / 4 x 32-bit); smem: this
// lane's row address (shared memory, 16-byte aligned).
TL_DEVICE void ldmatrix_x1(void* dst, const void* smem) {
  uint32_t* d = static_cast<uint32_t*>(dst);
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(d[0]) : "r"(smem_addr(smem)));
}

TL_DEVICE void ldmatrix_x2(void* dst, const void* smem) {
  uint32_t* d = static_cast<uint32_t*>(dst);
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(d[0]), "=r"(d[1])
               : "r"(smem_addr(smem)));
}

TL_DEVICE void ldmatrix_x4(void* dst, const void* smem) {
  uint32_t* d = static_cast<uint32_t*>(dst);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(smem_addr(smem)));
}

TL_DEVICE void ldmatrix_x1_trans(void* dst, const void* smem) {
  uint32_t* d = static_cast<uint32_t*>(dst);
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(d[0]) : "r"(smem_addr(smem)));
}

TL_DEVICE void ldmatrix_x2_trans(void* dst, const void* smem) {
  uint32_t* d = static_cast<uint32_t*>(dst);
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(d[0]), "=r"(d[1])
               : "r"(smem_addr(smem)));
}

TL_DEVICE void ldmatrix_x4_trans(void* dst, const void* smem) {
  uint32_t* d = static_cast<uint32_t*>(dst);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(smem_addr(smem)));
}

// Templated form: ldmatrix<kNum, kTrans>(dst, smem), kNum in {1, 2, 4}.
template <int kNum, bool kTrans = false>
TL_DEVICE void ldmatrix(void* dst, const void* smem) {
  static_assert(kNum == 1 || kNum == 2 || kNum == 4, "tl::ldmatrix: kNum must be 1, 2 or 4");
  if constexpr (kNum == 1) {
    kTrans ? ldmatrix_x1_trans(dst, smem) : ldmatrix_x1(dst, smem);
  } else if constexpr (kNum == 2) {
    kTrans ? ldmatrix_x2_trans(dst, smem) : ldmatrix_x2(dst, smem);
  } else {
    kTrans ? ldmatrix_x4_trans(dst, smem) : ldmatrix_x4(dst, smem);
  }
}

#if TL_SM90_DECLARE
// stmatrix (sm_90+): smem is this lane's row address, src the lane's registers.
TL_DEVICE void stmatrix_x1(void* smem, const void* src) {
  const uint32_t* s = static_cast<const uint32_t*>(src);
  asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};\n" ::"r"(smem_addr(smem)), "r"(s[0]) : "memory");
}

TL_DEVICE void stmatrix_x2(void* smem, const void* src) {
  const uint32_t* s = static_cast<const uint32_t*>(src);
  asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};\n" ::"r"(smem_addr(smem)), "r"(s[0]),
               "r"(s[1])
               : "memory");
}

TL_DEVICE void stmatrix_x4(void* smem, const void* src) {
  const uint32_t* s = static_cast<const uint32_t*>(src);
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_addr(smem)),
               "r"(s[0]), "r"(s[1]), "r"(s[2]), "r"(s[3])
               : "memory");
}

TL_DEVICE void stmatrix_x1_trans(void* smem, const void* src) {
  const uint32_t* s = static_cast<const uint32_t*>(src);
  asm volatile("stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%0], {%1};\n" ::"r"(smem_addr(smem)), "r"(s[0])
               : "memory");
}

TL_DEVICE void stmatrix_x2_trans(void* smem, const void* src) {
  const uint32_t* s = static_cast<const uint32_t*>(src);
  asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};\n" ::"r"(smem_addr(smem)), "r"(s[0]),
               "r"(s[1])
               : "memory");
}

TL_DEVICE void stmatrix_x4_trans(void* smem, const void* src) {
  const uint32_t* s = static_cast<const uint32_t*>(src);
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_addr(smem)),
               "r"(s[0]), "r"(s[1]), "r"(s[2]), "r"(s[3])
               : "memory");
}

template <int kNum, bool kTrans = false>
TL_DEVICE void stmatrix(void* smem, const void* src) {
  static_assert(kNum == 1 || kNum == 2 || kNum == 4, "tl::stmatrix: kNum must be 1, 2 or 4");
  if constexpr (kNum == 1) {
    kTrans ? stmatrix_x1_trans(smem, src) : stmatrix_x1(smem, src);
  } else if constexpr (kNum == 2) {
    kTrans ? stmatrix_x2_trans(smem, src) : stmatrix_x2(smem, src);
  } else {
    kTrans ? stmatrix_x4_trans(smem, src) : stmatrix_x4(smem, src);
  }
}
#endif  // TL_SM90_DECLARE

}  // namespace tl
