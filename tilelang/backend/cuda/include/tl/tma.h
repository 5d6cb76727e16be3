// tl/tma.h -- Tensor Memory Accelerator (cp.async.bulk.tensor) and bulk copies, sm_90+.
//
// desc: pointer to a CUtensorMap (created on the host with
//   cuTensorMapEncodeTiled, passed as a `const __grid_constant__ CUtensorMap`
//   kernel parameter or placed in global / constant memory, 64-byte aligned).
// Coordinates are signed element indices, innermost (contiguous) dimension
// first: c0 indexes the dimension with globalDim[0].  c0 times the element
// size must be a multiple of 16 bytes: the H200 raises "illegal instruction"
// on a box whose innermost start is not 16-byte aligned.  Out-of-bounds box
// elements are filled with zeros (or NaN, per the map's oobFill) on load and
// skipped on store.
//
// Load  (global -> shared, completes on an mbarrier):
//   tma_load_{1..5}d(desc, mbar, smem, c0, ...)   /  tma_load(desc, mbar, smem, c0, ...)
//   tma_load_multicast_{1..5}d(desc, mbar, smem, cta_mask, c0, ...)
//     the expected byte count must be registered on the barrier of every
//     destination CTA (mbarrier_arrive_expect_tx) for the current phase.
// Store (shared -> global, bulk-group completion):
//   tma_store_{1..5}d(desc, smem, c0, ...)         /  tma_store(desc, smem, c0, ...)
//   tma_store_add_{1..5}d(desc, smem, c0, ...)     element-wise atomic add into global
//   tma_store_arrive()     commit the issued stores into a bulk async-group
//   tma_store_wait<N>()    wait until at most N groups still read shared memory
// Non-tensor bulk copies (16-byte aligned addresses, size a multiple of 16):
//   bulk_copy_g2s(smem, gmem, bytes, mbar)   completes on mbar (expect_tx bytes)
//   bulk_copy_s2g(gmem, smem, bytes)         bulk-group completion
//   prefetch_tma_descriptor(desc)
//
// smem: destination / source tile, 128-byte aligned (1024-byte aligned for
// the 128B swizzle mode); its layout is the box in the map's swizzle mode.
// Before a TMA store reads shared memory written by ordinary stores, every
// writing thread executes fence_proxy_async() and the block synchronises.
#pragma once

#include <cuda.h>

#include "common.h"

namespace tl {

#if TL_SM90_DECLARE

namespace detail {
TL_DEVICE uint64_t desc_ptr(const CUtensorMap* desc) { return reinterpret_cast<uint64_t>(desc); }
}  // namespace detail

// ---- loads ----
TL_DEVICE void tma_load_1d(const CUtensorMap* desc, uint64_t* mbar, void* smem, int32_t c0) {
  asm volatile(
      "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3}], [%2];\n" ::"r"(
          smem_addr(smem)),
      "l"(detail::desc_ptr(desc)), "r"(smem_addr(mbar)), "r"(c0)
      : "memory");
}

TL_DEVICE void tma_load_2d(const CUtensorMap* desc, uint64_t* mbar, void* smem, int32_t c0, int32_t c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
          smem_addr(smem)),
      "l"(detail::desc_ptr(desc)), "r"(smem_addr(mbar)), "r"(c0), "r"(c1)
      : "memory");
}

TL_DEVICE void tma_load_3d(const CUtensorMap* desc, uint64_t* mbar, void* smem, int32_t c0, int32_t c1, int32_t c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], "
      "[%2];\n" ::"r"(smem_addr(smem)),
      "l"(detail::desc_ptr(desc)), "r"(smem_addr(mbar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

TL_DEVICE void tma_load_4d(const CUtensorMap* desc, uint64_t* mbar, void* smem, int32_t c0, int32_t c1, int32_t c2,
                           int32_t c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], "
      "[%2];\n" ::"r"(smem_addr(smem)),
      "l"(detail::desc_ptr(desc)), "r"(smem_addr(mbar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

TL_DEVICE void tma_load_5d(const CUtensorMap* desc, uint64_t* mbar, void* smem, int32_t c0, int32_t c1, int32_t c2,
                           int32_t c3, int32_t c4) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6, %7}], "
      "[%2];\n" ::"r"(smem_addr(smem)),
      "l"(detail::desc_ptr(desc)), "r"(smem_addr(mbar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
      : "memory");
}

// ---- multicast loads: the box lands at the same smem offset in every CTA of
// the cluster whose bit is set in cta_mask, and signals the mbarrier at the
// same offset in each of them ----
TL_DEVICE void tma_load_multicast_1d(const CUtensorMap* desc, uint64_t* mbar, void* smem, uint16_t cta_mask,
                                     int32_t c0) {
  asm volatile(
      "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, "
      "{%4}], [%2], %3;\n" ::"r"(smem_addr(smem)),
      "l"(detail::desc_ptr(desc)), "r"(smem_addr(mbar)), "h"(cta_mask), "r"(c0)
      : "memory");
}

TL_DEVICE void tma_load_multicast_2d(const CUtensorMap* desc, uint64_t* mbar, void* smem, uint16_t cta_mask,
                                     int32_t c0, int32_t c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, "
      "{%4, %5}], [%2], %3;\n" ::"r"(smem_addr(smem)),
      "l"(detail::desc_ptr(desc)), "r"(smem_addr(mbar)), "h"(cta_mask), "r"(c0), "r"(c1)
      : "memory");
}

TL_DEVICE void tma_load_multicast_3d(const CUtensorMap* desc, uint64_t* mbar, void* smem, uint16_t cta_mask,
                                     int32_t c0, int32_t c1, int32_t c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, "
      "{%4, %5, %6}], [%2], %3;\n" ::"r"(smem_addr(smem)),
      "l"(detail::desc_ptr(desc)), "r"(smem_addr(mbar)), "h"(cta_mask), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

TL_DEVICE void tma_load_multicast_4d(const CUtensorMap* desc, uint64_t* mbar, void* smem, uint16_t cta_mask,
                                     int32_t c0, int32_t c1, int32_t c2, int32_t c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, "
      "{%4, %5, %6, %7}], [%2], %3;\n" ::"r"(smem_addr(smem)),
      "l"(detail::desc_ptr(desc)), "r"(smem_addr(mbar)), "h"(cta_mask), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

TL_DEVICE void tma_load_multicast_5d(const CUtensorMap* desc, uint64_t* mbar, void* smem, uint16_t cta_mask,
                                     int32_t c0, int32_t c1, int32_t c2, int32_t c3, int32_t c4) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, "
      "{%4, %5, %6, %7, %8}], [%2], %3;\n" ::"r"(smem_addr(smem)),
      "l"(detail::desc_ptr(desc)), "r"(smem_addr(mbar)), "h"(cta_mask), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
      : "memory");
}

// ---- stores (shared -> global) and element-wise reduce-add stores ----
#define TL_DEFINE_TMA_STORE(NAME, OPSTR, SUFFIX)                                                                          \
  TL_DEVICE void NAME##_1d(const CUtensorMap* desc, const void* smem, int32_t c0) {                               \
    asm volatile(OPSTR ".1d.global.shared::cta" SUFFIX " [%0, {%2}], [%1];\n" ::"l"(detail::desc_ptr(desc)),     \
                 "r"(smem_addr(smem)), "r"(c0)                                                                   \
                 : "memory");                                                                                     \
  }                                                                                                               \
  TL_DEVICE void NAME##_2d(const CUtensorMap* desc, const void* smem, int32_t c0, int32_t c1) {                   \
    asm volatile(OPSTR ".2d.global.shared::cta" SUFFIX " [%0, {%2, %3}], [%1];\n" ::"l"(detail::desc_ptr(desc)), \
                 "r"(smem_addr(smem)), "r"(c0), "r"(c1)                                                          \
                 : "memory");                                                                                     \
  }                                                                                                               \
  TL_DEVICE void NAME##_3d(const CUtensorMap* desc, const void* smem, int32_t c0, int32_t c1, int32_t c2) {       \
    asm volatile(OPSTR ".3d.global.shared::cta" SUFFIX " [%0, {%2, %3, %4}], [%1];\n" ::"l"(                     \
                     detail::desc_ptr(desc)),                                                                     \
                 "r"(smem_addr(smem)), "r"(c0), "r"(c1), "r"(c2)                                                 \
                 : "memory");                                                                                     \
  }                                                                                                               \
  TL_DEVICE void NAME##_4d(const CUtensorMap* desc, const void* smem, int32_t c0, int32_t c1, int32_t c2,         \
                           int32_t c3) {                                                                          \
    asm volatile(OPSTR ".4d.global.shared::cta" SUFFIX " [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(                 \
                     detail::desc_ptr(desc)),                                                                     \
                 "r"(smem_addr(smem)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)                                        \
                 : "memory");                                                                                     \
  }                                                                                                               \
  TL_DEVICE void NAME##_5d(const CUtensorMap* desc, const void* smem, int32_t c0, int32_t c1, int32_t c2,         \
                           int32_t c3, int32_t c4) {                                                              \
    asm volatile(OPSTR ".5d.global.shared::cta" SUFFIX " [%0, {%2, %3, %4, %5, %6}], [%1];\n" ::"l"(             \
                     detail::desc_ptr(desc)),                                                                     \
                 "r"(smem_addr(smem)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)                               \
                 : "memory");                                                                                     \
  }

TL_DEFINE_TMA_STORE(tma_store, "cp.async.bulk.tensor", ".bulk_group")
TL_DEFINE_TMA_STORE(tma_store_add, "cp.reduce.async.bulk.tensor", ".add.tile.bulk_group")
#undef TL_DEFINE_TMA_STORE

// ---- overloads by coordinate count ----
TL_DEVICE void tma_load(const CUtensorMap* d, uint64_t* m, void* s, int32_t c0) { tma_load_1d(d, m, s, c0); }
TL_DEVICE void tma_load(const CUtensorMap* d, uint64_t* m, void* s, int32_t c0, int32_t c1) {
  tma_load_2d(d, m, s, c0, c1);
}
TL_DEVICE void tma_load(const CUtensorMap* d, uint64_t* m, void* s, int32_t c0, int32_t c1, int32_t c2) {
  tma_load_3d(d, m, s, c0, c1, c2);
}
TL_DEVICE void tma_load(const CUtensorMap* d, uint64_t* m, void* s, int32_t c0, int32_t c1, int32_t c2, int32_t c3) {
  tma_load_4d(d, m, s, c0, c1, c2, c3);
}
TL_DEVICE void tma_load(const CUtensorMap* d, uint64_t* m, void* s, int32_t c0, int32_t c1, int32_t c2, int32_t c3,
                        int32_t c4) {
  tma_load_5d(d, m, s, c0, c1, c2, c3, c4);
}
TL_DEVICE void tma_store(const CUtensorMap* d, const void* s, int32_t c0) { tma_store_1d(d, s, c0); }
TL_DEVICE void tma_store(const CUtensorMap* d, const void* s, int32_t c0, int32_t c1) { tma_store_2d(d, s, c0, c1); }
TL_DEVICE void tma_store(const CUtensorMap* d, const void* s, int32_t c0, int32_t c1, int32_t c2) {
  tma_store_3d(d, s, c0, c1, c2);
}
TL_DEVICE void tma_store(const CUtensorMap* d, const void* s, int32_t c0, int32_t c1, int32_t c2, int32_t c3) {
  tma_store_4d(d, s, c0, c1, c2, c3);
}
TL_DEVICE void tma_store(const CUtensorMap* d, const void* s, int32_t c0, int32_t c1, int32_t c2, int32_t c3,
                         int32_t c4) {
  tma_store_5d(d, s, c0, c1, c2, c3, c4);
}

// ---- store completion ----
TL_DEVICE void tma_store_arrive() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }

// Wait until at most N committed store groups are still reading shared memory
// (after which the source tiles may be overwritten).
template <int N>
TL_DEVICE void tma_store_wait() {
  static_assert(N >= 0, "tl::tma_store_wait: N must be >= 0");
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

// Wait until at most N committed store groups are incomplete, i.e. their
// writes to global memory are done (stronger than tma_store_wait).
template <int N>
TL_DEVICE void tma_store_wait_complete() {
  static_assert(N >= 0, "tl::tma_store_wait_complete: N must be >= 0");
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

TL_DEVICE void prefetch_tma_descriptor(const CUtensorMap* desc) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(detail::desc_ptr(desc)) : "memory");
}

// ---- non-tensor bulk copies ----
TL_DEVICE void bulk_copy_g2s(void* smem, const void* gmem, uint32_t bytes, uint64_t* mbar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_addr(smem)),
               "l"(gmem), "r"(bytes), "r"(smem_addr(mbar))
               : "memory");
}

TL_DEVICE void bulk_copy_s2g(void* gmem, const void* smem, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(gmem), "r"(smem_addr(smem)),
               "r"(bytes)
               : "memory");
}

#endif  // TL_SM90_DECLARE

}  // namespace tl
