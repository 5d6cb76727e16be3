"""The MSL execution harness itself, on hand-written MSL kernels checked against torch: a guarded
vector add, a row reduction through simd_sum + threadgroup memory + barriers, an 8x8
simdgroup_matrix GEMM (half in, float accumulate), shuffles, atomics, and the errors the
harness raises for kernels a Metal GPU would run wrongly (a barrier some threads skip)."""

from __future__ import annotations

import pytest
import torch

from .msl_runner import HarnessError, compile_many, compile_msl, parse_kernel

VECTOR_ADD = """
#include <metal_stdlib>
using namespace metal;

kernel void vector_add(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                       device float* c [[buffer(2)]], constant int& n [[buffer(3)]],
                       uint3 bid [[threadgroup_position_in_grid]], uint3 tid [[thread_position_in_threadgroup]]) {
  int i = int(bid.x) * 64 + int(tid.x);
  if (i < n) {
    c[i] = fma(a[i], 2.0f, b[i]) + metal::fast::exp(float(0));
  }
}
"""

ROW_SUM = """
#include <metal_stdlib>
using namespace metal;

// one threadgroup of 128 threads per row: strided partial sums, simd_sum within each
// SIMD-group, the four partials through threadgroup memory, then simd_max of the row's
// absolute values the same way
kernel void row_stats(device const half* x [[buffer(0)]], device float* out [[buffer(1)]],
                      constant int& cols [[buffer(2)]],
                      uint3 bid [[threadgroup_position_in_grid]], uint3 tid [[thread_position_in_threadgroup]],
                      uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float partial[4];
  threadgroup float peak[4];
  float s = 0.0f;
  float m = 0.0f;
  for (int c = int(tid.x); c < cols; c += 128) {
    float v = float(x[bid.x * cols + c]);
    s += v;
    m = max(m, abs(v));
  }
  s = simd_sum(s);
  m = simd_max(m);
  if (lane == 0) {
    partial[sg] = s;
    peak[sg] = m;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid.x == 0) {
    float4 p = float4(partial[0], partial[1], partial[2], partial[3]);
    out[bid.x * 2] = p.x + p.y + p.z + p.w;
    out[bid.x * 2 + 1] = max(max(peak[0], peak[1]), max(peak[2], peak[3]));
  }
}
"""

GEMM_8X8 = """
#include <metal_stdlib>
#include <metal_simdgroup_matrix>
using namespace metal;

// C[M, N] = A[M, K] @ B[K, N]; one SIMD-group per 8x8 tile of C, tiles of A and B staged in
// threadgroup memory (zero-padded at the edges, so M, N, K need not be multiples of 8)
kernel void gemm8(device const half* A [[buffer(0)]], device const half* B [[buffer(1)]],
                  device float* C [[buffer(2)]], constant int& M [[buffer(3)]], constant int& N [[buffer(4)]],
                  constant int& K [[buffer(5)]],
                  uint3 bid [[threadgroup_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  threadgroup half As[64];
  threadgroup half Bs[64];
  threadgroup float Cs[64];
  int m0 = int(bid.y) * 8, n0 = int(bid.x) * 8;
  simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (int k0 = 0; k0 < K; k0 += 8) {
    for (int e = int(lane); e < 64; e += 32) {
      int r = e / 8, c = e % 8;
      As[e] = (m0 + r < M && k0 + c < K) ? A[(m0 + r) * K + k0 + c] : half(0.0f);
      Bs[e] = (k0 + r < K && n0 + c < N) ? B[(k0 + r) * N + n0 + c] : half(0.0f);
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_half8x8 a;
    simdgroup_half8x8 b;
    simdgroup_load(a, As, 8);
    simdgroup_load(b, Bs, 8, ulong2(0, 0), false);
    simdgroup_multiply_accumulate(acc, a, b, acc);
    simdgroup_barrier(mem_flags::mem_threadgroup);
  }
  simdgroup_store(acc, Cs, 8);
  simdgroup_barrier(mem_flags::mem_threadgroup);
  for (int e = int(lane); e < 64; e += 32) {
    int r = e / 8, c = e % 8;
    if (m0 + r < M && n0 + c < N) C[(m0 + r) * N + n0 + c] = Cs[e];
  }
}
"""

SHUFFLE_ATOMIC = """
#include <metal_stdlib>
using namespace metal;

// butterfly all-reduce with simd_shuffle_xor, lane 0 of every SIMD-group adds its sum to a
// float and an int counter atomically, and each lane also writes a value broadcast from lane 5
kernel void shuffle_atomic(device const float* x [[buffer(0)]], device atomic<float>* total [[buffer(1)]],
                           device atomic_int* groups [[buffer(2)]], device float* bcast [[buffer(3)]],
                           uint3 bid [[threadgroup_position_in_grid]], uint3 tid [[thread_position_in_threadgroup]],
                           uint lane [[thread_index_in_simdgroup]]) {
  uint i = bid.x * 64 + tid.x;
  float v = x[i];
  for (ushort mask = 16; mask > 0; mask >>= 1) {
    v += simd_shuffle_xor(v, mask);
  }
  bcast[i] = simd_broadcast(x[i], ushort(5)) + simd_shuffle(x[i], ushort(lane ^ 1)) * 0.0f;
  if (lane == 0) {
    atomic_fetch_add_explicit(total, v, memory_order_relaxed);
    atomic_fetch_add_explicit(groups, 1, memory_order_relaxed);
  }
}
"""

DIVERGENT_BARRIER = """
#include <metal_stdlib>
using namespace metal;

kernel void divergent(device float* x [[buffer(0)]], uint3 tid [[thread_position_in_threadgroup]]) {
  if (tid.x < 16) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  x[tid.x] = 1.0f;
}
"""

DIVERGENT_SIMD = """
#include <metal_stdlib>
using namespace metal;

kernel void divergent_simd(device float* x [[buffer(0)]], uint lane [[thread_index_in_simdgroup]]) {
  if (lane < 8) {
    x[lane] = simd_sum(x[lane]);
  } else {
    x[lane] = simd_max(x[lane]);
  }
}
"""


EXCHANGE = """
#include <metal_stdlib>
using namespace metal;

// each thread reads what a thread of the other SIMD-group wrote: right only with the barrier
kernel void exchange(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                     constant int& with_barrier [[buffer(2)]],
                     uint3 bid [[threadgroup_position_in_grid]], uint3 tid [[thread_position_in_threadgroup]]) {
  threadgroup float buf[64];
  buf[tid.x] = x[bid.x * 64 + tid.x];
  if (with_barrier != 0) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  y[bid.x * 64 + tid.x] = buf[(tid.x + 32) % 64];
}
"""


MATRIX_LAYOUT = """
#include <metal_stdlib>
using namespace metal;

// the elements each lane holds (thread_elements), a transposed load stored back, a diagonal
// matrix and a filled one, and simdgroup_multiply of the two
kernel void matrix_layout(device const float* m [[buffer(0)]], device float* lanes [[buffer(1)]],
                          device float* transposed [[buffer(2)]], device float* product [[buffer(3)]],
                          uint lane [[thread_index_in_simdgroup]]) {
  simdgroup_float8x8 a;
  simdgroup_load(a, m, 8);
  lanes[lane * 2] = a.thread_elements()[0];
  lanes[lane * 2 + 1] = a.thread_elements()[1];
  simdgroup_float8x8 t;
  simdgroup_load(t, m, 8, ulong2(0, 0), true);
  simdgroup_store(t, transposed, 8);
  simdgroup_float8x8 d = simdgroup_float8x8(2.0f);
  simdgroup_float8x8 f = make_filled_simdgroup_matrix<float, 8, 8>(1.0f);
  simdgroup_float8x8 p;
  simdgroup_multiply(p, d, f);
  simdgroup_store(p, product, 8);
}
"""


@pytest.fixture(scope="module")
def kernels():
    srcs = [VECTOR_ADD, ROW_SUM, GEMM_8X8, SHUFFLE_ATOMIC, DIVERGENT_BARRIER, DIVERGENT_SIMD, EXCHANGE, MATRIX_LAYOUT]
    built = compile_many(srcs)
    for k in built:
        if isinstance(k, HarnessError):
            raise k
    names = ["add", "rows", "gemm", "shuffle", "divergent", "divergent_simd", "exchange", "layout"]
    return dict(zip(names, built))


def test_simdgroup_matrix_lane_layout_transpose_diagonal_and_fill(kernels):
    m = torch.arange(64, dtype=torch.float32)
    lanes, transposed, product = torch.zeros(64), torch.zeros(64), torch.zeros(64)
    kernels["layout"](m, lanes, transposed, product, grid=(1,), threads=(32,))
    for lane in range(32):  # Apple's layout: row (l/4 & 4) + (l/2 % 4), columns (l/4 & 2)*2 + (l%2)*2 + {0, 1}
        row = ((lane // 4) & 4) + (lane // 2) % 4
        col = ((lane // 4) & 2) * 2 + (lane % 2) * 2
        assert lanes[lane * 2 : lane * 2 + 2].tolist() == [row * 8 + col, row * 8 + col + 1]
    assert sorted(lanes.tolist()) == m.tolist()  # every element held by exactly one lane
    assert torch.equal(transposed.view(8, 8), m.view(8, 8).T)
    assert torch.equal(product.view(8, 8), torch.full((8, 8), 2.0))


def test_missing_barrier_between_simd_groups_reads_wrong_values(kernels):
    """SIMD-groups run ahead of each other (the last one first in odd threadgroups), so a
    threadgroup-memory exchange without its barrier reads values that are not written yet."""
    x = torch.randn(4 * 64)
    ref = x.view(4, 2, 32).flip(1).reshape(-1)
    y = torch.zeros_like(x)
    kernels["exchange"](x, y, 1, grid=(4,), threads=(64,))
    torch.testing.assert_close(y, ref)
    y = torch.zeros_like(x)
    kernels["exchange"](x, y, 0, grid=(4,), threads=(64,))
    for g in range(4):  # every threadgroup, whichever SIMD-group runs first, goes wrong
        assert not torch.equal(y[g * 64 : (g + 1) * 64], ref[g * 64 : (g + 1) * 64])


def test_parse_kernel_signature():
    name, params = parse_kernel(VECTOR_ADD)
    assert name == "vector_add"
    assert [(p.name, p.kind, p.base) for p in params] == [
        ("a", "buffer", "float"),
        ("b", "buffer", "float"),
        ("c", "buffer", "float"),
        ("n", "scalar", "int"),
        ("bid", "builtin", "uint3"),
        ("tid", "builtin", "uint3"),
    ]


def test_vector_add_guarded_odd_size(kernels):
    n = 1001
    a, b = torch.randn(n), torch.randn(n)
    c = torch.full((n + 3,), 7.0)  # past-the-end elements stay untouched
    kernels["add"](a, b, c, n, grid=((n + 63) // 64,), threads=(64,))
    torch.testing.assert_close(c[:n], a * 2 + b + 1)
    assert torch.equal(c[n:], torch.full((3,), 7.0))


def test_row_reduction_simd_sum_threadgroup_memory(kernels):
    rows, cols = 5, 333
    x = torch.randn(rows, cols).half()
    out = torch.zeros(rows, 2)
    kernels["rows"](x, out, cols, grid=(rows,), threads=(128,))
    xf = x.float()
    torch.testing.assert_close(out[:, 0], xf.sum(1), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(out[:, 1], xf.abs().amax(1))


def test_simdgroup_matrix_gemm_odd_sizes(kernels):
    M, N, K = 19, 13, 27
    A, B = torch.randn(M, K).half(), torch.randn(K, N).half()
    C = torch.zeros(M, N)
    kernels["gemm"](A, B, C, M, N, K, grid=((N + 7) // 8, (M + 7) // 8), threads=(32,))
    torch.testing.assert_close(C, A.float() @ B.float(), rtol=1e-4, atol=1e-4)


def test_shuffle_xor_broadcast_and_atomics(kernels):
    groups = 3
    x = torch.randn(groups * 64)
    total, count, bcast = torch.zeros(1), torch.zeros(1, dtype=torch.int32), torch.zeros(groups * 64)
    kernels["shuffle"](x, total, count, bcast, grid=(groups,), threads=(64,))
    torch.testing.assert_close(total, x.sum().reshape(1), rtol=1e-5, atol=1e-5)
    assert int(count) == groups * 2
    torch.testing.assert_close(bcast, x.view(-1, 32)[:, 5:6].expand(-1, 32).reshape(-1))


def test_barrier_not_reached_by_every_thread_is_an_error(kernels):
    with pytest.raises(HarnessError, match="threadgroup_barrier"):
        kernels["divergent"](torch.zeros(64), grid=(1,), threads=(64,))


def test_lanes_at_different_simd_functions_is_an_error(kernels):
    with pytest.raises(HarnessError, match="different SIMD-group functions"):
        kernels["divergent_simd"](torch.randn(32), grid=(1,), threads=(32,))


def test_wrong_argument_count_is_an_error(kernels):
    with pytest.raises(HarnessError, match="takes 4 arguments"):
        kernels["add"](torch.zeros(4), grid=(1,), threads=(64,))


def test_ucontext_fibers_where_there_is_no_fast_switch():
    rows, cols = 3, 200
    x = torch.randn(rows, cols).half()
    out = torch.zeros(rows, 2)
    compile_msl(ROW_SUM, flags=("-DMSL_HOST_NO_FAST_SWITCH",))(x, out, cols, grid=(rows,), threads=(128,))
    torch.testing.assert_close(out[:, 0], x.float().sum(1), rtol=1e-4, atol=1e-4)
