// cp.async (4 / 8 / 16 bytes, zero-fill, predicated, group waits) and the
// copy.h vector loads / stores.
#include "harness.h"
#include "tl/all.h"

using namespace tl_test;

constexpr int kBytes = 4096;
constexpr int kThreads = 128;

__device__ __host__ inline uint8_t pattern(int i) { return static_cast<uint8_t>((i * 37 + 11) & 0xFF); }

// Copy kBytes with Bytes-wide cp.async, then every thread dumps shared memory.
template <int Bytes, bool kCacheAll>
__global__ void cp_async_kernel(const uint8_t* g, uint8_t* out) {
  __shared__ alignas(16) uint8_t s[kBytes];
  for (int off = threadIdx.x * Bytes; off < kBytes; off += kThreads * Bytes) {
    tl::cp_async<Bytes, kCacheAll>(s + off, g + off);
  }
  tl::cp_async_commit();
  tl::cp_async_wait<0>();
  __syncthreads();
  for (int i = threadIdx.x; i < kBytes; i += kThreads) out[i] = s[i];
}

template <int Bytes, bool kCacheAll>
void check_cp_async(const char* name, DeviceBuffer<uint8_t>& g) {
  DeviceBuffer<uint8_t> out(kBytes);
  out.fill_bytes(0);
  cp_async_kernel<Bytes, kCacheAll><<<1, kThreads>>>(g.ptr, out.ptr);
  sync_or_die(name);
  std::vector<uint8_t> got = out.download();
  Check check(name);
  for (int i = 0; i < kBytes; ++i) check.expect(got[i] == pattern(i), "byte %d got %u want %u", i, got[i], pattern(i));
}

// Zero fill: chunk c is copied iff c % 3 != 0; shared memory starts as 0xAB.
// mode 0: cp_async_zfill with a valid source pointer for false predicates
// mode 1: cp_async_pred (false predicate leaves 0xAB)
// mode 2: cp_async_zfill with a null source pointer for false predicates
template <int Bytes>
__global__ void zfill_kernel(const uint8_t* g, uint8_t* out, int mode) {
  __shared__ alignas(16) uint8_t s[kBytes];
  for (int i = threadIdx.x; i < kBytes; i += kThreads) s[i] = 0xAB;
  __syncthreads();
  for (int off = threadIdx.x * Bytes; off < kBytes; off += kThreads * Bytes) {
    const bool pred = (off / Bytes) % 3 != 0;
    if (mode == 0) {
      tl::cp_async_zfill<Bytes>(s + off, g + off, pred);
    } else if (mode == 1) {
      tl::cp_async_pred<Bytes>(s + off, g + off, pred);
    } else {
      tl::cp_async_zfill<Bytes>(s + off, pred ? g + off : nullptr, pred);
    }
  }
  tl::cp_async_commit();
  tl::cp_async_wait_all();
  __syncthreads();
  for (int i = threadIdx.x; i < kBytes; i += kThreads) out[i] = s[i];
}

template <int Bytes>
void check_zfill(const char* name, DeviceBuffer<uint8_t>& g, int mode) {
  DeviceBuffer<uint8_t> out(kBytes);
  zfill_kernel<Bytes><<<1, kThreads>>>(g.ptr, out.ptr, mode);
  sync_or_die(name);
  std::vector<uint8_t> got = out.download();
  Check check(name);
  for (int i = 0; i < kBytes; ++i) {
    const bool pred = (i / Bytes) % 3 != 0;
    const uint8_t want = pred ? pattern(i) : (mode == 1 ? 0xAB : 0);
    check.expect(got[i] == want, "byte %d got %u want %u", i, got[i], want);
  }
}

// Two commit groups: after cp_async_wait<1>() the first group is complete.
__global__ void wait_group_kernel(const uint8_t* g, uint8_t* out) {
  __shared__ alignas(16) uint8_t s[2 * kBytes];
  for (int off = threadIdx.x * 16; off < kBytes; off += kThreads * 16) tl::cp_async<16>(s + off, g + off);
  tl::cp_async_commit();
  for (int off = threadIdx.x * 16; off < kBytes; off += kThreads * 16) tl::cp_async<16>(s + kBytes + off, g + off);
  tl::cp_async_commit();
  tl::cp_async_wait<1>();
  // Each thread checks its own first-group chunks (visible to the issuing thread).
  int bad = 0;
  for (int off = threadIdx.x * 16; off < kBytes; off += kThreads * 16) {
    for (int j = 0; j < 16; ++j) bad += s[off + j] != g[off + j];
  }
  tl::cp_async_wait<0>();
  __syncthreads();
  for (int i = threadIdx.x; i < kBytes; i += kThreads) out[i] = s[kBytes + i];
  if (bad) out[kBytes + threadIdx.x] = 1;
}

// copy.h: every named and templated form.  Thread t handles 16-byte chunk t;
// chunks with t % 4 == 3 are "out of bounds" for the predicated forms.
__global__ void copy_kernel(const uint8_t* g, uint8_t* out) {
  __shared__ alignas(16) uint8_t s[kBytes];
  const int t = threadIdx.x;
  const bool p = t % 4 != 3;
  const int off = t * 16;
  // global -> registers -> shared (region 0: 0 .. 2047)
  uint4 a = tl::ld_global_128(g + off);
  tl::st_shared_128(s + off, a);
  // region 1 (2048 ..): predicated 64 / 32-bit loads, predicated shared stores
  uint2 b = tl::ld_global_64_pred(g + 2048 + off, p);
  uint32_t c = tl::ld_global_32_pred(g + 2048 + off + 8, p);
  uint32_t d = tl::ld_global_32(g + 2048 + off + 12);
  tl::st_shared_64(s + 2048 + off, b);
  tl::st_shared_32(s + 2048 + off + 8, c);
  tl::st_shared_32_pred(s + 2048 + off + 12, d, true);
  __syncthreads();
  // shared -> global (out region 0: plain copies; region 1: predicated stores)
  uint4 x = tl::ld_shared_128(s + off);
  tl::st_global_128(out + off, x);
  uint4 y = tl::ld_shared_128_pred(s + 2048 + off, true);
  tl::st_global_128_pred(out + 2048 + off, y, p);
  // out region 2 (4096 ..): templated, nc and copy_vec forms
  uint2 e = tl::ld_shared_64(s + off);
  uint32_t f = tl::ld_shared_32_pred(s + off + 8, p);
  tl::st_global_64(out + 4096 + off, e);
  tl::st_global_32(out + 4096 + off + 8, f);
  tl::st_global_32_pred(out + 4096 + off + 12, tl::ld_global_nc_32(g + off + 12), true);
  tl::st_global_64_pred(out + 6144 + off, tl::ld_global_nc_64(g + off), p);
  tl::st<8>(out + 6144 + off + 8, tl::ld_pred<8>(g + off + 8, p));
  tl::copy_vec<16>(out + 8192 + off, g + off);
  tl::copy_vec_pred<16>(out + 10240 + off, g + off, p);
  tl::st_pred<16>(out + 12288 + off, tl::ld_global_nc_128(g + off), p);
  tl::copy_vec<4>(out + 14336 + off, s + off);
  tl::copy_vec<2>(out + 14336 + off + 4, g + off + 4);
  tl::copy_vec<1>(out + 14336 + off + 6, g + off + 6);
  tl::st<1>(out + 14336 + off + 7, tl::ld<1>(g + off + 7));
  tl::st_shared_64_pred(s + off, b, false);  // must not write
  __syncthreads();
  tl::st<8>(out + 14336 + off + 8, tl::ld<8>(s + off));
}

void check_copy(DeviceBuffer<uint8_t>& g) {
  constexpr int kOut = 16384;
  DeviceBuffer<uint8_t> out(kOut);
  out.fill_bytes(0xCD);
  copy_kernel<<<1, kThreads>>>(g.ptr, out.ptr);
  sync_or_die("copy");
  std::vector<uint8_t> got = out.download();
  Check check("copy_vector_loads_stores");
  for (int t = 0; t < kThreads; ++t) {
    const bool p = t % 4 != 3;
    for (int j = 0; j < 16; ++j) {
      const int i = t * 16 + j;
      auto want_eq = [&](int region, uint8_t want) {
        check.expect(got[region + i] == want, "region %d thread %d byte %d got %u want %u", region, t, j, got[region + i],
                     want);
      };
      want_eq(0, pattern(i));
      // region 1: bytes 0..11 come from predicated loads (zeros when !p), the
      // store itself is predicated on p.
      if (p) {
        want_eq(2048, pattern(2048 + i));
      } else {
        want_eq(2048, 0xCD);
      }
      // region 2: bytes 0..7 plain, 8..11 predicated load (zero when !p), 12..15 nc load
      want_eq(4096, (j >= 8 && j < 12 && !p) ? 0 : pattern(i));
      // region 3: bytes 0..7 predicated store, 8..15 predicated load (zeros)
      if (j < 8) {
        want_eq(6144, p ? pattern(i) : 0xCD);
      } else {
        want_eq(6144, p ? pattern(i) : 0);
      }
      want_eq(8192, pattern(i));
      want_eq(10240, p ? pattern(i) : 0);
      want_eq(12288, p ? pattern(i) : 0xCD);
      // region 7: bytes 8..15 re-read shared bytes 0..7 after the
      // false-predicated store, which must not have written them.
      want_eq(14336, j < 8 ? pattern(i) : pattern(i - 8));
    }
  }
}

int main() {
  std::vector<uint8_t> host(2 * kBytes);
  for (int i = 0; i < 2 * kBytes; ++i) host[i] = pattern(i);
  DeviceBuffer<uint8_t> g(host);

  check_cp_async<4, false>("cp_async_4", g);
  check_cp_async<8, false>("cp_async_8", g);
  check_cp_async<16, false>("cp_async_16_cg", g);
  check_cp_async<16, true>("cp_async_16_ca", g);
  check_zfill<4>("cp_async_zfill_4", g, 0);
  check_zfill<8>("cp_async_zfill_8", g, 0);
  check_zfill<16>("cp_async_zfill_16", g, 0);
  check_zfill<16>("cp_async_pred_16", g, 1);
  check_zfill<8>("cp_async_pred_8", g, 1);
  {
    DeviceBuffer<uint8_t> out(kBytes + kThreads);
    out.fill_bytes(0);
    wait_group_kernel<<<1, kThreads>>>(g.ptr, out.ptr);
    sync_or_die("cp_async_wait_group");
    std::vector<uint8_t> got = out.download();
    Check check("cp_async_wait_group");
    for (int i = 0; i < kBytes; ++i) check.expect(got[i] == pattern(i), "second group byte %d", i);
    for (int t = 0; t < kThreads; ++t) check.expect(got[kBytes + t] == 0, "thread %d saw an incomplete first group", t);
  }
  check_copy(g);
  // Last, because a fault would abort the program: a false predicate must not
  // dereference the (here null) source pointer.
  check_zfill<16>("cp_async_zfill_16_null_source", g, 2);
  return finish();
}
