// tl::atomic_add / max / min for every scalar type and memory order, vector
// atomics (half2, bfloat162, float2, float4), shared-memory atomics, returned
// old values, and a release / acquire message-passing check.
#include <algorithm>
#include <limits>
#include <type_traits>

#include "harness.h"
#include "tl/all.h"

using namespace tl_test;

constexpr int kThreads = 256;
constexpr int kSlots = 4;

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
T from_double(double v) {
  if constexpr (std::is_same_v<T, tl::half_t>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, tl::bfloat16_t>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// op: 0 add, 1 max, 2 min.  Thread i updates slot i % kSlots with vals[i].
template <class T>
__global__ void rmw_kernel(T* acc, const T* vals, int op, int order) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  T* p = acc + i % kSlots;
  if (op == 0) {
    tl::atomic_add(p, vals[i], order);
  } else if (op == 1) {
    tl::atomic_max(p, vals[i], order);
  } else {
    tl::atomic_min(p, vals[i], order);
  }
}

// One thread: each op returns the previous value.
template <class T>
__global__ void old_value_kernel(T* acc, T v, T* olds) {
  olds[0] = tl::atomic_add(acc + 0, v);
  olds[1] = tl::atomic_max(acc + 1, v);
  olds[2] = tl::atomic_min(acc + 2, v);
  olds[3] = tl::atomic_add(acc + 3, v, tl::kMemoryOrderSeqCst);
}

// Values for the test of type T: integers (exact sums) plus, for floating
// types, negative fractions and infinities for max / min.
template <class T>
std::vector<double> make_values(int op, Rng& rng) {
  std::vector<double> v(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    if constexpr (std::is_same_v<T, tl::half_t> || std::is_same_v<T, tl::bfloat16_t>) {
      v[i] = op == 0 ? rng.range(-4, 4) : rng.range(-64, 64) * 0.25;
    } else if constexpr (std::is_floating_point_v<T>) {
      v[i] = op == 0 ? rng.range(-1000, 1000) : rng.range(-100000, 100000) * 0.125;
    } else if constexpr (std::is_unsigned_v<T>) {
      // spans the sign bit of the 32 / 64-bit representation
      v[i] = op == 0 ? rng.range(0, 1000) : static_cast<double>(rng.next()) * (sizeof(T) == 8 ? 4096.0 : 1.0);
    } else {
      v[i] = op == 0 ? rng.range(-1000, 1000) : static_cast<double>(static_cast<int32_t>(rng.next())) * (sizeof(T) == 8 ? 4096.0 : 1.0);
    }
  }
  if constexpr (!std::is_integral_v<T>) {
    if (op != 0) {
      // slot 1: every value negative (max must be the least negative one);
      // slot 2 gets +inf, slot 3 gets -inf.
      for (int i = 1; i < kThreads; i += kSlots) v[i] = -std::fabs(v[i]) - 0.5;
      v[2] = std::numeric_limits<double>::infinity();
      v[7] = -std::numeric_limits<double>::infinity();
    }
  }
  return v;
}

template <class T>
void check_rmw(const char* tname) {
  for (int op = 0; op < 3; ++op) {
    for (int order = 0; order <= 5; ++order) {
      if (op != 0 && order != 0 && order != 3 && order != 5) continue;  // keep the run short
      Rng rng(op * 17 + order + sizeof(T));
      std::vector<double> v = make_values<T>(op, rng);
      std::vector<T> vals(kThreads), init(kSlots);
      for (int i = 0; i < kThreads; ++i) vals[i] = from_double<T>(v[i]);
      // initial values: slot 0 = 3 (or -inf for max), slot 1 = -1e4 (or lowest), ...
      std::vector<double> init_d(kSlots);
      for (int s = 0; s < kSlots; ++s) {
        if constexpr (std::is_integral_v<T>) {
          init_d[s] = op == 1 ? 0.0 + (std::is_signed_v<T> ? -5.0 : 5.0) : (op == 2 ? 1000000.0 : 3.0);
        } else {
          const double inf = std::numeric_limits<double>::infinity();
          init_d[s] = op == 1 ? (s == 0 ? -inf : -1e4) : (op == 2 ? (s == 0 ? inf : 1e4) : 3.0);
          if (op == 1 && s == 1) init_d[s] = -std::numeric_limits<double>::infinity();
        }
        init[s] = from_double<T>(init_d[s]);
      }
      DeviceBuffer<T> dacc(init), dvals(vals);
      rmw_kernel<T><<<kThreads / 64, 64>>>(dacc.ptr, dvals.ptr, op, order);
      char name[128];
      std::snprintf(name, sizeof(name), "atomic_%s_%s_order%d", op == 0 ? "add" : op == 1 ? "max" : "min", tname, order);
      sync_or_die(name);
      std::vector<T> got = dacc.download();
      Check check(name);
      for (int s = 0; s < kSlots; ++s) {
        double want = as_double(init[s]);
        for (int i = s; i < kThreads; i += kSlots) {
          const double x = as_double(vals[i]);
          want = op == 0 ? want + x : op == 1 ? std::max(want, x) : std::min(want, x);
        }
        if constexpr (std::is_integral_v<T>) {
          // compare in the integer domain (wrap-around for unsigned sums)
          T w = static_cast<T>(init[s]);
          for (int i = s; i < kThreads; i += kSlots) {
            w = op == 0 ? static_cast<T>(w + vals[i]) : op == 1 ? std::max(w, vals[i]) : std::min(w, vals[i]);
          }
          check.expect(got[s] == w, "slot %d got %lld want %lld", s, (long long)got[s], (long long)w);
        } else {
          check.expect(as_double(got[s]) == want, "slot %d got %g want %g", s, as_double(got[s]), want);
        }
      }
    }
  }
  {
    std::vector<T> init = {from_double<T>(5), from_double<T>(-2), from_double<T>(9), from_double<T>(1)};
    if constexpr (std::is_unsigned_v<T>) init[1] = from_double<T>(2);
    const T v = from_double<T>(4);
    DeviceBuffer<T> dacc(init), olds(4);
    old_value_kernel<T><<<1, 1>>>(dacc.ptr, v, olds.ptr);
    char name[128];
    std::snprintf(name, sizeof(name), "atomic_returns_old_%s", tname);
    sync_or_die(name);
    std::vector<T> o = olds.download(), a = dacc.download();
    Check check(name);
    for (int s = 0; s < 4; ++s) check.expect(as_double(o[s]) == as_double(init[s]), "old[%d]", s);
    check.expect(as_double(a[0]) == as_double(init[0]) + 4, "add result");
    check.expect(as_double(a[1]) == std::max(as_double(init[1]), 4.0), "max result");
    check.expect(as_double(a[2]) == 4.0, "min result");
  }
}

// Vector atomics: thread i adds (i % 5 - 2, 1) style values to 4 vectors.
__global__ void vector_kernel(tl::half_t* h, tl::bfloat16_t* b, float* f2, float* f4, int order) {
  const int i = threadIdx.x;
  const float x = static_cast<float>(i % 5 - 2), y = 1.0f;
  const int slot = i % kSlots;
  if (i % 2 == 0) {
    tl::atomic_add_x2(h + 2 * slot, __floats2half2_rn(x, y), order);
    tl::atomic_add_x2(b + 2 * slot, __floats2bfloat162_rn(x, y), order);
    tl::atomic_add_x2(f2 + 2 * slot, make_float2(x, y), order);
    tl::atomic_add_x4(f4 + 4 * slot, make_float4(x, y, -x, 2.0f * y), order);
  } else {
    const tl::half_t hv[2] = {__float2half(x), __float2half(y)};
    const tl::bfloat16_t bv[2] = {__float2bfloat16(x), __float2bfloat16(y)};
    const float fv[4] = {x, y, -x, 2.0f * y};
    tl::atomic_add_x2(h + 2 * slot, hv, order);
    tl::atomic_add_x2(b + 2 * slot, bv, order);
    tl::atomic_add_x2(f2 + 2 * slot, fv, order);
    tl::atomic_add_x4(f4 + 4 * slot, fv, order);
  }
}

__global__ void vector_old_kernel(tl::half_t* h, float* f4, float* out) {
  __half2 o = tl::atomic_add_x2(h, __floats2half2_rn(1.f, 2.f));
  float4 q = tl::atomic_add_x4(f4, make_float4(1.f, 2.f, 3.f, 4.f));
  out[0] = __low2float(o);
  out[1] = __high2float(o);
  out[2] = q.x;
  out[3] = q.w;
}

void check_vectors() {
  for (int order : {0, 4}) {
    DeviceBuffer<tl::half_t> h(2 * kSlots);
    DeviceBuffer<tl::bfloat16_t> b(2 * kSlots);
    DeviceBuffer<float> f2(2 * kSlots), f4(4 * kSlots);
    h.fill_bytes(0);
    b.fill_bytes(0);
    f2.fill_bytes(0);
    f4.fill_bytes(0);
    vector_kernel<<<1, kThreads>>>(h.ptr, b.ptr, f2.ptr, f4.ptr, order);
    char name[64];
    std::snprintf(name, sizeof(name), "atomic_add_vector_order%d", order);
    sync_or_die(name);
    auto hh = h.download();
    auto bb = b.download();
    auto ff2 = f2.download();
    auto ff4 = f4.download();
    Check check(name);
    for (int s = 0; s < kSlots; ++s) {
      double sx = 0, sy = 0;
      for (int i = s; i < kThreads; i += kSlots) {
        sx += i % 5 - 2;
        sy += 1;
      }
      check.expect(__half2float(hh[2 * s]) == sx && __half2float(hh[2 * s + 1]) == sy, "half2 slot %d", s);
      check.expect(__bfloat162float(bb[2 * s]) == sx && __bfloat162float(bb[2 * s + 1]) == sy, "bf162 slot %d", s);
      check.expect(ff2[2 * s] == sx && ff2[2 * s + 1] == sy, "float2 slot %d", s);
      check.expect(ff4[4 * s] == sx && ff4[4 * s + 1] == sy && ff4[4 * s + 2] == -sx && ff4[4 * s + 3] == 2 * sy,
                   "float4 slot %d", s);
    }
  }
  {
    std::vector<tl::half_t> h0 = {__float2half(0.5f), __float2half(-1.f)};
    std::vector<float> f0 = {10.f, 20.f, 30.f, 40.f};
    DeviceBuffer<tl::half_t> h(h0);
    DeviceBuffer<float> f4(f0), out(4);
    vector_old_kernel<<<1, 1>>>(h.ptr, f4.ptr, out.ptr);
    sync_or_die("vector_old");
    auto o = out.download();
    auto hh = h.download();
    Check check("atomic_add_vector_returns_old");
    check.expect(o[0] == 0.5f && o[1] == -1.f && o[2] == 10.f && o[3] == 40.f, "old values %g %g %g %g", o[0], o[1],
                 o[2], o[3]);
    check.expect(__half2float(hh[0]) == 1.5f && __half2float(hh[1]) == 1.f, "half2 result");
  }
}

// Shared-memory atomics.
__global__ void shared_kernel(float* out) {
  __shared__ float sf[2];
  __shared__ tl::half_t sh[2];
  __shared__ int si;
  if (threadIdx.x == 0) {
    sf[0] = 0.f;
    sf[1] = -1e30f;
    sh[0] = __float2half(-1000.f);
    sh[1] = __float2half(1000.f);
    si = 0;
  }
  __syncthreads();
  const float v = static_cast<float>(threadIdx.x) - 100.f;
  tl::atomic_add(&sf[0], 1.0f);
  tl::atomic_max(&sf[1], -v, tl::kMemoryOrderAcqRel);
  tl::atomic_max(&sh[0], __float2half(v));
  tl::atomic_min(&sh[1], __float2half(v), tl::kMemoryOrderRelaxed);
  tl::atomic_add(&si, static_cast<int>(threadIdx.x), tl::kMemoryOrderAcquire);
  __syncthreads();
  if (threadIdx.x == 0) {
    out[0] = sf[0];
    out[1] = sf[1];
    out[2] = __half2float(sh[0]);
    out[3] = __half2float(sh[1]);
    out[4] = static_cast<float>(si);
  }
}

void check_shared() {
  DeviceBuffer<float> out(5);
  shared_kernel<<<1, kThreads>>>(out.ptr);
  sync_or_die("shared");
  auto o = out.download();
  Check check("atomic_shared_memory");
  const float want[5] = {256.f, 100.f, 155.f, -100.f, 255.f * 256.f / 2.f};
  for (int i = 0; i < 5; ++i) check.expect(o[i] == want[i], "value %d got %g want %g", i, o[i], want[i]);
}

// Message passing: block 0 writes data then releases a flag; block 1 acquires
// the flag and must observe the data.  mode 0: atomic_store / atomic_load;
// mode 1: atomic_add(release) / atomic_add(+0, acquire); mode 2: seq_cst.
constexpr int kMsg = 1024;
__global__ void message_kernel(int* data, int* flag, int* result, int mode) {
  if (threadIdx.x != 0) return;
  if (blockIdx.x == 0) {
    for (int i = 0; i < kMsg; ++i) data[i] = i * 3 + 1;
    if (mode == 0) {
      tl::atomic_store(flag, 1, tl::kMemoryOrderRelease);
    } else if (mode == 1) {
      tl::atomic_add(flag, 1, tl::kMemoryOrderRelease);
    } else {
      tl::atomic_store(flag, 1, tl::kMemoryOrderSeqCst);
    }
  } else {
    long long spins = 0;
    while (true) {
      int f;
      if (mode == 0) {
        f = tl::atomic_load(flag, tl::kMemoryOrderAcquire);
      } else if (mode == 1) {
        f = tl::atomic_add(flag, 0, tl::kMemoryOrderAcquire);
      } else {
        f = tl::atomic_load(flag, tl::kMemoryOrderSeqCst);
      }
      if (f == 1) break;
      if (++spins > (1ll << 28)) {
        result[0] = -1;  // timed out
        return;
      }
    }
    int bad = 0;
    for (int i = 0; i < kMsg; ++i) bad += data[i] != i * 3 + 1;
    result[0] = bad;
  }
}

void check_message_passing() {
  for (int mode = 0; mode < 3; ++mode) {
    DeviceBuffer<int> data(kMsg), flag(1), result(1);
    data.fill_bytes(0);
    flag.fill_bytes(0);
    result.fill_bytes(0xFF);
    message_kernel<<<2, 32>>>(data.ptr, flag.ptr, result.ptr, mode);
    char name[64];
    std::snprintf(name, sizeof(name), "atomic_release_acquire_mode%d", mode);
    sync_or_die(name);
    Check check(name);
    const int r = result.download()[0];
    check.expect(r == 0, "result %d (-1: timeout, >0: stale data)", r);
  }
}

// atomic_load / atomic_store round trips for 4- and 8-byte types.
__global__ void load_store_kernel(const double* din, double* dout, const long long* lin, long long* lout,
                                  const float* fin, float* fout) {
  for (int o = 0; o <= 5; ++o) {
    tl::atomic_store(dout + o, tl::atomic_load(din + o, o), o);
    tl::atomic_store(lout + o, tl::atomic_load(lin + o, o), o);
    tl::atomic_store(fout + o, tl::atomic_load(fin + o, o), o);
  }
}

void check_load_store() {
  std::vector<double> d(6);
  std::vector<long long> l(6);
  std::vector<float> f(6);
  for (int i = 0; i < 6; ++i) {
    d[i] = -1.25e300 * (i + 1);
    l[i] = (1ll << 40) * (i + 1) - 7;
    f[i] = -3.5f * (i + 1);
  }
  DeviceBuffer<double> din(d), dout(6);
  DeviceBuffer<long long> lin(l), lout(6);
  DeviceBuffer<float> fin(f), fout(6);
  load_store_kernel<<<1, 1>>>(din.ptr, dout.ptr, lin.ptr, lout.ptr, fin.ptr, fout.ptr);
  sync_or_die("load_store");
  auto dd = dout.download();
  auto ll = lout.download();
  auto ff = fout.download();
  Check check("atomic_load_store");
  for (int i = 0; i < 6; ++i) check.expect(dd[i] == d[i] && ll[i] == l[i] && ff[i] == f[i], "order %d", i);
}

int main() {
  check_rmw<float>("f32");
  check_rmw<double>("f64");
  check_rmw<tl::half_t>("f16");
  check_rmw<tl::bfloat16_t>("bf16");
  check_rmw<int32_t>("i32");
  check_rmw<uint32_t>("u32");
  check_rmw<int64_t>("i64");
  check_rmw<uint64_t>("u64");
  check_vectors();
  check_shared();
  check_load_store();
  check_message_passing();
  return finish();
}
