// msl_host_simd.h — barriers, SIMD-group functions, simdgroup_matrix and atomics.
// Part of msl_host.h (the MSL execution harness, tests/metal/); include that, not this.
#pragma once

#include "msl_host_fibers.h"
#include "msl_host_types.h"

// ---------------------------------------------------------------------------------------------
// Barriers and SIMD-group functions
// ---------------------------------------------------------------------------------------------
enum class mem_flags : unsigned { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4 };
inline mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(unsigned(a) | unsigned(b)); }

inline void threadgroup_barrier(mem_flags) { msl_host::threadgroup_sync(); }
inline void simdgroup_barrier(mem_flags) { msl_host::simd_sync(1); }

namespace msl_host {
enum SimdOp { kBarrier = 1, kSum, kProd, kMax, kMin, kShuffle, kShuffleXor, kShuffleDown, kShuffleUp, kBroadcast,
              kAll, kAny, kPrefix, kMatrix, kAnd, kOr, kXor };
template <class T, class F>
T simd_reduce(int op, T v, F combine) {
  T all[kSimdWidth];
  int n = simd_exchange(op, v, all);
  T acc = all[0];
  for (int l = 1; l < n; ++l) acc = combine(acc, all[l]);
  return acc;
}
}  // namespace msl_host

template <class T>
T simd_sum(T v) {
  return msl_host::simd_reduce(msl_host::kSum, v, [](T a, T b) { return T(a + b); });
}
template <class T>
T simd_product(T v) {
  return msl_host::simd_reduce(msl_host::kProd, v, [](T a, T b) { return T(a * b); });
}
template <class T>
T simd_max(T v) {
  return msl_host::simd_reduce(msl_host::kMax, v, [](T a, T b) { return max(a, b); });
}
template <class T>
T simd_min(T v) {
  return msl_host::simd_reduce(msl_host::kMin, v, [](T a, T b) { return min(a, b); });
}
template <class T>
T simd_and(T v) {
  return msl_host::simd_reduce(msl_host::kAnd, v, [](T a, T b) { return T(a & b); });
}
template <class T>
T simd_or(T v) {
  return msl_host::simd_reduce(msl_host::kOr, v, [](T a, T b) { return T(a | b); });
}
template <class T>
T simd_xor(T v) {
  return msl_host::simd_reduce(msl_host::kXor, v, [](T a, T b) { return T(a ^ b); });
}
inline bool simd_all(bool v) {
  return msl_host::simd_reduce(msl_host::kAll, v, [](bool a, bool b) { return a && b; });
}
inline bool simd_any(bool v) {
  return msl_host::simd_reduce(msl_host::kAny, v, [](bool a, bool b) { return a || b; });
}
template <class T, class L>
T simd_shuffle(T v, L src_lane) {
  T all[msl_host::kSimdWidth];
  int n = msl_host::simd_exchange(msl_host::kShuffle, v, all);
  int l = int(src_lane);
  if (l < 0 || l >= n) msl_host::fail("simd_shuffle: source lane out of range");
  return all[l];
}
template <class T, class M>
T simd_shuffle_xor(T v, M mask) {
  T all[msl_host::kSimdWidth];
  int n = msl_host::simd_exchange(msl_host::kShuffleXor, v, all);
  int l = msl_host::lane() ^ int(mask);
  if (l < 0 || l >= n) msl_host::fail("simd_shuffle_xor: source lane out of range");
  return all[l];
}
template <class T, class D>
T simd_shuffle_down(T v, D delta) {  // the upper `delta` lanes keep their own value
  T all[msl_host::kSimdWidth];
  int n = msl_host::simd_exchange(msl_host::kShuffleDown, v, all);
  int l = msl_host::lane() + int(delta);
  return l < n ? all[l] : v;
}
template <class T, class D>
T simd_shuffle_up(T v, D delta) {  // the lower `delta` lanes keep their own value
  T all[msl_host::kSimdWidth];
  msl_host::simd_exchange(msl_host::kShuffleUp, v, all);
  int l = msl_host::lane() - int(delta);
  return l >= 0 ? all[l] : v;
}
template <class T, class L>
T simd_broadcast(T v, L src_lane) {
  T all[msl_host::kSimdWidth];
  int n = msl_host::simd_exchange(msl_host::kBroadcast, v, all);
  int l = int(src_lane);
  if (l < 0 || l >= n) msl_host::fail("simd_broadcast: source lane out of range");
  return all[l];
}
template <class T>
T simd_broadcast_first(T v) {
  return simd_broadcast(v, 0);
}
template <class T>
T simd_prefix_inclusive_sum(T v) {
  T all[msl_host::kSimdWidth];
  msl_host::simd_exchange(msl_host::kPrefix, v, all);
  T acc = all[0];
  for (int l = 1; l <= msl_host::lane(); ++l) acc = T(acc + all[l]);
  return acc;
}
template <class T>
T simd_prefix_exclusive_sum(T v) {
  T all[msl_host::kSimdWidth];
  msl_host::simd_exchange(msl_host::kPrefix, v, all);
  T acc = T(0);
  for (int l = 0; l < msl_host::lane(); ++l) acc = T(acc + all[l]);
  return acc;
}

// ---------------------------------------------------------------------------------------------
// simdgroup_matrix<T, Cols, Rows> (8x8): each lane holds two elements of one row
// ---------------------------------------------------------------------------------------------
namespace msl_host {
inline int mat_row(int l) { return ((l / 4) & 4) + (l / 2) % 4; }
inline int mat_col(int l) { return ((l / 4) & 2) * 2 + (l % 2) * 2; }
}  // namespace msl_host

template <class T, int Cols, int Rows>
struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "the harness models 8x8 simdgroup matrices");
  vec<T, 2> e;
  simdgroup_matrix() = default;
  explicit simdgroup_matrix(T diagonal) {  // a diagonal matrix (MSL spec)
    int r = msl_host::mat_row(msl_host::lane()), c = msl_host::mat_col(msl_host::lane());
    e.x = r == c ? diagonal : T(0);
    e.y = r == c + 1 ? diagonal : T(0);
  }
  vec<T, 2>& thread_elements() { return e; }
  const vec<T, 2>& thread_elements() const { return e; }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

template <class T, int Cols, int Rows>
simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(T value) {
  simdgroup_matrix<T, Cols, Rows> m;
  m.e = vec<T, 2>(value);
  return m;
}

// Element (row r, column c) of the matrix at `src` + `origin` (x = column, y = row):
// src[(origin.y + r) * elements_per_row + origin.x + c]; transposed, rows and columns swap.
template <class T, class P, int Cols, int Rows>
void simdgroup_load(simdgroup_matrix<T, Cols, Rows>& d, const P* src, ulong elements_per_row = Cols,
                    vec<ulong, 2> origin = vec<ulong, 2>(0), bool transpose = false) {
  static_assert(std::is_same_v<std::remove_cv_t<P>, T>, "simdgroup_load: pointer and matrix element types differ");
  msl_host::simd_sync(msl_host::kMatrix);  // a SIMD-group function: every lane takes part
  int r = msl_host::mat_row(msl_host::lane()), c = msl_host::mat_col(msl_host::lane());
  for (int j = 0; j < 2; ++j) {
    ulong row = transpose ? ulong(c + j) : ulong(r), col = transpose ? ulong(r) : ulong(c + j);
    d.e[j] = src[(origin.y + row) * elements_per_row + origin.x + col];
  }
}

template <class T, class P, int Cols, int Rows>
void simdgroup_store(const simdgroup_matrix<T, Cols, Rows>& a, P* dst, ulong elements_per_row = Cols,
                     vec<ulong, 2> origin = vec<ulong, 2>(0), bool transpose = false) {
  static_assert(std::is_same_v<P, T>, "simdgroup_store: pointer and matrix element types differ");
  msl_host::simd_sync(msl_host::kMatrix);
  int r = msl_host::mat_row(msl_host::lane()), c = msl_host::mat_col(msl_host::lane());
  for (int j = 0; j < 2; ++j) {
    ulong row = transpose ? ulong(c + j) : ulong(r), col = transpose ? ulong(r) : ulong(c + j);
    dst[(origin.y + row) * elements_per_row + origin.x + col] = a.e[j];
  }
}

namespace msl_host {
struct MatPair {
  float a[2], b[2];
};
// d = a * b + c over the SIMD-group (float accumulation, rounded to d's type)
template <class TD, class TA, class TB, class TC>
void mma(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a, const simdgroup_matrix<TB, 8, 8>& b,
         const simdgroup_matrix<TC, 8, 8>* c) {
  MatPair mine{{float(a.e.x), float(a.e.y)}, {float(b.e.x), float(b.e.y)}};
  MatPair all[kSimdWidth];
  int n = simd_exchange(kMatrix, mine, all);
  if (n != kSimdWidth) fail("simdgroup_multiply_accumulate needs a full SIMD-group of 32 lanes");
  float A[8][8], B[8][8];
  for (int l = 0; l < kSimdWidth; ++l)
    for (int j = 0; j < 2; ++j) {
      A[mat_row(l)][mat_col(l) + j] = all[l].a[j];
      B[mat_row(l)][mat_col(l) + j] = all[l].b[j];
    }
  int r = mat_row(lane()), col = mat_col(lane());
  for (int j = 0; j < 2; ++j) {
    float acc = c ? float(c->e[j]) : 0.0f;
    for (int k = 0; k < 8; ++k) acc += A[r][k] * B[k][col + j];
    d.e[j] = TD(acc);
  }
}
}  // namespace msl_host

template <class TD, class TA, class TB, class TC>
void simdgroup_multiply_accumulate(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                                   const simdgroup_matrix<TB, 8, 8>& b, const simdgroup_matrix<TC, 8, 8>& c) {
  simdgroup_matrix<TC, 8, 8> c_in = c;  // d may alias c
  msl_host::mma(d, a, b, &c_in);
}
template <class TD, class TA, class TB>
void simdgroup_multiply(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                        const simdgroup_matrix<TB, 8, 8>& b) {
  msl_host::mma<TD, TA, TB, TD>(d, a, b, nullptr);
}

// ---------------------------------------------------------------------------------------------
// Atomics (fibers of one threadgroup never run at the same time: plain read-modify-write)
// ---------------------------------------------------------------------------------------------
enum memory_order { memory_order_relaxed = 0 };
template <class T>
struct msl_atomic {
  T v;
};
template <class T>
using atomic = msl_atomic<T>;
typedef msl_atomic<int> atomic_int;
typedef msl_atomic<uint> atomic_uint;
typedef msl_atomic<float> atomic_float;
typedef msl_atomic<bool> atomic_bool;

#define MSL_HOST_ATOMIC_RMW(NAME, EXPR)                                          \
  template <class T, class U>                                                    \
  T atomic_fetch_##NAME##_explicit(volatile msl_atomic<T>* o, U arg, memory_order) { \
    T old = o->v;                                                                \
    T b = T(arg);                                                                \
    o->v = EXPR;                                                                 \
    return old;                                                                  \
  }
MSL_HOST_ATOMIC_RMW(add, T(old + b))
MSL_HOST_ATOMIC_RMW(sub, T(old - b))
MSL_HOST_ATOMIC_RMW(max, (old < b ? b : old))
MSL_HOST_ATOMIC_RMW(min, (b < old ? b : old))
MSL_HOST_ATOMIC_RMW(and, T(old & b))
MSL_HOST_ATOMIC_RMW(or, T(old | b))
MSL_HOST_ATOMIC_RMW(xor, T(old ^ b))
#undef MSL_HOST_ATOMIC_RMW
template <class T>
T atomic_load_explicit(volatile msl_atomic<T>* o, memory_order) {
  return o->v;
}
template <class T, class U>
void atomic_store_explicit(volatile msl_atomic<T>* o, U v, memory_order) {
  o->v = T(v);
}
template <class T, class U>
T atomic_exchange_explicit(volatile msl_atomic<T>* o, U v, memory_order) {
  T old = o->v;
  o->v = T(v);
  return old;
}
template <class T, class U>
bool atomic_compare_exchange_weak_explicit(volatile msl_atomic<T>* o, T* expected, U desired, memory_order,
                                           memory_order) {
  if (o->v == *expected) {
    o->v = T(desired);
    return true;
  }
  *expected = o->v;
  return false;
}
