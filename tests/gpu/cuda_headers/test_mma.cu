// Numerics of tl::mma_sync for every supported (A, B, C) combination against a
// host reference.  Each lane gathers its operand fragments from global memory
// with the lane <-> element mapping documented in tl/README.md, so this also
// checks the documentation.
#include "harness.h"
#include "tl/all.h"

using namespace tl_test;

// Fragment element -> (row, col) of A (16 x K) and (k, n) of B (K x 8).
template <int kBytes, int K>
struct FragMap {
  __host__ __device__ static void a(int i, int g, int t, int& row, int& col) {
    if constexpr (kBytes == 2) {  // m16n8k16 / m16n8k8: 2 elements per register
      const int r = i / 2;
      row = g + 8 * (r % 2);
      col = 2 * t + (i % 2) + 8 * (r / 2);
    } else if constexpr (kBytes == 4) {  // tf32 m16n8k8
      row = g + 8 * (i % 2);
      col = t + 4 * (i / 2);
    } else {  // 8-bit m16n8k32: 4 elements per register
      const int r = i / 4;
      row = g + 8 * (r % 2);
      col = 4 * t + (i % 4) + 16 * (r / 2);
    }
  }
  __host__ __device__ static void b(int j, int g, int t, int& k, int& n) {
    n = g;
    if constexpr (kBytes == 2) {
      k = 2 * t + (j % 2) + 8 * (j / 2);
    } else if constexpr (kBytes == 4) {
      k = t + 4 * j;
    } else {
      k = 4 * t + (j % 4) + 16 * (j / 4);
    }
  }
};

template <class AT, class BT, class CT, int K>
__global__ void mma_kernel(const AT* A, const BT* B, CT* C) {
  {
    const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
    constexpr int kNA = 16 * K / 32, kNB = 8 * K / 32;
    alignas(16) AT a[kNA];
    alignas(16) BT b[kNB];
    CT c[4];
    for (int i = 0; i < kNA; ++i) {
      int row, col;
      FragMap<sizeof(AT), K>::a(i, g, t, row, col);
      a[i] = A[row * K + col];
    }
    for (int j = 0; j < kNB; ++j) {
      int k, n;
      FragMap<sizeof(BT), K>::b(j, g, t, k, n);
      b[j] = B[k * 8 + n];
    }
    for (int i = 0; i < 4; ++i) c[i] = C[(g + 8 * (i / 2)) * 8 + 2 * t + (i % 2)];
    tl::mma_sync<AT, BT, CT, 16, 8, K>(c, a, b);
    for (int i = 0; i < 4; ++i) C[(g + 8 * (i / 2)) * 8 + 2 * t + (i % 2)] = c[i];
  }
}

// Host-side value <-> type helpers.
template <class T>
T from_double(double v);
template <>
float from_double<float>(double v) { return static_cast<float>(v); }
template <>
tl::half_t from_double<tl::half_t>(double v) { return __float2half_rn(static_cast<float>(v)); }
template <>
tl::bfloat16_t from_double<tl::bfloat16_t>(double v) { return __float2bfloat16_rn(static_cast<float>(v)); }
template <>
tl::fp8_e4m3_t from_double<tl::fp8_e4m3_t>(double v) { return tl::fp8_e4m3_t(static_cast<float>(v)); }
template <>
tl::fp8_e5m2_t from_double<tl::fp8_e5m2_t>(double v) { return tl::fp8_e5m2_t(static_cast<float>(v)); }
template <>
int8_t from_double<int8_t>(double v) { return static_cast<int8_t>(v); }
template <>
uint8_t from_double<uint8_t>(double v) { return static_cast<uint8_t>(v); }
template <>
int32_t from_double<int32_t>(double v) { return static_cast<int32_t>(v); }

template <class T>
double to_double(T v) {
  if constexpr (std::is_same_v<T, tl::half_t>) {
    return __half2float(v);
  } else if constexpr (std::is_same_v<T, tl::bfloat16_t>) {
    return __bfloat162float(v);
  } else if constexpr (std::is_same_v<T, tl::fp8_e4m3_t> || std::is_same_v<T, tl::fp8_e5m2_t>) {
    return static_cast<float>(v);
  } else {
    return static_cast<double>(v);
  }
}

// Operand values: exactly representable in every input format and small
// enough that all products and sums are exact in the accumulator.
template <class T>
double random_value(Rng& rng) {
  if constexpr (std::is_same_v<T, int8_t>) {
    return rng.range(-128, 127);
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    return rng.range(0, 255);
  } else if constexpr (std::is_same_v<T, tl::fp8_e4m3_t> || std::is_same_v<T, tl::fp8_e5m2_t>) {
    static const double vals[] = {-2.0, -1.5, -1.0, -0.75, -0.5, -0.25, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0};
    return vals[rng.range(0, 12)];
  } else {
    return rng.range(-8, 8) / 8.0;  // multiples of 1/8 in [-1, 1]
  }
}

template <class AT, class BT, class CT, int K>
void run_case(const char* name) {
  Rng rng(K * 131 + sizeof(AT) * 7 + sizeof(CT));
  std::vector<AT> A(16 * K);
  std::vector<BT> B(K * 8);
  std::vector<CT> C(16 * 8);
  std::vector<double> a(16 * K), b(K * 8), c(16 * 8);
  for (int i = 0; i < 16 * K; ++i) A[i] = from_double<AT>(a[i] = random_value<AT>(rng));
  for (int i = 0; i < K * 8; ++i) B[i] = from_double<BT>(b[i] = random_value<BT>(rng));
  for (int i = 0; i < 16 * 8; ++i) {
    const double v = std::is_same_v<CT, int32_t> ? rng.range(-1000, 1000) : rng.range(-16, 16) / 4.0;
    C[i] = from_double<CT>(c[i] = v);
  }
  DeviceBuffer<AT> dA(A);
  DeviceBuffer<BT> dB(B);
  DeviceBuffer<CT> dC(C);
  mma_kernel<AT, BT, CT, K><<<1, 32>>>(dA.ptr, dB.ptr, dC.ptr);
  sync_or_die(name);
  std::vector<CT> out = dC.download();
  Check check(name);
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 8; ++n) {
      double ref = c[m * 8 + n];
      for (int k = 0; k < K; ++k) ref += a[m * K + k] * b[k * 8 + n];
      const double got = to_double(out[m * 8 + n]);
      check.expect(close(got, ref, 1e-3, 1e-3), "C[%d][%d] got %g want %g", m, n, got, ref);
    }
  }
}

// Every finite fp8 code through the mma, once as A (B one-hot ones) and once as B (A
// one-hot ones): C picks out single operand values, so it must equal them exactly.
// Covers the f16 conversion of the pre-sm_89 path (subnormals, signs, the largest values).
template <class F8>
void run_fp8_every_value(const char* name) {
  Check check(name);
  auto finite = [](int code) {
    const int e = code & 0x7f;
    return tl::detail::is_e4m3_v<F8> ? e != 0x7f : e < 0x7c;
  };
  auto make = [](int code) {
    F8 x;
    x.__x = static_cast<unsigned char>(code);
    return x;
  };
  for (int side = 0; side < 2; ++side) {
    for (int s = 0; s < (side == 0 ? 4 : 2); ++s) {
      std::vector<F8> A(16 * 32), B(32 * 8);
      std::vector<float> C(16 * 8, 0.f);
      for (int m = 0; m < 16; ++m)
        for (int k = 0; k < 32; ++k) {
          const int code = (m * 32 + k) % 256;
          A[m * 32 + k] = side == 0 ? make(finite(code) ? code : 0) : make(k == m + 16 * s ? 0x38 + (tl::detail::is_e4m3_v<F8> ? 0 : 0x4) : 0);
        }
      for (int k = 0; k < 32; ++k)
        for (int n = 0; n < 8; ++n) {
          const int code = k * 8 + n;
          B[k * 8 + n] = side == 1 ? make(finite(code) ? code : 0) : make(k == n + 8 * s ? 0x38 + (tl::detail::is_e4m3_v<F8> ? 0 : 0x4) : 0);
        }
      DeviceBuffer<F8> dA(A);
      DeviceBuffer<F8> dB(B);
      DeviceBuffer<float> dC(C);
      mma_kernel<F8, F8, float, 32><<<1, 32>>>(dA.ptr, dB.ptr, dC.ptr);
      sync_or_die(name);
      std::vector<float> out = dC.download();
      for (int m = 0; m < 16; ++m)
        for (int n = 0; n < 8; ++n) {
          const float want = side == 0 ? static_cast<float>(A[m * 32 + n + 8 * s]) : static_cast<float>(B[(m + 16 * s) * 8 + n]);
          check.expect(out[m * 8 + n] == want, "side %d shift %d C[%d][%d] got %g want %g", side, s, m, n,
                       out[m * 8 + n], want);
        }
    }
  }
}

// The lane mapping used above must be a bijection onto the fragments (a
// self-check of the test itself, on the host).
void check_maps() {
  Check check("mma_fragment_maps_are_bijective");
  auto run = [&](auto map, int K, int na, int nb, const char* what) {
    std::vector<int> seen_a(16 * K, 0), seen_b(K * 8, 0);
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < na; ++i) {
        int r, c;
        map.a(i, lane / 4, lane % 4, r, c);
        seen_a[r * K + c]++;
      }
      for (int j = 0; j < nb; ++j) {
        int k, n;
        map.b(j, lane / 4, lane % 4, k, n);
        seen_b[k * 8 + n]++;
      }
    }
    for (int v : seen_a) check.expect(v == 1, "%s A", what);
    for (int v : seen_b) check.expect(v == 1, "%s B", what);
  };
  run(FragMap<2, 16>{}, 16, 8, 4, "16-bit k16");
  run(FragMap<2, 8>{}, 8, 4, 2, "16-bit k8");
  run(FragMap<4, 8>{}, 8, 4, 2, "tf32 k8");
  run(FragMap<1, 32>{}, 32, 16, 8, "8-bit k32");
}

int main() {
  check_maps();
  run_case<tl::half_t, tl::half_t, float, 16>("mma_f16_f16_f32_m16n8k16");
  run_case<tl::bfloat16_t, tl::bfloat16_t, float, 16>("mma_bf16_bf16_f32_m16n8k16");
  run_case<tl::half_t, tl::half_t, tl::half_t, 16>("mma_f16_f16_f16_m16n8k16");
  run_case<tl::half_t, tl::half_t, float, 8>("mma_f16_f16_f32_m16n8k8");
  run_case<tl::bfloat16_t, tl::bfloat16_t, float, 8>("mma_bf16_bf16_f32_m16n8k8");
  run_case<float, float, float, 8>("mma_tf32_tf32_f32_m16n8k8");
  run_case<int8_t, int8_t, int32_t, 32>("mma_s8_s8_s32_m16n8k32");
  run_case<int8_t, uint8_t, int32_t, 32>("mma_s8_u8_s32_m16n8k32");
  run_case<uint8_t, int8_t, int32_t, 32>("mma_u8_s8_s32_m16n8k32");
  run_case<uint8_t, uint8_t, int32_t, 32>("mma_u8_u8_s32_m16n8k32");
  // fp8: the mma instruction on sm_89+, two f16 mmas below (compiled for compute_80)
  run_case<tl::fp8_e4m3_t, tl::fp8_e4m3_t, float, 32>("mma_e4m3_e4m3_f32_m16n8k32");
  run_case<tl::fp8_e4m3_t, tl::fp8_e5m2_t, float, 32>("mma_e4m3_e5m2_f32_m16n8k32");
  run_case<tl::fp8_e5m2_t, tl::fp8_e4m3_t, float, 32>("mma_e5m2_e4m3_f32_m16n8k32");
  run_case<tl::fp8_e5m2_t, tl::fp8_e5m2_t, float, 32>("mma_e5m2_e5m2_f32_m16n8k32");
  run_fp8_every_value<tl::fp8_e4m3_t>("mma_e4m3_every_finite_value");
  run_fp8_every_value<tl::fp8_e5m2_t>("mma_e5m2_every_finite_value");
  // tf32 rounding: operands with more than 10 mantissa bits are rounded to
  // nearest (ties away) before the multiply.
  {
    std::vector<float> A(16 * 8, 0.f), B(8 * 8, 0.f), C(16 * 8, 0.f);
    const float x = 1.0f + 3.0f * std::ldexp(1.0f, -12);  // rounds to 1 + 2^-10 in tf32
    A[0] = x;
    B[0] = 1.0f;
    DeviceBuffer<float> dA(A), dB(B), dC(C);
    mma_kernel<float, float, float, 8><<<1, 32>>>(dA.ptr, dB.ptr, dC.ptr);
    sync_or_die("mma_tf32_rounding");
    Check check("mma_tf32_operand_rounding");
    const float got = dC.download()[0];
    check.expect(got == 1.0f + std::ldexp(1.0f, -10), "got %.9g", got);
  }
  return finish();
}
