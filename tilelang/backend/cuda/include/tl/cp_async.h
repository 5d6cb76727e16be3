// tl/cp_async.h -- asynchronous global -> shared copies (cp.async, sm_80+).
//
//   cp_async<Bytes>(smem, gmem)             copy Bytes (4, 8 or 16) bytes
//   cp_async_zfill<Bytes>(smem, gmem, pred) same, but when pred is false no
//                                           global memory is read and Bytes
//                                           zero bytes are written instead
//   cp_async_commit()                       close the current group
//   cp_async_wait<N>()                      wait until at most N groups of this
//                                           thread are pending
//   cp_async_wait_all()                     wait for everything
//
// 4 / 8-byte copies use cp.async.ca (L1-allocating), 16-byte copies use
// cp.async.cg (L2 only) unless kCacheAll=true.  smem and gmem must both be
// aligned to Bytes.  The copied data is visible to the issuing thread after
// cp_async_wait; other threads additionally need a barrier (__syncthreads()).
#pragma once

#include "common.h"

namespace tl {

template <int Bytes, bool kCacheAll = false>
TL_DEVICE void cp_async(void* smem, const void* gmem) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "tl::cp_async: Bytes must be 4, 8 or 16");
  const uint32_t dst = smem_addr(smem);
  if constexpr (Bytes == 16 && !kCacheAll) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(gmem), "n"(Bytes) : "memory");
  }
}

// Predicated copy with zero fill.  When pred is false the source pointer is
// not dereferenced (it may point out of bounds) and the destination receives
// Bytes zero bytes (the PTX src-size operand is 0).
template <int Bytes, bool kCacheAll = false>
TL_DEVICE void cp_async_zfill(void* smem, const void* gmem, bool pred) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "tl::cp_async_zfill: Bytes must be 4, 8 or 16");
  const uint32_t dst = smem_addr(smem);
  const uint32_t src_size = pred ? static_cast<uint32_t>(Bytes) : 0u;
  if constexpr (Bytes == 16 && !kCacheAll) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_size) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(gmem), "n"(Bytes), "r"(src_size)
                 : "memory");
  }
}

// Predicated copy without fill: when pred is false nothing is copied and the
// destination keeps its previous contents.
template <int Bytes, bool kCacheAll = false>
TL_DEVICE void cp_async_pred(void* smem, const void* gmem, bool pred) {
  if (pred) {
    cp_async<Bytes, kCacheAll>(smem, gmem);
  }
}

TL_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N>
TL_DEVICE void cp_async_wait() {
  static_assert(N >= 0, "tl::cp_async_wait: N must be >= 0");
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

TL_DEVICE void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

}  // namespace tl
