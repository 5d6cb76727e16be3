// tl_hip/copy.h -- vector copies between global memory, LDS and registers.
//
// copy_vec<Bytes>(dst, src) / copy_vec_pred<Bytes>(dst, src, pred): one 1..16-byte access per
// side (16 bytes: global_load_dwordx4 / ds_read_b128 and their stores); the predicated form
// writes zeros when `pred` is false.  Both pointers must be aligned to Bytes.
#pragma once

#include "common.h"

namespace tl {

namespace detail {
template <int Bytes>
struct VecType;
template <>
struct VecType<16> {
  using type = uint32_t __attribute__((ext_vector_type(4)));
};
template <>
struct VecType<8> {
  using type = uint32_t __attribute__((ext_vector_type(2)));
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
}  // namespace detail

template <int Bytes>
using vec_t = typename detail::VecType<Bytes>::type;

template <int Bytes>
TL_DEVICE void copy_vec(void* dst, const void* src) {
  *static_cast<vec_t<Bytes>*>(dst) = *static_cast<const vec_t<Bytes>*>(src);
}

template <int Bytes>
TL_DEVICE void copy_vec_pred(void* dst, const void* src, bool pred) {
  vec_t<Bytes> v = vec_t<Bytes>(0);
  if (pred) {
    v = *static_cast<const vec_t<Bytes>*>(src);
  }
  *static_cast<vec_t<Bytes>*>(dst) = v;
}

// Two 32-bit floats converted into two adjacent 16-bit (or wider) elements.
template <class To>
TL_DEVICE void cvt_pair(To* dst, float lo, float hi) {
  dst[0] = cvt<To>(lo);
  dst[1] = cvt<To>(hi);
}

}  // namespace tl
