// tl/mma.h -- warp-level tensor-core MMA (mma.sync.aligned, sm_80+; fp8 below sm_89 via f16).
//
//   tl::mma_sync<AType, BType, CType, M, N, K>(CType* c, const void* a, const void* b)
//
// computes C[16 x 8] += A[16 x K] * B[K x 8] for one warp (all 32 lanes must
// call it).  A is row-major, B is "col" (each lane holds elements of one
// column), exactly as the PTX instruction defines them.  `c` points to the
// lane's accumulator registers (4 values; 2 x uint32_t of packed halves for a
// half_t accumulator), `a` / `b` to the lane's operand registers (see the
// table below and tl/README.md for the lane <-> element mapping).
//
// Supported (AType, BType, CType, M, N, K):
//   half_t     x half_t     -> float   m16n8k16, m16n8k8
//   half_t     x half_t     -> half_t  m16n8k16
//   bfloat16_t x bfloat16_t -> float   m16n8k16, m16n8k8
//   tfloat32_t x tfloat32_t -> float   m16n8k8   (`float` accepted as the tf32 tag;
//                                                 operands are floats, rounded
//                                                 with cvt.rna.tf32.f32 here)
//   {int8_t,uint8_t} x {int8_t,uint8_t} -> int32_t m16n8k32
//   {int4x2_t,uint4x2_t} x {int4x2_t,uint4x2_t} -> int32_t, K = 32 bytes: m16n8k64 .s4 / .u4
//                                                 (two 4-bit elements a byte, low nibble first)
//   {fp8_e4m3_t,fp8_e5m2_t} x {fp8_e4m3_t,fp8_e5m2_t} -> float m16n8k32 (below sm_89: two f16 k16 mmas)
#pragma once

#include "common.h"
#include "subbyte.h"

namespace tl {

// Round a float to TF32 (round to nearest, ties away from zero), returning the
// 32-bit pattern expected by tf32 mma / wgmma operand registers (an f32 bit
// pattern whose low 13 mantissa bits are zero).
TL_DEVICE uint32_t float_to_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

// Primary template: any combination not specialised below is a compile error.
template <class AType, class BType, class CType, int M, int N, int K>
struct MmaSync {
  static_assert(detail::always_false<AType>::value,
                "tl::mma_sync: unsupported (AType, BType, CType, M, N, K) combination; see tl/README.md");
  static TL_DEVICE void run(CType*, const uint32_t*, const uint32_t*) {}
};

// ---- f16 / bf16, m16n8k16, f32 accumulate: a[4], b[2], c[4] ----
template <>
struct MmaSync<half_t, half_t, float, 16, 8, 16> {
  static TL_DEVICE void run(float* c, const uint32_t* a, const uint32_t* b) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

template <>
struct MmaSync<bfloat16_t, bfloat16_t, float, 16, 8, 16> {
  static TL_DEVICE void run(float* c, const uint32_t* a, const uint32_t* b) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

// ---- f16, m16n8k16, f16 accumulate: a[4], b[2], c = 2 x packed half2 ----
template <>
struct MmaSync<half_t, half_t, half_t, 16, 8, 16> {
  static TL_DEVICE void run(half_t* c, const uint32_t* a, const uint32_t* b) {
    uint32_t* cr = reinterpret_cast<uint32_t*>(c);
    asm("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 "
        "{%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};\n"
        : "+r"(cr[0]), "+r"(cr[1])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

// ---- f16 / bf16, m16n8k8, f32 accumulate: a[2], b[1], c[4] ----
template <>
struct MmaSync<half_t, half_t, float, 16, 8, 8> {
  static TL_DEVICE void run(float* c, const uint32_t* a, const uint32_t* b) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(b[0]));
  }
};

template <>
struct MmaSync<bfloat16_t, bfloat16_t, float, 16, 8, 8> {
  static TL_DEVICE void run(float* c, const uint32_t* a, const uint32_t* b) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(b[0]));
  }
};

// ---- tf32, m16n8k8, f32 accumulate: a[4] floats, b[2] floats, c[4] ----
template <>
struct MmaSync<tfloat32_t, tfloat32_t, float, 16, 8, 8> {
  static TL_DEVICE void run(float* c, const uint32_t* a, const uint32_t* b) {
    const float* af = reinterpret_cast<const float*>(a);
    const float* bf = reinterpret_cast<const float*>(b);
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(float_to_tf32(af[0])), "r"(float_to_tf32(af[1])), "r"(float_to_tf32(af[2])),
          "r"(float_to_tf32(af[3])), "r"(float_to_tf32(bf[0])), "r"(float_to_tf32(bf[1])));
  }
};
template <>
struct MmaSync<float, float, float, 16, 8, 8> : MmaSync<tfloat32_t, tfloat32_t, float, 16, 8, 8> {};

// ---- 8-bit integer, m16n8k32, s32 accumulate: a[4], b[2], c[4] ----
#define TL_DEFINE_MMA_I8(AT, BT, ASTR, BSTR)                                                    \
  template <>                                                                                   \
  struct MmaSync<AT, BT, int32_t, 16, 8, 32> {                                                  \
    static TL_DEVICE void run(int32_t* c, const uint32_t* a, const uint32_t* b) {               \
      asm("mma.sync.aligned.m16n8k32.row.col.s32." ASTR "." BSTR ".s32 "                         \
          "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"                   \
          : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])                                      \
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));                  \
    }                                                                                           \
  };
TL_DEFINE_MMA_I8(int8_t, int8_t, "s8", "s8")
TL_DEFINE_MMA_I8(int8_t, uint8_t, "s8", "u8")
TL_DEFINE_MMA_I8(uint8_t, int8_t, "u8", "s8")
TL_DEFINE_MMA_I8(uint8_t, uint8_t, "u8", "u8")
#undef TL_DEFINE_MMA_I8

// ---- 4-bit integer, m16n8k64 (K counted as 32 bytes), s32 accumulate: a[4], b[2], c[4] ----
#define TL_DEFINE_MMA_I4(AT, BT, ASTR, BSTR)                                                    \
  template <>                                                                                   \
  struct MmaSync<AT, BT, int32_t, 16, 8, 32> {                                                  \
    static TL_DEVICE void run(int32_t* c, const uint32_t* a, const uint32_t* b) {               \
      asm("mma.sync.aligned.m16n8k64.row.col.s32." ASTR "." BSTR ".s32 "                         \
          "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"                   \
          : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])                                      \
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));                  \
    }                                                                                           \
  };
TL_DEFINE_MMA_I4(int4x2_t, int4x2_t, "s4", "s4")
TL_DEFINE_MMA_I4(int4x2_t, uint4x2_t, "s4", "u4")
TL_DEFINE_MMA_I4(uint4x2_t, int4x2_t, "u4", "s4")
TL_DEFINE_MMA_I4(uint4x2_t, uint4x2_t, "u4", "u4")
#undef TL_DEFINE_MMA_I4

// ---- fp8, m16n8k32, f32 accumulate: a[4], b[2], c[4] ----
// sm_89+: the fp8 mma instruction.  Below sm_89 there is none: each operand register
// (4 consecutive k values of one row / column) becomes two f16x2 registers -- exact,
// every e4m3 / e5m2 value is an f16 value -- and the k32 step runs as two m16n8k16
// f16 mmas (f16 products are exact in the fp32 accumulation).  The f16 mma reads
// k = 2t, 2t+1 from its first register and 2t+8, 2t+9 from its second; feeding it the
// halves holding k = 4t, 4t+1 and 4t+2, 4t+3 permutes k the same way for A and B, so
// every product pairs the right elements and the sum is the k32 dot product.
#if TL_HAS_FP8
namespace detail {
// Two fp8 values (the low 16 bits of `x`, element 0 lowest) as an f16x2 register.
template <class F8>
TL_DEVICE uint32_t fp8x2_to_half2(uint32_t x) {
  const uint32_t spread = (x & 0xffu) | ((x & 0xff00u) << 8);  // one byte per 16-bit lane
  if constexpr (is_e5m2_v<F8>) {
    return spread << 8;  // e5m2 is the top byte of an f16
  } else {
    // e4m3 bits shifted into f16 position read as value * 2^-8 (normal and subnormal);
    // the exact scale by 2^8 restores the value. 0x7f / 0xff are NaN.
    const uint32_t mag = (spread & 0x007f007fu) << 7, sign = (spread & 0x00800080u) << 8;
    const __half2 v = __hmul2(bit_cast<__half2>(mag | sign), __half2(__float2half(256.0f), __float2half(256.0f)));
    const uint32_t nan = __vcmpeq2(mag, 0x3f803f80u);
    return (bit_cast<uint32_t>(v) & ~nan) | (0x7fff7fffu & nan);
  }
}

template <class AT, class BT>
TL_DEVICE void mma_fp8_as_f16(float* c, const uint32_t* a, const uint32_t* b) {
  uint32_t ha[4], hb[2];
#pragma unroll
  for (int s = 0; s < 2; ++s) {  // k 0-15 from a[0], a[1], b[0]; k 16-31 from a[2], a[3], b[1]
    ha[0] = fp8x2_to_half2<AT>(a[2 * s] & 0xffffu);
    ha[1] = fp8x2_to_half2<AT>(a[2 * s + 1] & 0xffffu);
    ha[2] = fp8x2_to_half2<AT>(a[2 * s] >> 16);
    ha[3] = fp8x2_to_half2<AT>(a[2 * s + 1] >> 16);
    hb[0] = fp8x2_to_half2<BT>(b[s] & 0xffffu);
    hb[1] = fp8x2_to_half2<BT>(b[s] >> 16);
    MmaSync<half_t, half_t, float, 16, 8, 16>::run(c, ha, hb);
  }
}
}  // namespace detail

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
#define TL_MMA_FP8_BODY(AT, BT, ASTR, BSTR)                                            \
  asm("mma.sync.aligned.m16n8k32.row.col.f32." ASTR "." BSTR ".f32 "                   \
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"              \
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                                 \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
#define TL_MMA_FP8_BODY(AT, BT, ASTR, BSTR) detail::mma_fp8_as_f16<AT, BT>(c, a, b);
#endif
#define TL_DEFINE_MMA_FP8(AT, BT, ASTR, BSTR)                                       \
  template <>                                                                       \
  struct MmaSync<AT, BT, float, 16, 8, 32> {                                        \
    static TL_DEVICE void run(float* c, const uint32_t* a, const uint32_t* b) {     \
      TL_MMA_FP8_BODY(AT, BT, ASTR, BSTR)                                           \
    }                                                                               \
  };
TL_DEFINE_MMA_FP8(fp8_e4m3_t, fp8_e4m3_t, "e4m3", "e4m3")
TL_DEFINE_MMA_FP8(fp8_e4m3_t, fp8_e5m2_t, "e4m3", "e5m2")
TL_DEFINE_MMA_FP8(fp8_e5m2_t, fp8_e4m3_t, "e5m2", "e4m3")
TL_DEFINE_MMA_FP8(fp8_e5m2_t, fp8_e5m2_t, "e5m2", "e5m2")
#undef TL_DEFINE_MMA_FP8
#undef TL_MMA_FP8_BODY
#endif  // TL_HAS_FP8

// Public entry point.  `c`: the lane's accumulator fragment; `a`, `b`: the
// lane's operand fragments (any pointer to the registers: uint32_t*, half_t*,
// float* for tf32, ...).  All 32 lanes of the warp must execute it together.
template <class AType, class BType, class CType, int M, int N, int K>
TL_DEVICE void mma_sync(CType* c, const void* a, const void* b) {
  MmaSync<AType, BType, CType, M, N, K>::run(c, static_cast<const uint32_t*>(a), static_cast<const uint32_t*>(b));
}

}  // namespace tl
