// common.h on the device: tl::cvt rounding rules, math wrappers, limits,
// floordiv / floormod, packing helpers, and the rasterize.h device forms.
#include <cmath>
#include <limits>

#include "harness.h"
#include "tl/all.h"

using namespace tl_test;

// ---------------------------------------------------------------------------
// cvt: hand-picked rounding cases with known answers
// ---------------------------------------------------------------------------
__global__ void cvt_cases_kernel(float* f, double* d, uint32_t* u, long long* ll) {
  // float -> half: ties to even
  f[0] = __half2float(tl::cvt<tl::half_t>(1.0f + ldexpf(1.0f, -11)));         // tie -> 1
  f[1] = __half2float(tl::cvt<tl::half_t>(1.0f + 3.0f * ldexpf(1.0f, -11)));  // tie -> 1 + 2^-9
  f[2] = __half2float(tl::cvt<tl::half_t>(70000.0f));                               // overflow -> inf
  // double -> half: single rounding (a double-rounding path through float would give 1)
  f[3] = __half2float(tl::cvt<tl::half_t>(1.0 + ldexp(1.0, -11) + ldexp(1.0, -40)));
  // float -> bfloat16: ties to even
  f[4] = __bfloat162float(tl::cvt<tl::bfloat16_t>(1.0f + ldexpf(1.0f, -8)));        // tie -> 1
  f[5] = __bfloat162float(tl::cvt<tl::bfloat16_t>(1.0f + 3.0f * ldexpf(1.0f, -8)));  // tie -> 1 + 2^-6
  // double -> bfloat16: single rounding
  f[6] = __bfloat162float(tl::cvt<tl::bfloat16_t>(1.0 + ldexp(1.0, -8) + ldexp(1.0, -40)));
  // half -> bfloat16 (1 + 3 * 2^-9 is nearer to 1 + 2^-7)
  f[7] = __bfloat162float(tl::cvt<tl::bfloat16_t>(__float2half(1.0f + 3.0f * ldexpf(1.0f, -9))));
  // bfloat16 -> half
  f[8] = __half2float(tl::cvt<tl::half_t>(__float2bfloat16(-2.5f)));
  // integers -> float / half / bfloat16: ties to even
  f[9] = tl::cvt<float>(16777217);                    // -> 16777216
  f[10] = tl::cvt<float>(16777219);                   // -> 16777220
  f[11] = __half2float(tl::cvt<tl::half_t>(2049));    // tie -> 2048
  f[12] = __half2float(tl::cvt<tl::half_t>(2051));    // tie -> 2052
  f[13] = __bfloat162float(tl::cvt<tl::bfloat16_t>(257));        // tie -> 256
  f[14] = __bfloat162float(tl::cvt<tl::bfloat16_t>(259LL));      // tie -> 260
  f[15] = __bfloat162float(tl::cvt<tl::bfloat16_t>(16777217));   // nearest bf16 of an int above 2^24 -> 16777216
  f[16] = tl::cvt<float>(4294967295u);                           // -> 4294967296
  f[17] = __half2float(tl::cvt<tl::half_t>(static_cast<uint64_t>(65519)));  // -> 65504 (max half, below tie)
  // fp8
  f[18] = static_cast<float>(tl::cvt<tl::fp8_e4m3_t>(500.0f));       // saturate -> 448
  f[19] = static_cast<float>(tl::cvt<tl::fp8_e4m3_t>(1.0625f));      // tie -> 1
  f[20] = static_cast<float>(tl::cvt<tl::fp8_e4m3_t>(1.1875f));      // tie -> 1.25
  f[21] = static_cast<float>(tl::cvt<tl::fp8_e5m2_t>(-1e6f));        // overflow -> -inf (torch's e5m2 rule)
  f[22] = static_cast<float>(tl::cvt<tl::fp8_e5m2_t>(tl::cvt<tl::fp8_e4m3_t>(0.9375f)));  // e5m2 tie 0.875 / 1.0 -> 1.0
  f[23] = static_cast<float>(tl::cvt<tl::fp8_e4m3_t>(__int_as_float(0x7fc00000)));
  f[24] = __half2float(tl::cvt<tl::half_t>(tl::cvt<tl::fp8_e5m2_t>(-3.0f)));
  f[25] = static_cast<float>(tl::cvt<tl::fp8_e4m3_t>(7));            // int -> fp8
  f[26] = static_cast<float>(tl::cvt<tl::fp8_e4m3_t>(__float2half(0.3f)));
  // float -> integers: truncation toward zero
  ll[0] = tl::cvt<int>(-2.7f);
  ll[1] = tl::cvt<int>(2.7f);
  ll[2] = tl::cvt<long long>(-1e12);
  ll[3] = tl::cvt<int>(__float2half(-3.75f));
  ll[4] = tl::cvt<int8_t>(300);  // wraps (C semantics): 44
  ll[5] = tl::cvt<unsigned int>(-1);
  ll[6] = tl::cvt<bool>(0.25f);
  ll[7] = tl::cvt<bool>(__float2bfloat16(0.0f));
  ll[8] = tl::cvt<int>(tl::cvt<tl::fp8_e4m3_t>(-6.5f));
  ll[9] = tl::cvt<int64_t>(static_cast<uint8_t>(200));
  ll[10] = tl::cvt<uint8_t>(true);
  // doubles
  d[0] = tl::cvt<double>(__float2half(0.1f));
  d[1] = tl::cvt<double>(1.0f / 3.0f);
  d[2] = tl::cvt<double>(tl::cvt<tl::fp8_e5m2_t>(0.09375f));
  d[3] = tl::cvt<double>(-123456789012345LL);
  // raw bits of limits
  u[0] = __float_as_uint(tl::infinity<float>());
  u[1] = __float_as_uint(tl::neg_infinity<float>());
  u[2] = __half_as_ushort(tl::infinity<tl::half_t>());
  u[3] = __bfloat16_as_ushort(tl::neg_infinity<tl::bfloat16_t>());
  u[4] = __half_as_ushort(tl::max_value<tl::half_t>());
  u[5] = __bfloat16_as_ushort(tl::min_value<tl::bfloat16_t>());
  u[6] = tl::infinity<tl::fp8_e4m3_t>().__x;
  u[7] = tl::neg_infinity<tl::fp8_e5m2_t>().__x;
  u[8] = static_cast<uint32_t>(tl::infinity<int>());
  u[9] = static_cast<uint32_t>(tl::neg_infinity<int>());
  u[10] = tl::max_value<uint16_t>();
  u[11] = static_cast<uint32_t>(tl::min_value<int8_t>());
  u[12] = __float_as_uint(tl::max_value<float>());
  u[13] = static_cast<uint32_t>(__double_as_longlong(tl::neg_infinity<double>()) >> 32);
  u[14] = tl::pack_half2(__float2half(1.0f), __float2half(-2.0f));
  u[15] = tl::pack_bfloat162(__float2bfloat16(1.0f), __float2bfloat16(-2.0f));
  u[16] = tl::pack_float2_to_half2(1.0f + ldexpf(1.0f, -11), 3.0f);
  u[17] = tl::pack_float2_to_bfloat162(1.0f + 3.0f * ldexpf(1.0f, -8), 0.5f);
  u[18] = tl::bit_cast<uint32_t>(1.5f);
  u[19] = tl::max_value<tl::fp8_e5m2_t>().__x;
}

void check_cvt_cases() {
  DeviceBuffer<float> f(32);
  DeviceBuffer<double> d(8);
  DeviceBuffer<uint32_t> u(32);
  DeviceBuffer<long long> ll(16);
  cvt_cases_kernel<<<1, 1>>>(f.ptr, d.ptr, u.ptr, ll.ptr);
  sync_or_die("cvt_cases");
  auto F = f.download();
  auto D = d.download();
  auto U = u.download();
  auto L = ll.download();
  {
    Check check("cvt_rounding_cases");
    const float inf = std::numeric_limits<float>::infinity();
    // case 22: e4m3 0.9375 = 1.111b * 2^-1 -> e5m2 tie between 0.875 (odd) and 1.0 (even) -> 1.0
    const float want[] = {1.0f,
                          1.0f + std::ldexp(1.0f, -9),
                          inf,
                          1.0f + std::ldexp(1.0f, -10),
                          1.0f,
                          1.0f + std::ldexp(1.0f, -6),
                          1.0f + std::ldexp(1.0f, -7),
                          1.0f + std::ldexp(1.0f, -7),
                          -2.5f,
                          16777216.f,
                          16777220.f,
                          2048.f,
                          2052.f,
                          256.f,
                          260.f,
                          16777216.f,
                          4294967296.f,
                          65504.f,
                          448.f,
                          1.0f,
                          1.25f,
                          -inf,
                          1.0f,
                          0.0f /* NaN, checked below */,
                          -3.0f,
                          7.0f,
                          0.3125f};
    for (int i = 0; i < 27; ++i) {
      if (i == 23) {
        check.expect(std::isnan(F[i]), "cvt case 23 (NaN -> e4m3) got %g", F[i]);
        continue;
      }
      check.expect(F[i] == want[i], "cvt case %d got %.9g want %.9g", i, F[i], want[i]);
    }
    const long long want_l[] = {-2, 2, -1000000000000LL, -3, 44, 4294967295LL, 1, 0, -6, 200, 1};
    for (int i = 0; i < 11; ++i) check.expect(L[i] == want_l[i], "int case %d got %lld want %lld", i, L[i], want_l[i]);
    check.expect(D[0] == static_cast<double>(__half2float(__float2half(0.1f))), "half->double");
    check.expect(D[1] == static_cast<double>(1.0f / 3.0f), "float->double");
    check.expect(D[2] == 0.09375, "e5m2->double %g", D[2]);
    check.expect(D[3] == -123456789012345.0, "int64->double");
  }
  {
    Check check("limits_and_packing_bits");
    const uint32_t want[] = {0x7f800000u, 0xff800000u, 0x7c00u,     0xff80u,     0x7bffu,
                             0xff7fu,     0x7eu,       0xfcu,       0x7fffffffu, 0x80000000u,
                             0xffffu,     0xffffff80u, 0x7f7fffffu, 0xfff00000u, 0xc0003c00u,
                             0xc0003f80u, 0x42003c00u, 0x3f003f82u, 0x3fc00000u, 0x7bu};
    for (int i = 0; i < 20; ++i) check.expect(U[i] == want[i], "bits %d got %08x want %08x", i, U[i], want[i]);
  }
}

// ---------------------------------------------------------------------------
// cvt: bulk float -> half / bfloat16 / fp8 against the host implementations
// ---------------------------------------------------------------------------
__global__ void cvt_bulk_kernel(const float* in, uint16_t* h, uint16_t* b, uint8_t* e4, uint8_t* e5, int* i32, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  h[i] = __half_as_ushort(tl::cvt<tl::half_t>(in[i]));
  b[i] = __bfloat16_as_ushort(tl::cvt<tl::bfloat16_t>(in[i]));
  e4[i] = tl::cvt<tl::fp8_e4m3_t>(in[i]).__x;
  e5[i] = tl::cvt<tl::fp8_e5m2_t>(in[i]).__x;
  i32[i] = isfinite(in[i]) && fabsf(in[i]) < 2e9f ? tl::cvt<int>(in[i]) : 0;
}

void check_cvt_bulk() {
  Rng rng(5);
  const int n = 1 << 16;
  std::vector<float> in(n);
  for (int i = 0; i < n; ++i) {
    uint32_t bits = rng.next();
    if (i % 4 == 0) bits = (bits & 0x807fffffu) | ((100u + rng.next() % 60u) << 23);  // |x| in ~[2^-27, 2^32]
    std::memcpy(&in[i], &bits, 4);
  }
  DeviceBuffer<float> din(in);
  DeviceBuffer<uint16_t> h(n), b(n);
  DeviceBuffer<uint8_t> e4(n), e5(n);
  DeviceBuffer<int> i32(n);
  cvt_bulk_kernel<<<n / 256, 256>>>(din.ptr, h.ptr, b.ptr, e4.ptr, e5.ptr, i32.ptr, n);
  sync_or_die("cvt_bulk");
  auto H = h.download();
  auto B = b.download();
  auto E4 = e4.download();
  auto E5 = e5.download();
  auto I = i32.download();
  Check check("cvt_float_bulk_vs_host_rn");
  for (int i = 0; i < n; ++i) {
    const float x = in[i];
    const uint16_t wh = __half_as_ushort(__float2half_rn(x));
    const uint16_t wb = __bfloat16_as_ushort(__float2bfloat16_rn(x));
    // torch's rules: e4m3 saturates (cuda_fp8's default), e5m2 overflows to inf (no saturation)
    const uint8_t w4 = __nv_fp8_e4m3(x).__x, w5 = __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2);
    if (std::isnan(x)) {
      check.expect(std::isnan(__half2float(__ushort_as_half(H[i]))), "half NaN");
      continue;
    }
    check.expect(H[i] == wh, "half of %.9g: %04x vs %04x", x, H[i], wh);
    check.expect(B[i] == wb, "bf16 of %.9g: %04x vs %04x", x, B[i], wb);
    check.expect(E4[i] == w4, "e4m3 of %.9g: %02x vs %02x", x, E4[i], w4);
    check.expect(E5[i] == w5, "e5m2 of %.9g: %02x vs %02x", x, E5[i], w5);
    if (std::isfinite(x) && std::fabs(x) < 2e9f) check.expect(I[i] == static_cast<int>(x), "int of %.9g", x);
  }
}

// ---------------------------------------------------------------------------
// math
// ---------------------------------------------------------------------------
constexpr int kNumFns = 16;
__global__ void math_kernel(const float* in, float* of, float* oh, float* ob, double* od, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = in[i];
  const tl::half_t hx = __float2half(x);
  const tl::bfloat16_t bx = __float2bfloat16(x);
  const double dx = x;
#define TL_T(k, fn)                                  \
  of[i * kNumFns + k] = tl::fn(x);                   \
  oh[i * kNumFns + k] = __half2float(tl::fn(hx));    \
  ob[i * kNumFns + k] = __bfloat162float(tl::fn(bx)); \
  od[i * kNumFns + k] = tl::fn(dx);
  TL_T(0, exp2)
  TL_T(1, exp)
  TL_T(2, log)
  TL_T(3, log2)
  TL_T(4, log10)
  TL_T(5, sqrt)
  TL_T(6, rsqrt)
  TL_T(7, tanh)
  TL_T(8, sigmoid)
  TL_T(9, sin)
  TL_T(10, cos)
  TL_T(11, erf)
  TL_T(12, floor)
  TL_T(13, ceil)
  TL_T(14, round)
  TL_T(15, abs)
#undef TL_T
}

double ref_fn(int k, double x) {
  switch (k) {
    case 0: return std::exp2(x);
    case 1: return std::exp(x);
    case 2: return std::log(x);
    case 3: return std::log2(x);
    case 4: return std::log10(x);
    case 5: return std::sqrt(x);
    case 6: return 1.0 / std::sqrt(x);
    case 7: return std::tanh(x);
    case 8: return 1.0 / (1.0 + std::exp(-x));
    case 9: return std::sin(x);
    case 10: return std::cos(x);
    case 11: return std::erf(x);
    case 12: return std::floor(x);
    case 13: return std::ceil(x);
    case 14: return std::nearbyint(x);  // default rounding mode: ties to even
    default: return std::fabs(x);
  }
}

void check_math() {
  std::vector<float> in;
  for (float v = -6.0f; v <= 6.0f; v += 0.37f) in.push_back(v);
  const float extra[] = {0.5f, 1.5f, 2.5f, -2.5f, 3.5f, -0.5f, 1e-3f, 10.25f, 0.0f};
  for (float v : extra) in.push_back(v);
  const int n = static_cast<int>(in.size());
  DeviceBuffer<float> din(in), of(n * kNumFns), oh(n * kNumFns), ob(n * kNumFns);
  DeviceBuffer<double> od(n * kNumFns);
  math_kernel<<<(n + 63) / 64, 64>>>(din.ptr, of.ptr, oh.ptr, ob.ptr, od.ptr, n);
  sync_or_die("math");
  auto F = of.download();
  auto H = oh.download();
  auto B = ob.download();
  auto D = od.download();
  Check check("math_wrappers_f32_f16_bf16_f64");
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < kNumFns; ++k) {
      const double x = in[i];
      const double ref = ref_fn(k, x);
      if (std::isnan(ref) || (k == 6 && x == 0.0) || (k <= 6 && k >= 2 && x <= 0.0)) continue;  // domain edges
      const double hx = __half2float(__float2half(in[i])), bxv = __bfloat162float(__float2bfloat16(in[i]));
      check.expect(close(F[i * kNumFns + k], ref, 2e-6, 1e-6), "f32 fn %d x %g got %.9g want %.9g", k, x,
                   F[i * kNumFns + k], ref);
      check.expect(close(D[i * kNumFns + k], ref, 1e-12, 1e-12), "f64 fn %d x %g", k, x);
      // half / bf16: reference on the rounded input, one rounding of the result
      const double rh = ref_fn(k, hx), rb = ref_fn(k, bxv);
      check.expect(close(H[i * kNumFns + k], rh, 1e-3, 1e-3), "f16 fn %d x %g got %g want %g", k, hx,
                   H[i * kNumFns + k], rh);
      check.expect(close(B[i * kNumFns + k], rb, 8e-3, 8e-3), "bf16 fn %d x %g got %g want %g", k, bxv,
                   B[i * kNumFns + k], rb);
    }
  }
}

__global__ void math_misc_kernel(float* o, int* oi) {
  const float nan = __int_as_float(0x7fc00000);
  o[0] = tl::max(nan, 1.0f);
  o[1] = tl::min(2.0f, nan);
  o[2] = __half2float(tl::max(__float2half(-1.0f), __float2half(-3.0f)));
  o[3] = __bfloat162float(tl::min(__float2bfloat16(-1.0f), __float2bfloat16(-3.0f)));
  o[4] = tl::pow(2.0f, 10.0f);
  o[5] = __half2float(tl::pow(__float2half(3.0f), __float2half(2.0f)));
  o[6] = tl::fast_exp2(3.0f);
  o[7] = tl::fast_exp(1.0f);
  o[8] = tl::fast_log2(8.0f);
  o[9] = tl::fast_log(2.718281828f);
  o[10] = tl::fast_tanh(0.5f);
  o[11] = tl::fast_rcp(4.0f);
  o[12] = tl::fast_div(1.0f, 8.0f);
  o[13] = static_cast<float>(tl::max(-3, 7) + tl::min(-3, 7) + tl::abs(-9));
  o[14] = static_cast<float>(tl::max(3u, 7u));
  o[15] = tl::trunc(-2.7f);
  o[16] = tl::floordiv(-7.5f, 2.0f);
  o[17] = tl::floormod(-7.5f, 2.0f);
  int k = 0;
  for (int a = -9; a <= 9; ++a) {
    for (int b = -4; b <= 4; ++b) {
      if (b == 0) continue;
      oi[k++] = tl::floordiv(a, b);
      oi[k++] = tl::floormod(a, b);
      oi[k++] = static_cast<int>(tl::floordiv(static_cast<int64_t>(a), static_cast<int64_t>(b)));
    }
  }
}

void check_math_misc() {
  DeviceBuffer<float> o(32);
  DeviceBuffer<int> oi(19 * 8 * 3);
  math_misc_kernel<<<1, 1>>>(o.ptr, oi.ptr);
  sync_or_die("math_misc");
  auto O = o.download();
  auto I = oi.download();
  Check check("math_misc_nan_int_fast_floordiv");
  const float want[] = {1.f, 2.f, -1.f, -3.f, 1024.f, 9.f, 8.f, 2.718281828f, 3.f, 1.f,
                        0.46211716f, 0.25f, 0.125f, 13.f, 7.f, -2.f, -4.f, 0.5f};
  const float tol[] = {0, 0, 0, 0, 0, 0, 1e-5f, 1e-5f, 1e-5f, 1e-5f, 5e-3f, 0, 1e-6f, 0, 0, 0, 0, 0};
  for (int i = 0; i < 18; ++i) {
    check.expect(std::fabs(O[i] - want[i]) <= tol[i] * std::fabs(want[i]), "misc %d got %.9g want %.9g", i, O[i],
                 want[i]);
  }
  int k = 0;
  for (int a = -9; a <= 9; ++a) {
    for (int b = -4; b <= 4; ++b) {
      if (b == 0) continue;
      const int q = static_cast<int>(std::floor(static_cast<double>(a) / b));
      const int r = a - q * b;
      check.expect(I[k] == q && I[k + 1] == r && I[k + 2] == q, "floordiv(%d, %d) -> %d %d", a, b, I[k], I[k + 1]);
      k += 3;
    }
  }
}

// ---------------------------------------------------------------------------
// rasterize.h device forms
// ---------------------------------------------------------------------------
__global__ void raster_kernel(int* out, int panel, int mode) {
  dim3 r;
  if (mode == 0) {
    r = tl::rasterize2d_row<3>();
  } else if (mode == 1) {
    r = tl::rasterize2d_column<3>();
  } else {
    r = tl::rasterize2d(panel, mode == 3);
  }
  if (threadIdx.x == 0) {
    const int linear = blockIdx.x + blockIdx.y * gridDim.x;
    const int base = (blockIdx.z * gridDim.x * gridDim.y + linear) * 3;
    out[base + 0] = r.x;
    out[base + 1] = r.y;
    out[base + 2] = r.z;
  }
}

void check_raster() {
  const int gx = 7, gy = 5, gz = 2;
  for (int mode = 0; mode < 4; ++mode) {
    const int panel = mode < 2 ? 3 : 2;
    DeviceBuffer<int> out(gx * gy * gz * 3);
    raster_kernel<<<dim3(gx, gy, gz), 32>>>(out.ptr, panel, mode);
    char name[64];
    std::snprintf(name, sizeof(name), "rasterize_device_mode%d", mode);
    sync_or_die(name);
    auto o = out.download();
    Check check(name);
    for (int z = 0; z < gz; ++z) {
      std::vector<int> seen(gx * gy, 0);
      for (int l = 0; l < gx * gy; ++l) {
        int bx, by;
        if (mode == 0 || mode == 2) {
          tl::rasterize2d_row_map(l, gx, gy, panel, bx, by);
        } else {
          tl::rasterize2d_column_map(l, gx, gy, panel, bx, by);
        }
        const int* r = &o[(z * gx * gy + l) * 3];
        check.expect(r[0] == bx && r[1] == by && r[2] == z, "l %d z %d got (%d,%d,%d) want (%d,%d,%d)", l, z, r[0],
                     r[1], r[2], bx, by, z);
        if (r[0] >= 0 && r[0] < gx && r[1] >= 0 && r[1] < gy) seen[r[1] * gx + r[0]]++;
      }
      for (int v : seen) check.expect(v == 1, "not a bijection");
    }
  }
}

int main() {
  check_cvt_cases();
  check_cvt_bulk();
  check_math();
  check_math_misc();
  check_raster();
  return finish();
}
