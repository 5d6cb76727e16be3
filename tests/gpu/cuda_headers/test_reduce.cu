// Reduction operators, warp reductions and tl::AllReduce for every group shape
// class (inside a warp, spanning warps with kScale < 32, spanning warps with
// kScale >= 32, named-barrier / thread-offset form), several dtypes.
#include <algorithm>
#include <functional>
#include <type_traits>

#include "harness.h"
#include "tl/all.h"

using namespace tl_test;

constexpr int kBlock = 256;

template <class Op, int KT, int KS, int OFF, int BAR, class T>
__global__ void allreduce_kernel(const T* in, T* out) {
  __shared__ alignas(16) unsigned char scratch_raw[kBlock * sizeof(double)];
  T* scratch = reinterpret_cast<T*>(scratch_raw);
  const int tid = threadIdx.x;
  if (tid < OFF) {
    out[tid] = in[tid];  // not participating
    return;
  }
  out[tid] = tl::AllReduce<Op, KT, KS, OFF, BAR>::run(in[tid], scratch);
}

template <class T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, tl::half_t>) {
    return __half2float(v);
  } else if constexpr (std::is_same_v<T, tl::bfloat16_t>) {
    return __bfloat162float(v);
  } else {
    return static_cast<double>(v);
  }
}

template <class T>
T from_int(int v) {
  if constexpr (std::is_same_v<T, tl::half_t>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, tl::bfloat16_t>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

enum class OpKind { kSum, kMax, kMin, kAbsMax, kAnd, kOr, kXor };

template <class Op>
constexpr OpKind kind_of() {
  if constexpr (std::is_same_v<Op, tl::SumOp>) return OpKind::kSum;
  if constexpr (std::is_same_v<Op, tl::MaxOp>) return OpKind::kMax;
  if constexpr (std::is_same_v<Op, tl::MinOp>) return OpKind::kMin;
  if constexpr (std::is_same_v<Op, tl::AbsMaxOp>) return OpKind::kAbsMax;
  if constexpr (std::is_same_v<Op, tl::BitAndOp>) return OpKind::kAnd;
  if constexpr (std::is_same_v<Op, tl::BitOrOp>) return OpKind::kOr;
  return OpKind::kXor;
}

// Host reference over integer-valued inputs (exact for every dtype used).
long long combine(OpKind k, long long a, long long b) {
  switch (k) {
    case OpKind::kSum:
      return a + b;
    case OpKind::kMax:
      return a > b ? a : b;
    case OpKind::kMin:
      return a < b ? a : b;
    case OpKind::kAbsMax:
      return std::max(std::llabs(a), std::llabs(b));
    case OpKind::kAnd:
      return a & b;
    case OpKind::kOr:
      return a | b;
    default:
      return a ^ b;
  }
}

// Value range per dtype so that every partial sum is exact.
template <class T>
void value_range(int& lo, int& hi) {
  if constexpr (std::is_same_v<T, tl::bfloat16_t>) {
    lo = -1, hi = 1;  // |sum| <= 128 for 128-member groups: exact in bf16
  } else if constexpr (std::is_same_v<T, tl::half_t>) {
    lo = -8, hi = 8;  // |sum| <= 1024: exact in half
  } else if constexpr (std::is_unsigned_v<T>) {
    lo = 0, hi = 1 << 20;
  } else {
    lo = -1000, hi = 1000;
  }
}

template <class Op, int KT, int KS, class T, int OFF = 0, int BAR = 0>
void check_allreduce(const char* name) {
  Rng rng(KT * 1000 + KS * 10 + OFF + sizeof(T));
  int lo, hi;
  value_range<T>(lo, hi);
  std::vector<int> vals(kBlock);
  std::vector<T> in(kBlock);
  for (int i = 0; i < kBlock; ++i) {
    vals[i] = rng.range(lo, hi);
    in[i] = from_int<T>(vals[i]);
  }
  DeviceBuffer<T> din(in), dout(kBlock);
  allreduce_kernel<Op, KT, KS, OFF, BAR, T><<<1, kBlock>>>(din.ptr, dout.ptr);
  sync_or_die(name);
  std::vector<T> out = dout.download();
  Check check(name);
  constexpr OpKind k = kind_of<Op>();
  for (int tid = 0; tid < kBlock; ++tid) {
    if (tid < OFF) {
      check.expect(as_double(out[tid]) == vals[tid], "non-participant %d modified", tid);
      continue;
    }
    const int t = tid - OFF;
    const int base = (t / (KT * KS)) * (KT * KS) + t % KS;
    long long ref = vals[OFF + base];
    if (k == OpKind::kAbsMax) ref = std::llabs(ref);
    for (int m = 1; m < KT; ++m) ref = combine(k, ref, vals[OFF + base + m * KS]);
    const double got = as_double(out[tid]);
    check.expect(got == static_cast<double>(ref), "tid %d got %g want %lld", tid, got, ref);
  }
}

// Non-integer float sums: every member of a group must get the bitwise same
// value, close to the exact sum.
template <int KT, int KS>
void check_allreduce_consistent(const char* name) {
  Rng rng(KT * 7 + KS);
  std::vector<float> in(kBlock);
  for (float& v : in) v = rng.uniform(-1.f, 1.f) * 1.37f;
  DeviceBuffer<float> din(in), dout(kBlock);
  allreduce_kernel<tl::SumOp, KT, KS, 0, 0, float><<<1, kBlock>>>(din.ptr, dout.ptr);
  sync_or_die(name);
  std::vector<float> out = dout.download();
  Check check(name);
  for (int tid = 0; tid < kBlock; ++tid) {
    const int base = (tid / (KT * KS)) * (KT * KS) + tid % KS;
    double ref = 0;
    for (int m = 0; m < KT; ++m) ref += in[base + m * KS];
    check.expect(close(out[tid], ref, 1e-5, 1e-5), "tid %d got %g want %g", tid, out[tid], ref);
    uint32_t a, b;
    std::memcpy(&a, &out[tid], 4);
    std::memcpy(&b, &out[base], 4);
    check.expect(a == b, "tid %d differs from group leader %d", tid, base);
  }
}

template <class T>
__global__ void warp_reduce_kernel(const T* in, T* out) {
  const int tid = threadIdx.x;
  out[3 * tid + 0] = tl::warp_reduce_sum(in[tid]);
  out[3 * tid + 1] = tl::warp_reduce_max(in[tid]);
  out[3 * tid + 2] = tl::warp_reduce_min(in[tid]);
}

template <class T>
void check_warp_reduce(const char* name) {
  Rng rng(sizeof(T) + 99);
  int lo, hi;
  value_range<T>(lo, hi);
  std::vector<int> vals(64);
  std::vector<T> in(64);
  for (int i = 0; i < 64; ++i) in[i] = from_int<T>(vals[i] = rng.range(lo, hi));
  DeviceBuffer<T> din(in), dout(3 * 64);
  warp_reduce_kernel<T><<<1, 64>>>(din.ptr, dout.ptr);
  sync_or_die(name);
  std::vector<T> out = dout.download();
  Check check(name);
  for (int tid = 0; tid < 64; ++tid) {
    const int w = tid / 32;
    long long s = 0, mx = vals[32 * w], mn = vals[32 * w];
    for (int l = 0; l < 32; ++l) {
      s += vals[32 * w + l];
      mx = std::max<long long>(mx, vals[32 * w + l]);
      mn = std::min<long long>(mn, vals[32 * w + l]);
    }
    check.expect(as_double(out[3 * tid]) == s, "sum tid %d", tid);
    check.expect(as_double(out[3 * tid + 1]) == mx, "max tid %d", tid);
    check.expect(as_double(out[3 * tid + 2]) == mn, "min tid %d", tid);
  }
}

// Operators and identities on the device, including -inf / +inf identities
// and AbsMax of negative values.
__global__ void op_kernel(float* out) {
  out[0] = tl::MaxOp{}(tl::MaxOp::identity<float>(), -5.f);
  out[1] = tl::MinOp{}(tl::MinOp::identity<float>(), 5.f);
  out[2] = tl::AbsMaxOp{}(-7.f, 3.f);
  out[3] = tl::SumOp{}(tl::SumOp::identity<float>(), 2.5f);
  out[4] = __half2float(tl::MaxOp{}(tl::MaxOp::identity<tl::half_t>(), __float2half(-60000.f)));
  out[5] = __bfloat162float(tl::MinOp{}(tl::MinOp::identity<tl::bfloat16_t>(), __float2bfloat16(1e30f)));
  out[6] = static_cast<float>(tl::MaxOp{}(tl::MaxOp::identity<int>(), -2147483647));
  out[7] = static_cast<float>(tl::BitAndOp::identity<uint32_t>() == 0xFFFFFFFFu);
  out[8] = static_cast<float>(tl::BitOrOp{}(0x0F0u, 0x00Fu) == 0x0FFu && tl::BitXorOp{}(6, 3) == 5);
  out[9] = static_cast<float>(tl::AbsMaxOp{}(-3, 2));
  out[10] = __half2float(tl::SumOp{}(__float2half(1.5f), __float2half(2.25f)));
}

void check_ops() {
  DeviceBuffer<float> out(16);
  op_kernel<<<1, 1>>>(out.ptr);
  sync_or_die("ops");
  std::vector<float> g = out.download();
  Check check("reduce_operators_and_identities");
  const float want[] = {-5.f, 5.f, 7.f, 2.5f, -60000.f, 1e30f, -2147483647.f, 1.f, 1.f, 3.f, 3.75f};
  for (int i = 0; i < 11; ++i) {
    const float w = i == 5 ? __bfloat162float(__float2bfloat16(1e30f)) : want[i];
    check.expect(g[i] == w, "op %d got %g want %g", i, g[i], w);
  }
}

int main() {
  check_ops();
  // Inside one warp.
  check_allreduce<tl::SumOp, 2, 1, float>("allreduce_sum_2x1_f32");
  check_allreduce<tl::SumOp, 4, 1, float>("allreduce_sum_4x1_f32");
  check_allreduce<tl::MaxOp, 8, 4, float>("allreduce_max_8x4_f32");
  check_allreduce<tl::MinOp, 32, 1, int32_t>("allreduce_min_32x1_i32");
  check_allreduce<tl::SumOp, 4, 8, tl::half_t>("allreduce_sum_4x8_f16");
  check_allreduce<tl::AbsMaxOp, 16, 2, tl::bfloat16_t>("allreduce_absmax_16x2_bf16");
  check_allreduce<tl::BitXorOp, 4, 1, uint32_t>("allreduce_xor_4x1_u32");
  check_allreduce<tl::BitOrOp, 8, 2, int64_t>("allreduce_or_8x2_i64");
  check_allreduce<tl::BitAndOp, 2, 16, int32_t>("allreduce_and_2x16_i32");
  // Spanning warps, kScale < 32.
  check_allreduce<tl::SumOp, 64, 1, float>("allreduce_sum_64x1_f32");
  check_allreduce<tl::SumOp, 128, 1, double>("allreduce_sum_128x1_f64");
  check_allreduce<tl::MaxOp, 256, 1, tl::half_t>("allreduce_max_256x1_f16");
  check_allreduce<tl::SumOp, 16, 4, tl::bfloat16_t>("allreduce_sum_16x4_bf16");
  check_allreduce<tl::MinOp, 32, 2, int64_t>("allreduce_min_32x2_i64");
  check_allreduce<tl::SumOp, 8, 16, int32_t>("allreduce_sum_8x16_i32");
  // Spanning warps, kScale >= 32.
  check_allreduce<tl::SumOp, 2, 32, float>("allreduce_sum_2x32_f32");
  check_allreduce<tl::MaxOp, 4, 64, float>("allreduce_max_4x64_f32");
  check_allreduce<tl::AbsMaxOp, 8, 32, int32_t>("allreduce_absmax_8x32_i32");
  check_allreduce<tl::SumOp, 2, 128, tl::half_t>("allreduce_sum_2x128_f16");
  // Warp-specialised form: threads 128..255 reduce through named barrier 1.
  check_allreduce<tl::SumOp, 64, 2, float, 128, 128>("allreduce_sum_64x2_offset128_namedbar");
  check_allreduce<tl::MaxOp, 2, 32, int32_t, 128, 128>("allreduce_max_2x32_offset128_namedbar");
  check_allreduce<tl::SumOp, 4, 1, float, 128, 128>("allreduce_sum_4x1_offset128_inwarp");
  // Bitwise identical results inside each group for inexact float sums.
  check_allreduce_consistent<4, 1>("allreduce_consistent_4x1");
  check_allreduce_consistent<64, 2>("allreduce_consistent_64x2");
  check_allreduce_consistent<4, 32>("allreduce_consistent_4x32");
  check_allreduce_consistent<256, 1>("allreduce_consistent_256x1");
  check_warp_reduce<float>("warp_reduce_f32");
  check_warp_reduce<double>("warp_reduce_f64");
  check_warp_reduce<tl::half_t>("warp_reduce_f16");
  check_warp_reduce<tl::bfloat16_t>("warp_reduce_bf16");
  check_warp_reduce<int32_t>("warp_reduce_i32");
  check_warp_reduce<uint32_t>("warp_reduce_u32");
  check_warp_reduce<int64_t>("warp_reduce_i64");
  return finish();
}
