/*
 * tl_subbyte.h — packed 4-bit types (int4, uint4, float4_e2m1fn) for the C backend.
 *
 * Storage: two elements per byte, element 2i in the low nibble (bits 0-3) and 2i+1 in the
 * high nibble, counted over a buffer's row-major element offset (docs/subbyte.md).
 * In expressions int4 / uint4 are carried as int32_t and float4_e2m1fn as float (like
 * float16 in tl_cpu.h); `tl_round_e2m1` rounds a float to the e2m1 value set.
 *
 * float -> e2m1 rounds to nearest, ties to even, saturating: |x| > 6 (and +-inf) give +-6,
 * NaN gives +6, and the sign of a result that rounds to zero is kept — the behaviour of
 * CUDA's __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest) / cvt.rn.satfinite.e2m1x2.f32.
 */
#ifndef TL_SUBBYTE_H
#define TL_SUBBYTE_H

/* the 4-bit code of element i of a packed array */
TL_INLINE int32_t tl_ld_nib(const uint8_t *p, int64_t i) { return (p[i >> 1] >> ((i & 1) << 2)) & 15; }
TL_INLINE int32_t tl_ld_u4(const uint8_t *p, int64_t i) { return tl_ld_nib(p, i); }
TL_INLINE int32_t tl_ld_i4(const uint8_t *p, int64_t i) { return (tl_ld_nib(p, i) ^ 8) - 8; }

/* store a 4-bit code; the neighbouring nibble is kept. Plain read-modify-write: for buffers
   only the running block writes (its statements run in order on one thread) */
TL_INLINE void tl_st_nib(uint8_t *p, int64_t i, int32_t code) {
    const int s = (int)((i & 1) << 2);
    p[i >> 1] = (uint8_t)((p[i >> 1] & ~(15 << s)) | ((code & 15) << s));
}
/* the same for buffers other blocks may write at the same time (global memory): the byte is
   updated atomically, so a neighbour's nibble written by another OpenMP thread is never lost */
TL_INLINE void tl_st_nib_atomic(uint8_t *p, int64_t i, int32_t code) {
    const int s = (int)((i & 1) << 2);
    uint8_t *b = p + (i >> 1);
    uint8_t old = __atomic_load_n(b, __ATOMIC_RELAXED), want;
    do {
        want = (uint8_t)((old & ~(15 << s)) | ((code & 15) << s));
    } while (!__atomic_compare_exchange_n(b, &old, want, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

/* wrap an integer to 4 bits (C's conversion to a narrower integer type) */
TL_INLINE int32_t tl_wrap_i4(int64_t x) { return (int32_t)((x & 15) ^ 8) - 8; }
TL_INLINE int32_t tl_wrap_u4(int64_t x) { return (int32_t)(x & 15); }

/* float4_e2m1fn: code = sign(bit 3) | magnitude index (0, 0.5, 1, 1.5, 2, 3, 4, 6) */
TL_INLINE float tl_e2m1_to_f32(int32_t code) {
    static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    const float m = mag[code & 7];
    return (code & 8) ? -m : m;
}
TL_INLINE int32_t tl_f64_to_e2m1(double x) {
    if (x != x) return 7; /* NaN: +6 */
    const int32_t s = signbit(x) ? 8 : 0;
    const double a = fabs(x);
    /* midpoints between neighbours; a tie goes to the even code */
    int32_t c;
    if (a <= 0.25) c = 0;
    else if (a < 0.75) c = 1;
    else if (a <= 1.25) c = 2;
    else if (a < 1.75) c = 3;
    else if (a <= 2.5) c = 4;
    else if (a < 3.5) c = 5;
    else if (a <= 5.0) c = 6;
    else c = 7; /* saturate */
    return s | c;
}
TL_INLINE int32_t tl_f32_to_e2m1(float x) { return tl_f64_to_e2m1((double)x); }
TL_INLINE float tl_round_e2m1(float x) { return tl_e2m1_to_f32(tl_f32_to_e2m1(x)); }
TL_INLINE float tl_round_e2m1_f64(double x) { return tl_e2m1_to_f32(tl_f64_to_e2m1(x)); }

#endif /* TL_SUBBYTE_H */
