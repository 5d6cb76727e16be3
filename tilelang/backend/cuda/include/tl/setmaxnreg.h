// tl/setmaxnreg.h -- per-warpgroup register reallocation (setmaxnreg, sm_90a).
//
//   warpgroup_reg_alloc<N>()    raise this warpgroup's per-thread register limit to N
//   warpgroup_reg_dealloc<N>()  lower it to N (releases registers to the pool)
//
// N in [24, 256], a multiple of 8.  All threads of the warpgroup (4 aligned
// warps) must execute the same call.  Typical warp-specialised use: the
// producer warpgroup deallocates (e.g. 40) and the consumer warpgroups
// allocate (e.g. 232) right after the role split.  The kernel must be compiled
// with a register count the hardware can re-balance (launch bounds / maxrreg).
#pragma once

#include "common.h"

namespace tl {

#if TL_SM90A_DECLARE
template <int N>
TL_DEVICE void warpgroup_reg_alloc() {
  static_assert(N >= 24 && N <= 256 && N % 8 == 0, "tl::warpgroup_reg_alloc: N must be a multiple of 8 in [24, 256]");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

template <int N>
TL_DEVICE void warpgroup_reg_dealloc() {
  static_assert(N >= 24 && N <= 256 && N % 8 == 0,
                "tl::warpgroup_reg_dealloc: N must be a multiple of 8 in [24, 256]");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
#endif  // TL_SM90A_DECLARE

}  // namespace tl
