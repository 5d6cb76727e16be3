// tl/copy.h -- vectorised 4 / 8 / 16-byte loads and stores.
//
// The vector type for N bytes is tl::vec_t<N>:  16 -> uint4, 8 -> uint2,
// 4 -> uint32_t, 2 -> uint16_t, 1 -> uint8_t.  Pointers must be aligned to N.
// The functions are written as plain C++ accesses through the vector type,
// so the compiler emits a single ld/st.{global,shared}.v4/.v2 instruction and
// keeps full knowledge of the memory access (no inline asm).
//
//   ld_global_128/64/32(p)                 -> uint4 / uint2 / uint32_t
//   ld_global_128/64/32_pred(p, pred)      -> value, or zero when !pred (p not read)
//   st_global_128/64/32(p, v)
//   st_global_128/64/32_pred(p, v, pred)   store only when pred
//   ld_shared_* / st_shared_*              same for shared memory
//   ld_global_nc_128/64/32(p)              read-only (non-coherent) path, ld.global.nc
//   ld<Bytes>(p) / ld_pred<Bytes>(p, pred) / st<Bytes>(p, v) / st_pred<Bytes>(p, v, pred)
//                                          generic-pointer templated forms
//   copy_vec<Bytes>(dst, src)              *dst = *src as one Bytes-wide access each
//   copy_vec_pred<Bytes>(dst, src, pred)   dst gets src when pred, zeros otherwise
#pragma once

#include "common.h"

namespace tl {

namespace detail {
template <int Bytes>
struct VecType;
template <>
struct VecType<16> {
  using type = uint4;
};
template <>
struct VecType<8> {
  using type = uint2;
};
template <>
struct VecType<4> {
  using type = uint32_t;
};
template <>
struct VecType<2> {
  using type = uint16_t;
};
template <>
struct VecType<1> {
  using type = uint8_t;
};

template <class V>
TL_DEVICE V zero_vec() {
  V v;
  memset(&v, 0, sizeof(V));
  return v;
}
}  // namespace detail

template <int Bytes>
using vec_t = typename detail::VecType<Bytes>::type;

// ---- generic-pointer templated forms ----
template <int Bytes>
TL_DEVICE vec_t<Bytes> ld(const void* p) {
  return *static_cast<const vec_t<Bytes>*>(p);
}

template <int Bytes>
TL_DEVICE vec_t<Bytes> ld_pred(const void* p, bool pred) {
  vec_t<Bytes> v = detail::zero_vec<vec_t<Bytes>>();
  if (pred) {
    v = *static_cast<const vec_t<Bytes>*>(p);
  }
  return v;
}

template <int Bytes>
TL_DEVICE void st(void* p, const vec_t<Bytes>& v) {
  *static_cast<vec_t<Bytes>*>(p) = v;
}

template <int Bytes>
TL_DEVICE void st_pred(void* p, const vec_t<Bytes>& v, bool pred) {
  if (pred) {
    *static_cast<vec_t<Bytes>*>(p) = v;
  }
}

template <int Bytes>
TL_DEVICE void copy_vec(void* dst, const void* src) {
  *static_cast<vec_t<Bytes>*>(dst) = *static_cast<const vec_t<Bytes>*>(src);
}

template <int Bytes>
TL_DEVICE void copy_vec_pred(void* dst, const void* src, bool pred) {
  *static_cast<vec_t<Bytes>*>(dst) = ld_pred<Bytes>(src, pred);
}

// ---- named global / shared forms (the state space is a documentation aid:
// generic pointers into the named space are expected) ----
#define TL_DEFINE_VEC_ACCESS(SPACE, BITS, BYTES)                                                                    \
  TL_DEVICE vec_t<BYTES> ld_##SPACE##_##BITS(const void* p) { return ld<BYTES>(p); }                               \
  TL_DEVICE vec_t<BYTES> ld_##SPACE##_##BITS##_pred(const void* p, bool pred) { return ld_pred<BYTES>(p, pred); }   \
  TL_DEVICE void st_##SPACE##_##BITS(void* p, const vec_t<BYTES>& v) { st<BYTES>(p, v); }                          \
  TL_DEVICE void st_##SPACE##_##BITS##_pred(void* p, const vec_t<BYTES>& v, bool pred) { st_pred<BYTES>(p, v, pred); }

TL_DEFINE_VEC_ACCESS(global, 128, 16)
TL_DEFINE_VEC_ACCESS(global, 64, 8)
TL_DEFINE_VEC_ACCESS(global, 32, 4)
TL_DEFINE_VEC_ACCESS(shared, 128, 16)
TL_DEFINE_VEC_ACCESS(shared, 64, 8)
TL_DEFINE_VEC_ACCESS(shared, 32, 4)
#undef TL_DEFINE_VEC_ACCESS

// Read-only data path (ld.global.nc): only for data not written during the kernel.
TL_DEVICE uint4 ld_global_nc_128(const void* p) { return __ldg(static_cast<const uint4*>(p)); }
TL_DEVICE uint2 ld_global_nc_64(const void* p) { return __ldg(static_cast<const uint2*>(p)); }
TL_DEVICE uint32_t ld_global_nc_32(const void* p) { return __ldg(static_cast<const unsigned int*>(p)); }

}  // namespace tl
