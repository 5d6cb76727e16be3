// tl/philox.h -- the Philox4x32-10 counter-based generator behind T.rng_init /
// T.rng_rand / T.rng_rand_float.
//
// Twin of the C backend's tl_philox.h: the same bits from the same (seed,
// subsequence, position) on every target.  Only integer arithmetic and IEEE
// double operations are used, each spelled as a round-to-nearest intrinsic in
// device code (never contracted into fma, unaffected by --use_fast_math).
//
// Stream layout (cuRAND's curandStatePhilox4_32_10_t): key = (seed low, seed
// high); draw `pos` of subsequence `seq` is word (pos & 3) of
// Philox4x32-10(counter, key), counter = (pos>>2 low, pos>>2 high, seq low,
// seq high).  Host-callable too (tests run the same code on the CPU).
#pragma once

#include "common.h"

namespace tl {
namespace detail {

#ifdef __CUDA_ARCH__
TL_HOST_DEVICE double px_add(double a, double b) { return __dadd_rn(a, b); }
TL_HOST_DEVICE double px_sub(double a, double b) { return __dsub_rn(a, b); }
TL_HOST_DEVICE double px_mul(double a, double b) { return __dmul_rn(a, b); }
TL_HOST_DEVICE double px_div(double a, double b) { return __ddiv_rn(a, b); }
TL_HOST_DEVICE double px_sqrt(double a) { return __dsqrt_rn(a); }
TL_HOST_DEVICE double px_u64_to_f64(uint64_t z) { return __ull2double_rn(z); }
TL_HOST_DEVICE float px_f64_to_f32(double d) { return __double2float_rn(d); }
TL_HOST_DEVICE float px_unit_f32(uint32_t x) {
  return __fadd_rn(__fmul_rn(__uint2float_rn(x), 2.3283064365386963e-10f), 1.1641532182693481e-10f);
}
TL_HOST_DEVICE uint32_t px_mulhi(uint32_t a, uint32_t b) { return __umulhi(a, b); }
#else
TL_HOST_DEVICE double px_add(double a, double b) { return a + b; }
TL_HOST_DEVICE double px_sub(double a, double b) { return a - b; }
TL_HOST_DEVICE double px_mul(double a, double b) { return a * b; }
TL_HOST_DEVICE double px_div(double a, double b) { return a / b; }
TL_HOST_DEVICE double px_sqrt(double a) { return ::sqrt(a); }
TL_HOST_DEVICE double px_u64_to_f64(uint64_t z) { return (double)z; }
TL_HOST_DEVICE float px_f64_to_f32(double d) { return (float)d; }
TL_HOST_DEVICE float px_unit_f32(uint32_t x) {
  volatile float p = (float)x * 2.3283064365386963e-10f;  // two roundings, never one fma
  return p + 1.1641532182693481e-10f;
}
TL_HOST_DEVICE uint32_t px_mulhi(uint32_t a, uint32_t b) { return (uint32_t)(((uint64_t)a * b) >> 32); }
#endif

// uniform double in (0, 1]: z * 2^-53 + 2^-54, z = x ^ (y << 21) (curand_uniform_double's)
TL_HOST_DEVICE double px_unit_f64(uint32_t x, uint32_t y) {
  uint64_t z = (uint64_t)x ^ ((uint64_t)y << 21);
  return px_add(px_mul(px_u64_to_f64(z), 1.1102230246251565e-16), 5.551115123125783e-17);
}

// log(u), u in (0, 1]: u = m 2^e, m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m-1)/(m+1)
TL_HOST_DEVICE double px_log(double u) {
  uint64_t b;
  memcpy(&b, &u, 8);
  int e = (int)((b >> 52) & 0x7FF) - 1023;  // u >= 2^-54: never subnormal
  b = (b & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull;
  double m;
  memcpy(&m, &b, 8);
  if (m > 1.4142135623730951) {
    m = px_mul(m, 0.5);
    e += 1;
  }
  double s = px_div(px_sub(m, 1.0), px_add(m, 1.0));
  double s2 = px_mul(s, s);
  double p = px_div(1.0, 27.0);
  for (int k = 25; k >= 1; k -= 2) p = px_add(px_mul(p, s2), px_div(1.0, (double)k));
  double lm = px_mul(px_mul(2.0, s), p);
  return px_add(px_mul((double)e, 0.6931471805599453), lm);
}

// cos(2 pi v), v in (0, 1]: quadrant from 4v, remainder folded into [0, pi/4], Taylor series
TL_HOST_DEVICE double px_cos2pi(double v) {
  double t = px_mul(v, 4.0);
  double q = ::floor(t);
  double r = px_sub(t, q);
  int quad = (int)q & 3;
  bool swap = r > 0.5;
  if (swap) r = px_sub(1.0, r);
  double x = px_mul(r, 1.5707963267948966);
  double x2 = px_mul(x, x);
  double c = 1.0, s = 1.0;
  for (int k = 20; k >= 2; k -= 2) c = px_sub(1.0, px_div(px_mul(c, x2), (double)(k * (k - 1))));
  for (int k = 21; k >= 3; k -= 2) s = px_sub(1.0, px_div(px_mul(s, x2), (double)(k * (k - 1))));
  s = px_mul(s, x);
  double cr = swap ? s : c;
  double sr = swap ? c : s;
  switch (quad) {
    case 0: return cr;
    case 1: return -sr;
    case 2: return -cr;
    default: return sr;
  }
}

TL_HOST_DEVICE double px_box_muller(double u1, double u2) {
  return px_mul(px_sqrt(px_mul(-2.0, px_log(u1))), px_cos2pi(u2));
}

}  // namespace detail

// The four output words of Philox4x32-10 for counter c, key k.
TL_HOST_DEVICE void philox4x32_10(const uint32_t c_in[4], const uint32_t k_in[2], uint32_t out[4]) {
  uint32_t c0 = c_in[0], c1 = c_in[1], c2 = c_in[2], c3 = c_in[3];
  uint32_t k0 = k_in[0], k1 = k_in[1];
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    uint32_t hi0 = detail::px_mulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    uint32_t hi1 = detail::px_mulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

// Draw `pos` of subsequence `seq` for `seed`.
TL_HOST_DEVICE uint32_t philox_u32(uint64_t seed, uint64_t seq, uint64_t pos) {
  uint64_t blk = pos >> 2;
  uint32_t c[4] = {(uint32_t)blk, (uint32_t)(blk >> 32), (uint32_t)seq, (uint32_t)(seq >> 32)};
  uint32_t k[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  uint32_t o[4];
  philox4x32_10(c, k, o);
  uint32_t lane = (uint32_t)(pos & 3);
  return lane == 0 ? o[0] : lane == 1 ? o[1] : lane == 2 ? o[2] : o[3];  // no local-memory indexing
}

TL_HOST_DEVICE float philox_uniform_f32(uint64_t seed, uint64_t seq, uint64_t pos) {
  return detail::px_unit_f32(philox_u32(seed, seq, pos));
}

TL_HOST_DEVICE double philox_uniform_f64(uint64_t seed, uint64_t seq, uint64_t pos) {
  return detail::px_unit_f64(philox_u32(seed, seq, pos), philox_u32(seed, seq, pos + 1));
}

TL_HOST_DEVICE float philox_normal_f32(uint64_t seed, uint64_t seq, uint64_t pos) {
  double u1 = (double)detail::px_unit_f32(philox_u32(seed, seq, pos));
  double u2 = (double)detail::px_unit_f32(philox_u32(seed, seq, pos + 1));
  return detail::px_f64_to_f32(detail::px_box_muller(u1, u2));
}

TL_HOST_DEVICE double philox_normal_f64(uint64_t seed, uint64_t seq, uint64_t pos) {
  double u1 = detail::px_unit_f64(philox_u32(seed, seq, pos), philox_u32(seed, seq, pos + 1));
  double u2 = detail::px_unit_f64(philox_u32(seed, seq, pos + 2), philox_u32(seed, seq, pos + 3));
  return detail::px_box_muller(u1, u2);
}

}  // namespace tl
