// wgmma (sm_90a): SS and RS forms for f16 / bf16 / tf32 / fp8 / int8 inputs,
// f32 / f16 / s32 accumulators, several N, every shared-memory layout of
// tl/README.md (K-major and MN-major; no swizzle, 32B, 64B, 128B swizzle),
// operand negation and scale_d.  The operands are written to shared memory
// with the README's layout formulas and the descriptors built with the
// README's LBO / SBO rules; results are read back with the documented
// accumulator mapping and compared with a host GEMM.
//
// Every kernel runs 4 wgmma instructions (128 bytes of K) so the K-step
// descriptor advance and accumulation are exercised too.
#include <type_traits>

#include "harness.h"
#include "tl/all.h"

using namespace tl_test;

// ---------------------------------------------------------------------------
// Shared-memory operand layouts (byte offsets), exactly as documented.
//   MN: extent of the M (A) or N (B) dimension; E: element bytes;
//   KT: total K elements stored (128 bytes' worth).
// ---------------------------------------------------------------------------
__host__ __device__ inline int swz_xor(int sw, int r) {
  return sw == 128 ? r % 8 : sw == 64 ? (r / 2) % 4 : (r / 4) % 2;
}

template <int SW, bool MN_MAJOR>
struct Layout {
  __host__ __device__ static int offset(int mn, int k, int MN, int E, int KT) {
    if constexpr (!MN_MAJOR) {
      const int kb = k * E;
      if constexpr (SW == 0) {  // core matrices [mn/8][kb/16], LBO = 128, SBO = (KT*E/16)*128
        return (mn / 8) * sbo(MN, E, KT) + (kb / 16) * lbo(MN, E, KT) + (mn % 8) * 16 + kb % 16;
      } else {  // atom columns along K, atoms of 8 rows x SW bytes stacked along MN
        return (kb / SW) * (MN * SW) + (mn / 8) * sbo(MN, E, KT) + (mn % 8) * SW +
               (((kb % SW) / 16) ^ swz_xor(SW, mn % 8)) * 16 + kb % 16;
      }
    } else {
      const int xb = mn * E;
      if constexpr (SW == 0) {  // core matrices [k/8][xb/16]: SBO = 128 (MN-adjacent), LBO = K-adjacent
        return (k / 8) * lbo(MN, E, KT) + (xb / 16) * sbo(MN, E, KT) + (k % 8) * 16 + xb % 16;
      } else {  // atoms [k/8][xb/SW]: LBO = MN-adjacent atoms, SBO = K-adjacent atoms
        return (k / 8) * sbo(MN, E, KT) + (xb / SW) * lbo(MN, E, KT) + (k % 8) * SW +
               (((xb % SW) / 16) ^ swz_xor(SW, k % 8)) * 16 + xb % 16;
      }
    }
  }
  __host__ __device__ static uint32_t lbo(int MN, int E, int KT) {
    if constexpr (!MN_MAJOR) {
      return SW == 0 ? 128 : 16;  // unused for swizzled K-major
    } else {
      return SW == 0 ? (MN * E / 16) * 128 : 8 * SW;
    }
  }
  __host__ __device__ static uint32_t sbo(int MN, int E, int KT) {
    if constexpr (!MN_MAJOR) {
      return SW == 0 ? (KT * E / 16) * 128 : 8 * SW;
    } else {
      return SW == 0 ? 128 : (MN * E / SW) * 8 * SW;
    }
  }
  // Start-address offset of K step s (each wgmma consumes 32 bytes of K).
  __host__ __device__ static int step_offset(int s, int MN, int E, int KT) {
    if constexpr (!MN_MAJOR) {
      const int kb0 = 32 * s;
      return SW == 0 ? (kb0 / 16) * lbo(MN, E, KT) : (kb0 / SW) * (MN * SW) + kb0 % SW;
    } else {
      const int k0 = (32 / E) * s;  // 16 elements = two 8-row groups for 16-bit types
      return SW == 0 ? (k0 / 8) * lbo(MN, E, KT) : (k0 / 8) * sbo(MN, E, KT);
    }
  }
};

template <class T>
double as_double(T v) {
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

template <class T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, tl::half_t>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, tl::bfloat16_t>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, tl::fp8_e4m3_t> || std::is_same_v<T, tl::fp8_e5m2_t>) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

constexpr int kM = 64;
constexpr int kSteps = 4;

struct Opts {
  bool rs;
  bool trans_a, trans_b;
  int swizzle_a, swizzle_b;
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)
#define TL_TEST_WGMMA_ENABLED 1
#else
#define TL_TEST_WGMMA_ENABLED 0
#endif

template <class AT, class BT, class CT, int N, bool RS, bool TA, bool TB, int SWA, int SWB, int SCALE_A>
__global__ void __launch_bounds__(128) wgmma_kernel(const AT* A, const BT* B, CT* D, int scale_d0) {
#if TL_TEST_WGMMA_ENABLED
  constexpr int E = sizeof(AT);
  constexpr int KT = 128 / E;  // K elements stored
  constexpr int KI = 32 / E;   // K per instruction
  using LA = Layout<SWA, TA>;
  using LB = Layout<SWB, TB>;
  __shared__ alignas(1024) uint8_t smem_a[kM * 128];
  __shared__ alignas(1024) uint8_t smem_b[N * 128];
  const int tid = threadIdx.x, w = tid / 32, l = tid % 32, g = l / 4, t = l % 4;

  if constexpr (!RS) {
    for (int idx = tid; idx < kM * KT; idx += 128) {
      const int m = idx / KT, k = idx % KT;
      memcpy(smem_a + LA::offset(m, k, kM, E, KT), &A[idx], E);
    }
  }
  for (int idx = tid; idx < KT * N; idx += 128) {
    const int k = idx / N, n = idx % N;
    memcpy(smem_b + LB::offset(n, k, N, E, KT), &B[idx], E);
  }
  tl::fence_proxy_async();  // make the generic-proxy stores visible to wgmma
  __syncthreads();

  // RS: the A fragments of all steps, loaded with the documented mapping.
  uint32_t a_regs[kSteps][4];
  if constexpr (RS) {
    for (int s = 0; s < kSteps; ++s) {
      for (int r = 0; r < 4; ++r) {
        const int row = 16 * w + g + 8 * (r % 2);
        uint8_t bytes[4];
        if constexpr (E == 2) {
          for (int e = 0; e < 2; ++e) memcpy(bytes + 2 * e, &A[row * KT + s * KI + 2 * t + e + 8 * (r / 2)], 2);
        } else if constexpr (E == 4) {
          memcpy(bytes, &A[row * KT + s * KI + t + 4 * (r / 2)], 4);
        } else {
          for (int e = 0; e < 4; ++e) memcpy(bytes + e, &A[row * KT + s * KI + 4 * t + e + 16 * (r / 2)], 1);
        }
        memcpy(&a_regs[s][r], bytes, 4);
      }
    }
  }

  CT d[N / 2];
  for (int i = 0; i < N / 2; ++i) {
    const int row = 16 * w + g + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * t + (i % 2);
    d[i] = D[row * N + col];
  }
  tl::warpgroup_fence_operands<N / 2>(d);
  tl::wgmma_fence();
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    const uint64_t desc_b = tl::make_wgmma_desc(smem_b + LB::step_offset(s, N, E, KT), SWB, LB::lbo(N, E, KT),
                                                LB::sbo(N, E, KT));
    const int scale_d = s == 0 ? scale_d0 : 1;
    if constexpr (RS) {
      tl::wgmma_rs<AT, BT, CT, N, TB, SCALE_A>(a_regs[s], desc_b, d, scale_d);
    } else {
      const uint64_t desc_a = tl::make_wgmma_desc(smem_a + LA::step_offset(s, kM, E, KT), SWA, LA::lbo(kM, E, KT),
                                                  LA::sbo(kM, E, KT));
      tl::wgmma_ss<AT, BT, CT, N, TA, TB, SCALE_A>(desc_a, desc_b, d, scale_d);
    }
  }
  tl::wgmma_commit_group();
  tl::wgmma_wait<0>();
  tl::warpgroup_fence_operands<N / 2>(d);
  for (int i = 0; i < N / 2; ++i) {
    const int row = 16 * w + g + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * t + (i % 2);
    D[row * N + col] = d[i];
  }
#endif
}

template <class T>
double random_value(Rng& rng, bool coarse) {
  if constexpr (std::is_same_v<T, int8_t>) {
    return rng.range(-128, 127);
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    return rng.range(0, 255);
  } else if constexpr (std::is_same_v<T, tl::fp8_e4m3_t> || std::is_same_v<T, tl::fp8_e5m2_t>) {
    static const double vals[] = {-2.0, -1.5, -1.0, -0.5, -0.25, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0};
    return vals[rng.range(0, 10)];
  } else {
    return coarse ? rng.range(-4, 4) / 4.0 : rng.range(-8, 8) / 8.0;
  }
}

template <class AT, class BT, class CT, int N, bool RS, bool TA, bool TB, int SWA, int SWB, int SCALE_A = 1>
void run(const char* name, int scale_d0) {
  constexpr int E = sizeof(AT);
  constexpr int KT = 128 / E;
  const bool coarse = std::is_same_v<CT, tl::half_t>;  // keep f16 accumulation exact
  Rng rng(N * 31 + E * 7 + SWA + SWB * 3 + RS + 2 * TA + 4 * TB);
  std::vector<AT> A(kM * KT);
  std::vector<BT> B(KT * N);
  std::vector<CT> D(kM * N);
  std::vector<double> a(kM * KT), b(KT * N), d0(kM * N);
  for (size_t i = 0; i < A.size(); ++i) A[i] = from_double<AT>(a[i] = random_value<AT>(rng, coarse));
  for (size_t i = 0; i < B.size(); ++i) B[i] = from_double<BT>(b[i] = random_value<BT>(rng, coarse));
  for (size_t i = 0; i < D.size(); ++i) {
    d0[i] = std::is_same_v<CT, int32_t> ? rng.range(-100000, 100000) : rng.range(-16, 16) / 4.0;
    D[i] = from_double<CT>(d0[i]);
  }
  DeviceBuffer<AT> dA(A);
  DeviceBuffer<BT> dB(B);
  DeviceBuffer<CT> dD(D);
  wgmma_kernel<AT, BT, CT, N, RS, TA, TB, SWA, SWB, SCALE_A><<<1, 128>>>(dA.ptr, dB.ptr, dD.ptr, scale_d0);
  sync_or_die(name);
  std::vector<CT> out = dD.download();
  Check check(name);
  for (int m = 0; m < kM; ++m) {
    for (int n = 0; n < N; ++n) {
      double ref = 0;
      for (int k = 0; k < KT; ++k) ref += a[m * KT + k] * b[k * N + n];
      ref = SCALE_A * ref + (scale_d0 ? d0[m * N + n] : 0.0);
      const double got = as_double(out[m * N + n]);
      check.expect(close(got, ref, 1e-3, 1e-3), "D[%d][%d] got %g want %g", m, n, got, ref);
    }
  }
}

// Host self-check of the layout formulas: every element gets a distinct byte
// range inside the buffer (catches a wrong test, not a wrong header).
template <int SW, bool MN_MAJOR>
void check_layout_bijective(Check& check, int MN, int E) {
  const int KT = 128 / E;
  std::vector<int> used(MN * 128, 0);
  for (int mn = 0; mn < MN; ++mn)
    for (int k = 0; k < KT; ++k) {
      const int off = Layout<SW, MN_MAJOR>::offset(mn, k, MN, E, KT);
      for (int b = 0; b < E; ++b) {
        if (off + b >= 0 && off + b < MN * 128) used[off + b]++;
      }
    }
  for (int v : used) check.expect(v == 1, "layout SW=%d mn_major=%d MN=%d E=%d not a bijection", SW, MN_MAJOR, MN, E);
}

int main() {
  if (device_cc() != 90) {
    skip("wgmma", "needs sm_90a (H100 / H200)");
    return finish();
  }
  {
    Check check("wgmma_test_layouts_are_bijective");
    check_layout_bijective<0, false>(check, 64, 2);
    check_layout_bijective<32, false>(check, 64, 2);
    check_layout_bijective<64, false>(check, 128, 1);
    check_layout_bijective<128, false>(check, 256, 4);
    check_layout_bijective<0, true>(check, 64, 2);
    check_layout_bijective<32, true>(check, 128, 2);
    check_layout_bijective<64, true>(check, 64, 2);
    check_layout_bijective<128, true>(check, 256, 2);
  }
  using h = tl::half_t;
  using bf = tl::bfloat16_t;
  using e4 = tl::fp8_e4m3_t;
  using e5 = tl::fp8_e5m2_t;
  //   AT  BT  CT  N    RS     TA     TB     SWA  SWB
  run<h, h, float, 64, false, false, false, 128, 128>("wgmma_ss_f16_f32_n64_kmajor_sw128", 1);
  run<h, h, float, 128, false, false, false, 64, 64>("wgmma_ss_f16_f32_n128_kmajor_sw64_scale_d0", 0);
  run<h, h, float, 32, false, false, false, 32, 32>("wgmma_ss_f16_f32_n32_kmajor_sw32", 1);
  run<h, h, float, 64, false, false, false, 0, 0>("wgmma_ss_f16_f32_n64_kmajor_noswizzle", 1);
  run<h, h, float, 8, false, false, false, 0, 128>("wgmma_ss_f16_f32_n8_mixed_swizzle", 1);
  run<h, h, float, 128, false, false, true, 128, 128>("wgmma_ss_f16_f32_n128_b_nmajor_sw128", 1);
  run<h, h, float, 64, false, true, false, 128, 128>("wgmma_ss_f16_f32_n64_a_mmajor_sw128", 1);
  run<h, h, float, 64, false, true, true, 0, 0>("wgmma_ss_f16_f32_n64_mnmajor_noswizzle", 1);
  run<h, h, float, 64, false, true, true, 64, 32>("wgmma_ss_f16_f32_n64_mnmajor_sw64_sw32", 1);
  run<bf, bf, float, 256, false, false, false, 128, 128>("wgmma_ss_bf16_f32_n256_kmajor_sw128", 1);
  run<bf, bf, float, 64, false, false, true, 128, 64>("wgmma_ss_bf16_f32_n64_b_nmajor_sw64", 0);
  run<h, h, h, 64, false, false, false, 128, 128>("wgmma_ss_f16_f16acc_n64_sw128", 1);
  run<h, h, h, 24, true, false, false, 0, 32>("wgmma_rs_f16_f16acc_n24_sw32", 1);
  run<h, h, float, 64, false, false, false, 128, 128, -1>("wgmma_ss_f16_f32_n64_negate_a", 1);
  run<h, h, float, 64, true, false, false, 0, 128>("wgmma_rs_f16_f32_n64_sw128", 1);
  run<h, h, float, 128, true, false, true, 0, 128>("wgmma_rs_f16_f32_n128_b_nmajor_sw128", 0);
  run<bf, bf, float, 16, true, false, false, 0, 0, -1>("wgmma_rs_bf16_f32_n16_noswizzle_negate_a", 1);
  run<float, float, float, 64, false, false, false, 128, 128>("wgmma_ss_tf32_f32_n64_sw128", 1);
  run<float, float, float, 32, true, false, false, 0, 32>("wgmma_rs_tf32_f32_n32_sw32", 1);
  run<e4, e4, float, 64, false, false, false, 128, 128>("wgmma_ss_e4m3_e4m3_f32_n64_sw128", 1);
  run<e5, e4, float, 32, false, false, false, 64, 64>("wgmma_ss_e5m2_e4m3_f32_n32_sw64", 1);
  run<e4, e5, float, 64, true, false, false, 0, 128>("wgmma_rs_e4m3_e5m2_f32_n64_sw128", 0);
  run<int8_t, int8_t, int32_t, 64, false, false, false, 128, 128>("wgmma_ss_s8_s8_s32_n64_sw128", 1);
  run<uint8_t, int8_t, int32_t, 32, false, false, false, 0, 0>("wgmma_ss_u8_s8_s32_n32_noswizzle", 1);
  run<int8_t, uint8_t, int32_t, 48, true, false, false, 0, 32>("wgmma_rs_s8_u8_s32_n48_sw32", 1);
  return finish();
}
