// msl_host_fibers.h — the runner: one fiber per Metal thread, the threadgroup barrier, SIMD-group lock step.
// Part of msl_host.h (the MSL execution harness, tests/metal/); include that, not this.
#pragma once

#include <ucontext.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "msl_host_types.h"

// ---------------------------------------------------------------------------------------------
// The runner: fibers, the threadgroup barrier, SIMD-group lock step
// ---------------------------------------------------------------------------------------------
namespace msl_host {
constexpr int kSimdWidth = 32;
constexpr int kMaxThreads = 1024;
constexpr size_t kStackBytes = 256 * 1024;
constexpr int kSlotBytes = 64;

struct SimdGroup {
  int size = 0;      // lanes in this SIMD-group (the last one of a threadgroup may be partial)
  int arrived = 0;   // lanes waiting at the current collective
  int returned = 0;  // lanes whose kernel invocation has returned
  int op = 0;        // which collective the waiting lanes are at (all lanes must agree)
  int at_barrier = 0;  // lanes waiting at threadgroup_barrier
  unsigned gen = 0;  // bumped when a collective releases its lanes
  // two banks: collective k writes bank k % 2, so a lane that is already at collective k + 1
  // never overwrites values a slower lane is still reading from collective k
  alignas(16) unsigned char slots[2][kSimdWidth][kSlotBytes];
};

struct ThreadIds {
  vec<uint, 3> tg_pos, tg_size, grid_groups, local;
  uint linear, simd_index, lane;
};

// Switching fibers. On x86-64 a switch saves the callee-saved registers on the current stack
// and swaps stack pointers (no signal-mask system call, unlike swapcontext: GEMMs switch
// fibers at every SIMD-group matrix operation); elsewhere ucontext does it.
#if defined(__x86_64__) && !defined(MSL_HOST_NO_FAST_SWITCH)
#define MSL_HOST_FAST_SWITCH 1
extern "C" void msl_host_switch(void** save_sp, void* next_sp);
asm(R"(
  .text
  .p2align 4
  .hidden msl_host_switch
  .globl msl_host_switch
  .type msl_host_switch, @function
msl_host_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size msl_host_switch, .-msl_host_switch
)");
#endif

struct State {
  int n = 0, cur = 0, returned = 0;
#if MSL_HOST_FAST_SWITCH
  void* sched_sp = nullptr;
  void* sp[kMaxThreads];
#else
  ucontext_t sched;
  ucontext_t ctx[kMaxThreads];
#endif
  bool finished[kMaxThreads];
  unsigned seq[kMaxThreads];  // collectives each lane has executed (selects the slot bank)
  bool at_barrier[kMaxThreads];  // waiting at a threadgroup_barrier that has not opened yet
  bool reverse = false;  // the order the scheduler runs SIMD-groups ahead in
  char* stacks = nullptr;
  int stacks_for = 0;
  void (*body)(int) = nullptr;
  int tg_arrived = 0;
  unsigned tg_gen = 0;
  SimdGroup simd[kMaxThreads / kSimdWidth];
  vec<uint, 3> tg_pos, tg_size, grid_groups;
  char error[512] = {0};
};
static State S;  // one translation unit (one kernel) per shared library

inline ThreadIds ids(int t) {
  ThreadIds r;
  r.tg_pos = S.tg_pos;
  r.tg_size = S.tg_size;
  r.grid_groups = S.grid_groups;
  uint tx = S.tg_size.x, ty = S.tg_size.y;
  r.local = vec<uint, 3>(uint(t) % tx, (uint(t) / tx) % ty, uint(t) / (tx * ty));
  r.linear = uint(t);
  r.simd_index = uint(t) / kSimdWidth;
  r.lane = uint(t) % kSimdWidth;
  return r;
}

template <class T>
struct vec_traits {
  static constexpr int n = 1;
};
template <class T, int N>
struct vec_traits<vec<T, N>> {
  using elem = T;
  static constexpr int n = N;
};

// a builtin kernel argument of the declared type from a 3-component value (scalars take .x)
template <class T>
T builtin(vec<uint, 3> v) {
  if constexpr (vec_traits<T>::n == 1) {
    return T(v.x);
  } else {
    using E = typename vec_traits<T>::elem;
    if constexpr (vec_traits<T>::n == 2) {
      return T(E(v.x), E(v.y));
    } else {
      return T(E(v.x), E(v.y), E(v.z));
    }
  }
}

inline void to_scheduler() {
#if MSL_HOST_FAST_SWITCH
  msl_host_switch(&S.sp[S.cur], S.sched_sp);
#else
  swapcontext(&S.ctx[S.cur], &S.sched);
#endif
}

inline void yield() { to_scheduler(); }

inline void fail(const char* what) {
  if (!S.error[0]) std::snprintf(S.error, sizeof S.error, "%s", what);
  to_scheduler();  // never resumed: the launch reports the error
}

inline void threadgroup_sync() {
  if (S.returned > 0) {
    char msg[200];
    std::snprintf(msg, sizeof msg,
                  "thread %d reached threadgroup_barrier after another thread of its threadgroup returned", S.cur);
    fail(msg);
  }
  SimdGroup& g = S.simd[S.cur / kSimdWidth];
  if (g.arrived > 0) fail("lanes of a SIMD-group diverged: some at threadgroup_barrier, others at a SIMD-group function");
  unsigned gen = S.tg_gen;
  if (++S.tg_arrived == S.n) {  // the barrier opens for every thread at once
    S.tg_arrived = 0;
    ++S.tg_gen;
    for (int t = 0; t < S.n; ++t) S.at_barrier[t] = false;
    for (int k = 0; k * kSimdWidth < S.n; ++k) S.simd[k].at_barrier = 0;
    return;
  }
  ++g.at_barrier;
  S.at_barrier[S.cur] = true;  // not resumed until the barrier opens
  while (S.tg_gen == gen) yield();
}

// Every lane of the current SIMD-group reaches collective `op` (lock step); returns when all have.
inline void simd_sync(int op) {
  SimdGroup& g = S.simd[S.cur / kSimdWidth];
  if (g.returned > 0) fail("a SIMD-group function was called after another lane of the SIMD-group returned");
  if (g.at_barrier > 0) fail("lanes of a SIMD-group diverged: some at threadgroup_barrier, others at a SIMD-group function");
  if (g.arrived == 0) {
    g.op = op;
  } else if (g.op != op) {
    char msg[200];
    std::snprintf(msg, sizeof msg, "lanes of SIMD-group %d reached different SIMD-group functions (ops %d and %d)",
                  S.cur / kSimdWidth, g.op, op);
    fail(msg);
  }
  unsigned gen = g.gen;
  if (++g.arrived == g.size) {
    g.arrived = 0;
    ++g.gen;
    return;
  }
  while (g.gen == gen) yield();
}

// Lock-step exchange: every lane contributes `v`; returns the lane count and the values of all
// lanes in `all` (all[lane] for lane < count).
template <class T>
int simd_exchange(int op, const T& v, T* all) {
  static_assert(sizeof(T) <= kSlotBytes, "simd_exchange: value too large");
  static_assert(std::is_trivially_copyable_v<T>, "simd_exchange: value must be trivially copyable");
  SimdGroup& g = S.simd[S.cur / kSimdWidth];
  int lane = S.cur % kSimdWidth;
  unsigned bank = S.seq[S.cur]++ & 1u;
  std::memcpy(g.slots[bank][lane], &v, sizeof(T));
  simd_sync(op);
  for (int l = 0; l < g.size; ++l) std::memcpy(&all[l], g.slots[bank][l], sizeof(T));
  return g.size;
}

inline int lane() { return S.cur % kSimdWidth; }

inline void fiber_main(int t) {
  S.body(t);
  S.finished[t] = true;
  ++S.returned;
  SimdGroup& g = S.simd[t / kSimdWidth];
  ++g.returned;
  if (S.tg_arrived > 0) {
    char msg[200];
    std::snprintf(msg, sizeof msg, "thread %d returned while other threads wait at threadgroup_barrier", t);
    fail(msg);
  }
  if (g.arrived > 0) {
    char msg[200];
    std::snprintf(msg, sizeof msg, "lane %d returned while other lanes wait at a SIMD-group function", t % kSimdWidth);
    fail(msg);
  }
}

#if MSL_HOST_FAST_SWITCH
// where a fiber starts (it runs S.cur), and whence it goes back to the scheduler for good
[[noreturn]] inline void fiber_entry() {
  fiber_main(S.cur);
  to_scheduler();
  __builtin_trap();  // a finished fiber is never resumed
}
#endif

// Run one threadgroup of `n` threads to completion; 0 on success, 1 with S.error set.
inline int run_threadgroup(int n, void (*body)(int)) {
  if (n < 1 || n > kMaxThreads) {
    std::snprintf(S.error, sizeof S.error, "threadgroup of %d threads (1 to %d supported)", n, kMaxThreads);
    return 1;
  }
  if (S.stacks_for < n) {
    std::free(S.stacks);
    S.stacks = static_cast<char*>(std::malloc(kStackBytes * size_t(n)));
    S.stacks_for = n;
  }
  S.n = n;
  S.body = body;
  S.returned = 0;
  S.tg_arrived = 0;
  for (int s = 0; s * kSimdWidth < n; ++s) {
    SimdGroup& g = S.simd[s];
    g.size = (n - s * kSimdWidth) < kSimdWidth ? n - s * kSimdWidth : kSimdWidth;
    g.arrived = g.returned = g.op = g.at_barrier = 0;
  }
  for (int t = 0; t < n; ++t) {
    S.finished[t] = false;
    S.at_barrier[t] = false;
    S.seq[t] = 0;
    char* stack = S.stacks + kStackBytes * size_t(t);
#if MSL_HOST_FAST_SWITCH
    // the frame msl_host_switch pops: six registers, then `fiber_entry` as the return address,
    // then a zero "return address" of fiber_entry itself (entry with rsp = 8 mod 16, as a call)
    uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + kStackBytes) & ~uintptr_t(15);
    void** frame = reinterpret_cast<void**>(top) - 8;
    for (int i = 0; i < 6; ++i) frame[i] = nullptr;
    frame[6] = reinterpret_cast<void*>(&fiber_entry);
    frame[7] = nullptr;
    S.sp[t] = frame;
#else
    getcontext(&S.ctx[t]);
    S.ctx[t].uc_stack.ss_sp = stack;
    S.ctx[t].uc_stack.ss_size = kStackBytes;
    S.ctx[t].uc_link = &S.sched;
    makecontext(&S.ctx[t], reinterpret_cast<void (*)()>(&fiber_main), 1, t);
#endif
  }
  // Each SIMD-group in turn runs as far as it can (its lanes in lock step) — to its next
  // threadgroup_barrier or its end — before the next one starts: the largest skew between
  // SIMD-groups a GPU may show, so a missing barrier between them reads stale or unwritten
  // threadgroup memory. `S.reverse` (odd threadgroups) runs the last SIMD-group first.
  int groups = (n + kSimdWidth - 1) / kSimdWidth;
  while (S.returned < n && !S.error[0]) {
    for (int k = 0; k < groups && !S.error[0]; ++k) {
      int sg = S.reverse ? groups - 1 - k : k;
      int end = (sg + 1) * kSimdWidth < n ? (sg + 1) * kSimdWidth : n;
      for (bool ran = true; ran && !S.error[0];) {
        ran = false;
        for (int t = sg * kSimdWidth; t < end && !S.error[0]; ++t) {
          if (S.finished[t] || S.at_barrier[t]) continue;
          S.cur = t;
          ran = true;
#if MSL_HOST_FAST_SWITCH
          msl_host_switch(&S.sched_sp, S.sp[t]);
#else
          swapcontext(&S.sched, &S.ctx[t]);
#endif
        }
      }
    }
  }
  return S.error[0] ? 1 : 0;
}

// Run the grid: threadgroups in x, then y, then z order, one after another.
inline int launch(const unsigned* grid, const unsigned* tg, void (*body)(int)) {
  S.error[0] = 0;
  S.tg_size = vec<uint, 3>(tg[0], tg[1], tg[2]);
  S.grid_groups = vec<uint, 3>(grid[0], grid[1], grid[2]);
  int n = int(tg[0] * tg[1] * tg[2]);
  for (unsigned z = 0; z < grid[2]; ++z)
    for (unsigned y = 0; y < grid[1]; ++y)
      for (unsigned x = 0; x < grid[0]; ++x) {
        S.tg_pos = vec<uint, 3>(x, y, z);
        S.reverse = (x + y + z) % 2 == 1;
        if (run_threadgroup(n, body)) return 1;
      }
  return 0;
}
}  // namespace msl_host
