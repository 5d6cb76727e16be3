/*
 * tl_philox.h — the Philox4x32-10 counter-based generator behind T.rng_init /
 * T.rng_rand / T.rng_rand_float on the C backend.
 *
 * tilelang/backend/cuda/include/tl/philox.h is the CUDA twin; both compute the
 * same bits from the same (seed, subsequence, position), with only integer
 * arithmetic and IEEE-754 double operations (+ - * / sqrt, no fused
 * multiply-add: the C backend compiles with -ffp-contract=off, the CUDA header
 * spells every operation as a round-to-nearest intrinsic).
 *
 * Stream layout (the one cuRAND's curandStatePhilox4_32_10_t uses): key =
 * (seed low 32 bits, seed high 32 bits); draw number `pos` of subsequence
 * `seq` is word (pos & 3) of Philox4x32-10(counter, key) with counter =
 * (pos >> 2 low, pos >> 2 high, seq low, seq high).
 */
#ifndef TL_PHILOX_H
#define TL_PHILOX_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define TL_PHILOX_FN static inline __attribute__((unused))

/* The four output words of Philox4x32-10 for counter c[0..3], key k[0..1]. */
TL_PHILOX_FN void tl_philox4x32_10(const uint32_t c_in[4], const uint32_t k_in[2], uint32_t out[4]) {
    uint32_t c0 = c_in[0], c1 = c_in[1], c2 = c_in[2], c3 = c_in[3];
    uint32_t k0 = k_in[0], k1 = k_in[1];
    for (int r = 0; r < 10; ++r) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0;
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0;
        c1 = (uint32_t)p1;
        c2 = n2;
        c3 = (uint32_t)p0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* Draw `pos` of subsequence `seq` for `seed`. */
TL_PHILOX_FN uint32_t tl_philox_u32(uint64_t seed, uint64_t seq, uint64_t pos) {
    uint64_t blk = pos >> 2;
    uint32_t c[4] = {(uint32_t)blk, (uint32_t)(blk >> 32), (uint32_t)seq, (uint32_t)(seq >> 32)};
    uint32_t k[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t o[4];
    tl_philox4x32_10(c, k, o);
    return o[pos & 3];
}

/* uniform float in (0, 1]: x * 2^-32 + 2^-33 (both steps exact but the last,
 * rounded to nearest even), as cuRAND's curand_uniform */
TL_PHILOX_FN float tl__philox_unit_f32(uint32_t x) {
    return (float)x * 2.3283064365386963e-10f + 1.1641532182693481e-10f;
}

/* uniform double in (0, 1] from 53 bits of two draws: z * 2^-53 + 2^-54 with
 * z = x ^ (y << 21), as cuRAND's curand_uniform_double */
TL_PHILOX_FN double tl__philox_unit_f64(uint32_t x, uint32_t y) {
    uint64_t z = (uint64_t)x ^ ((uint64_t)y << 21);
    return (double)z * 1.1102230246251565e-16 + 5.551115123125783e-17;
}

TL_PHILOX_FN float tl_philox_uniform_f32(uint64_t seed, uint64_t seq, uint64_t pos) {
    return tl__philox_unit_f32(tl_philox_u32(seed, seq, pos));
}

TL_PHILOX_FN double tl_philox_uniform_f64(uint64_t seed, uint64_t seq, uint64_t pos) {
    return tl__philox_unit_f64(tl_philox_u32(seed, seq, pos), tl_philox_u32(seed, seq, pos + 1));
}

/* log(u) for u in (0, 1]: u = m * 2^e with m in [sqrt(1/2), sqrt(2)); log m =
 * 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.1716, odd series to s^27. */
TL_PHILOX_FN double tl__philox_log(double u) {
    uint64_t b;
    memcpy(&b, &u, 8);
    int e = (int)((b >> 52) & 0x7FF) - 1023; /* u >= 2^-54: never subnormal */
    b = (b & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull; /* m in [1, 2) */
    double m;
    memcpy(&m, &b, 8);
    if (m > 1.4142135623730951) {
        m = m * 0.5;
        e += 1;
    }
    double s = (m - 1.0) / (m + 1.0);
    double s2 = s * s;
    double p = 1.0 / 27.0;
    for (int k = 25; k >= 1; k -= 2) p = p * s2 + 1.0 / (double)k;
    double lm = 2.0 * s * p;
    return (double)e * 0.6931471805599453 + lm;
}

/* cos(2 pi v) for v in (0, 1]: quadrant from 4v (exact), the rest folded
 * into [0, pi/4] and evaluated by Taylor series to x^20 / x^21. */
TL_PHILOX_FN double tl__philox_cos2pi(double v) {
    double t = v * 4.0;
    double q = floor(t);
    double r = t - q; /* exact */
    int quad = (int)q & 3;
    int swap = r > 0.5;
    if (swap) r = 1.0 - r; /* exact */
    double x = r * 1.5707963267948966;
    double x2 = x * x;
    double c = 1.0, s = 1.0;
    for (int k = 20; k >= 2; k -= 2) c = 1.0 - c * x2 / (double)(k * (k - 1));
    for (int k = 21; k >= 3; k -= 2) s = 1.0 - s * x2 / (double)(k * (k - 1));
    s = s * x;
    /* cos(pi/2 * (quad + r0)) with r0 the unfolded remainder */
    double cr = swap ? s : c; /* cos(pi/2 r0) */
    double sr = swap ? c : s; /* sin(pi/2 r0) */
    switch (quad) {
    case 0: return cr;
    case 1: return -sr;
    case 2: return -cr;
    default: return sr;
    }
}

/* standard normal by Box-Muller from two uniforms (first output only) */
TL_PHILOX_FN double tl__philox_box_muller(double u1, double u2) {
    return sqrt(-2.0 * tl__philox_log(u1)) * tl__philox_cos2pi(u2);
}

TL_PHILOX_FN float tl_philox_normal_f32(uint64_t seed, uint64_t seq, uint64_t pos) {
    double u1 = (double)tl__philox_unit_f32(tl_philox_u32(seed, seq, pos));
    double u2 = (double)tl__philox_unit_f32(tl_philox_u32(seed, seq, pos + 1));
    return (float)tl__philox_box_muller(u1, u2);
}

TL_PHILOX_FN double tl_philox_normal_f64(uint64_t seed, uint64_t seq, uint64_t pos) {
    double u1 = tl__philox_unit_f64(tl_philox_u32(seed, seq, pos), tl_philox_u32(seed, seq, pos + 1));
    double u2 = tl__philox_unit_f64(tl_philox_u32(seed, seq, pos + 2), tl_philox_u32(seed, seq, pos + 3));
    return tl__philox_box_muller(u1, u2);
}

#endif /* TL_PHILOX_H */
