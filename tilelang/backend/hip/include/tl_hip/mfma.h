// tl_hip/mfma.h -- one MFMA 16x16 instruction per call, on a lane's registers.
//
//   mfma_<name>(acc, src0, src1): acc[0..3] = src0-matrix x src1-matrix + acc for the wave,
//   with the lane layouts of AMD's matrix instructions (tilelang/layout/mfma.py): src0 and
//   src1 hold P = K/4 elements of each operand per lane, acc 4 of the 16x16 result.
//   f32_16x16x16f16       v_mfma_f32_16x16x16f16 (gfx940: v_mfma_f32_16x16x16_f16)
//   f32_16x16x16bf16_1k   v_mfma_f32_16x16x16bf16_1k (gfx940: _16x16x16_bf16)
//   f32_16x16x4f32        v_mfma_f32_16x16x4f32 (gfx940: _16x16x4_f32)
//   i32_16x16x16i8        v_mfma_i32_16x16x16i8 (gfx90a)
//   i32_16x16x32_i8       v_mfma_i32_16x16x32_i8 (gfx940 / gfx942)
// The operands are built element by element into clang ext-vector values: after inlining
// with constant register indices they stay in VGPRs (no scratch).
#pragma once

#include "common.h"

namespace tl {

namespace detail {
typedef float floatx4 __attribute__((ext_vector_type(4)));
typedef int intx4 __attribute__((ext_vector_type(4)));
typedef _Float16 halfx4 __attribute__((ext_vector_type(4)));
typedef short shortx4 __attribute__((ext_vector_type(4)));

template <class V, class T>
TL_DEVICE V load4(const T* p) {
  V v;
  v[0] = p[0];
  v[1] = p[1];
  v[2] = p[2];
  v[3] = p[3];
  return v;
}
template <class V, class T>
TL_DEVICE void store4(T* p, V v) {
  p[0] = v[0];
  p[1] = v[1];
  p[2] = v[2];
  p[3] = v[3];
}
}  // namespace detail

TL_DEVICE void mfma_f32_16x16x16f16(float* acc, const half_t* a, const half_t* b) {
  using namespace detail;
  floatx4 c = load4<floatx4>(acc);
  c = __builtin_amdgcn_mfma_f32_16x16x16f16(load4<halfx4>(a), load4<halfx4>(b), c, 0, 0, 0);
  store4(acc, c);
}

TL_DEVICE void mfma_f32_16x16x16bf16_1k(float* acc, const bfloat16_t* a, const bfloat16_t* b) {
  using namespace detail;
  shortx4 va, vb;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    va[i] = static_cast<short>(a[i].bits);
    vb[i] = static_cast<short>(b[i].bits);
  }
  floatx4 c = load4<floatx4>(acc);
  c = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(va, vb, c, 0, 0, 0);
  store4(acc, c);
}

TL_DEVICE void mfma_f32_16x16x4f32(float* acc, const float* a, const float* b) {
  using namespace detail;
  floatx4 c = load4<floatx4>(acc);
  c = __builtin_amdgcn_mfma_f32_16x16x4f32(a[0], b[0], c, 0, 0, 0);
  store4(acc, c);
}

#if defined(__gfx90a__)
TL_DEVICE void mfma_i32_16x16x16i8(int* acc, const int8_t* a, const int8_t* b) {
  using namespace detail;
  int va, vb;
  __builtin_memcpy(&va, a, 4);
  __builtin_memcpy(&vb, b, 4);
  intx4 c = load4<intx4>(acc);
  c = __builtin_amdgcn_mfma_i32_16x16x16i8(va, vb, c, 0, 0, 0);
  store4(acc, c);
}
#endif

#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
TL_DEVICE void mfma_i32_16x16x32_i8(int* acc, const int8_t* a, const int8_t* b) {
  using namespace detail;
  long va, vb;
  __builtin_memcpy(&va, a, 8);
  __builtin_memcpy(&vb, b, 8);
  intx4 c = load4<intx4>(acc);
  c = __builtin_amdgcn_mfma_i32_16x16x32_i8(va, vb, c, 0, 0, 0);
  store4(acc, c);
}
#endif

}  // namespace tl
