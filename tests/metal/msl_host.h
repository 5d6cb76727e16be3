// msl_host.h — lets a C++20 compiler (g++ / clang++) compile Metal Shading Language kernels
// UNCHANGED on the CPU, and runs them the way a Metal GPU runs one threadgroup: every Metal
// thread is a fiber (a stack switch of our own on x86-64, ucontext elsewhere), `threadgroup_barrier` is a real barrier over the threadgroup's
// fibers, SIMD-group functions and `simdgroup_matrix` operations exchange values among the 32
// lanes of a SIMD-group in lock step, and threadgroups run one after another.
//
// Test code for TileLang's Metal backend (tests/metal/), not part of the product. Semantics
// follow Apple's Metal Shading Language Specification; where it leaves the distribution of a
// simdgroup_matrix over lanes to the implementation, the layout Apple's GPUs use is modelled
// (lane l holds row (l/4 & 4) + (l/2 % 4), columns (l/4 & 2)*2 + (l%2)*2 + {0, 1}).
//
// Address spaces: `device`, `constant`, `thread` and `threadgroup` expand to nothing (one
// address space on the CPU), so threadgroup pointers and casts compile as written. What
// differs is storage duration: a kernel-scope `threadgroup` variable (`threadgroup float4
// tl_smem4[704];`, `threadgroup union {...} s;`) is ONE object per threadgroup in MSL but a
// local in C++ — so the runner (msl_runner.py: shared_storage) puts `static` in front of
// exactly those declarations, its only change to the kernel text. Threadgroups run one after
// another on one OS thread, so that one object is the threadgroup's memory.
#pragma once

#include "msl_host_types.h"   // half, bfloat, vectors, as_type, math
#include "msl_host_fibers.h"  // the runner: fibers, barriers, SIMD-group lock step
#include "msl_host_simd.h"    // threadgroup_barrier, simd_*, simdgroup_matrix, atomics

// ---------------------------------------------------------------------------------------------
// MSL keywords (last: system headers above must not see them)
// ---------------------------------------------------------------------------------------------
#define kernel
#define device
#define constant
#define thread
#define threadgroup
