// tl/regs.h -- register-array helpers used by generated kernels.
//
//   cvt_pair<To>(To* dst, float lo, float hi)   dst[0] = To(lo), dst[1] = To(hi), written as one
//                                               packed 32-bit register for half_t / bfloat16_t
//                                               (round to nearest even), element-wise otherwise.
// `dst` points into a register array (16-byte aligned by the code generator) at an even index.
#pragma once

#include "common.h"

namespace tl {

template <class To>
TL_DEVICE void cvt_pair(To* dst, float lo, float hi) {
  if constexpr (std::is_same_v<To, half_t>) {
    *reinterpret_cast<uint32_t*>(dst) = pack_float2_to_half2(lo, hi);
  } else if constexpr (std::is_same_v<To, bfloat16_t>) {
    *reinterpret_cast<uint32_t*>(dst) = pack_float2_to_bfloat162(lo, hi);
  } else {
    dst[0] = cvt<To>(lo);
    dst[1] = cvt<To>(hi);
  }
}

}  // namespace tl
