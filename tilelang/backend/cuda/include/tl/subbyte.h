// tl/subbyte.h -- packed 4-bit types (int4, uint4, float4_e2m1fn) in generated kernels.
//
// Storage: two elements per byte, element 2i in the low nibble (bits 0-3) and 2i+1 in the
// high nibble, counted over a buffer's (flattened) element offset -- the order of PTX's
// packed .s4 / .u4 / .e2m1 registers. In expressions int4 / uint4 are carried as int and
// float4_e2m1fn as float.
//
// Stores: a nibble store must not lose the other nibble of its byte, which another thread
// may be writing at the same time in shared or global memory: st_nib_atomic updates the
// byte with 32-bit atomicAnd / atomicOr on its word (the two operations of two writers of
// different nibbles commute). st_nib (plain read-modify-write) is for registers, which
// only their thread writes.
//
// float -> e2m1 rounds to nearest, ties to even, saturating: |x| > 6 and +-inf give +-6,
// NaN gives +6, a result rounded to zero keeps its sign -- as __nv_cvt_float_to_fp4(x,
// __NV_E2M1, cudaRoundNearest) (cuda_fp4.h) and cvt.rn.satfinite.e2m1x2.f32, on every
// architecture (the PTX instruction needs sm_100a; this is the same rule in integer code).
#pragma once
#include "common.h"

namespace tl {

// Packed pairs of 4-bit integers (element 2i in the low nibble): the element type of int4 /
// uint4 tensor-core operand tiles and of byte copies of packed tiles, counted in bytes. The
// byte layout of an m16n8k64 .s4 operand fragment is that of the m16n8k32 .s8 one, so the
// gemm templates (mma.h, gemm.h) address these tiles exactly as 8-bit tiles of K/2 bytes.
struct int4x2_t {
  uint8_t bits;
};
struct uint4x2_t {
  uint8_t bits;
};

TL_DEVICE int ld_nib(const uint8_t* p, int64_t i) { return (p[i >> 1] >> ((i & 1) << 2)) & 15; }
TL_DEVICE int ld_u4(const uint8_t* p, int64_t i) { return ld_nib(p, i); }
TL_DEVICE int ld_i4(const uint8_t* p, int64_t i) { return (ld_nib(p, i) ^ 8) - 8; }

TL_DEVICE void st_nib(uint8_t* p, int64_t i, int code) {
  const int s = (int)((i & 1) << 2);
  p[i >> 1] = (uint8_t)((p[i >> 1] & ~(15 << s)) | ((code & 15) << s));
}

// elements i (even) and i + 1 at once: the whole byte, which the storing thread owns alone
TL_DEVICE void st_nib_pair(uint8_t* p, int64_t i, int lo, int hi) {
  p[i >> 1] = (uint8_t)((lo & 15) | ((hi & 15) << 4));
}

TL_DEVICE void st_nib_atomic(uint8_t* p, int64_t i, int code) {
  uint8_t* byte = p + (i >> 1);
  const uintptr_t addr = reinterpret_cast<uintptr_t>(byte);
  unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~(uintptr_t)3);
  const int s = (int)((addr & 3) * 8 + ((i & 1) << 2));
  atomicAnd(word, ~(15u << s));
  atomicOr(word, (unsigned int)(code & 15) << s);
}

TL_HOST_DEVICE int wrap_i4(long long x) { return (int)((x & 15) ^ 8) - 8; }
TL_HOST_DEVICE int wrap_u4(long long x) { return (int)(x & 15); }

// float4_e2m1fn code -> float: magnitudes 0, 0.5, 1, 1.5 (m * 0.5) and 2, 3, 4, 6
// (exponent field e = m >> 1, mantissa m & 1: (1 + (m & 1) / 2) * 2^(e - 1)); bit 3 is the sign
TL_DEVICE float e2m1_to_f32(int code) {
  const unsigned int m = (unsigned int)code & 7u;
  const float mag = m < 2 ? 0.5f * (float)m : __uint_as_float((m << 22) + (126u << 23));
  return __uint_as_float(__float_as_uint(mag) | (((unsigned int)code & 8u) << 28));
}

TL_DEVICE int f64_to_e2m1(double x) {
  if (x != x) return 7;  // NaN: +6
  const int s = signbit(x) ? 8 : 0;
  const double a = fabs(x);
  // midpoints between neighbouring values; a tie goes to the even code
  const int c = (a > 0.25) + (a >= 0.75) + (a > 1.25) + (a >= 1.75) + (a > 2.5) + (a >= 3.5) + (a > 5.0);
  return s | c;
}

TL_DEVICE int f32_to_e2m1(float x) {
  if (x != x) return 7;
  const int s = signbit(x) ? 8 : 0;
  const float a = fabsf(x);  // the midpoints are exact in float
  const int c = (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) + (a > 5.0f);
  return s | c;
}

TL_DEVICE float round_e2m1(float x) { return e2m1_to_f32(f32_to_e2m1(x)); }
TL_DEVICE float round_e2m1_f64(double x) { return e2m1_to_f32(f64_to_e2m1(x)); }

}  // namespace tl
