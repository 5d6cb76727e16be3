"""Kernels of the escape-hatch conformance tests, shared by the CPU suite
(`test_escape_hatches.py`) and its GPU twin (`tests/gpu/test_conformance_escape.py`):
device functions given as source and called by name, pointers into buffers, `T.assume`,
`T.evaluate` / `T.attr`, and the Hopper switches, written the way public programs are."""

from __future__ import annotations

import tilelang
import tilelang.language as T

AXPB = """
__device__ __forceinline__ float my_axpb(float a, float x, float b) { return a * x + b; }
"""

SCALE_ROW = """
__device__ void scale_row(float* dst, const float* src, int n, float s) {
  for (int i = 0; i < n; ++i) dst[i] = s * src[i];
}
"""

# a device function with a side effect and a result (the result is dropped by the caller)
BUMP = """
__device__ int bump(int* counter, int by) { int old = counter[0]; counter[0] = old + by; return old; }
"""


@tilelang.jit(out_idx=[-1])
def extern_axpb(M, N, a=2.0, b=1.0, block_N=64, threads=128):
    """B = my_axpb(a, A, b) elementwise through a device function given as source."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), M, threads=threads) as (bx, by):
            T.import_source(AXPB)
            for j in T.Parallel(block_N):
                B[by, bx * block_N + j] = T.call_extern("float32", "my_axpb", a, A[by, bx * block_N + j], b)

    return main


@tilelang.jit(out_idx=[-1])
def extern_rows(M, N, s=3.0):
    """One extern call per row with pointers: `T.access_ptr` and `Buffer.access_ptr`."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=1) as bx:
            T.attr(0, "pragma_import_c", SCALE_ROW)
            T.call_extern("void", "scale_row", T.access_ptr(B[bx, 0], "w"), A.access_ptr("r", offset=bx * N), N, s)

    return main


@tilelang.jit
def extern_counter(n_calls, by=3):
    """A bare call of a value-returning extern still runs; T.evaluate runs it once."""

    @T.prim_func
    def main(C: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=1):
            T.import_source(BUMP)
            for _ in T.serial(n_calls):
                T.call_extern("int32", "bump", T.access_ptr(C[0], "rw"), by)
            T.evaluate(T.call_extern("int32", "bump", C.access_ptr("rw"), 1))

    return main


@tilelang.jit(out_idx=[-1])
def window(M, W, assume):
    """B[i] = A[n + i]: the load is guarded unless `T.assume` says the window is in range."""

    @T.prim_func
    def main(A: T.Tensor((M,), "float32"), n: T.int32, B: T.Tensor((W,), "float32")):
        with T.Kernel(1, threads=32):
            if assume:
                T.assume(n >= 0)
                T.assume(n + W <= M)
            for i in T.Parallel(W):
                B[i] = A[n + i]

    return main


@tilelang.jit(out_idx=[-1])
def ws_gemm(M, N, K, disable_reg_alloc, block_M=128, block_N=256, block_K=64, threads=256, num_stages=3):
    """A pipelined GEMM that sm_90a warp-specializes (producer warpgroup + setmaxnreg)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            if disable_reg_alloc:
                T.disable_warp_group_reg_alloc()
            A_s = T.alloc_shared((block_M, block_K), "float16")
            B_s = T.alloc_shared((block_K, block_N), "float16")
            C_f = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_M, bx * block_N])

    return main


@tilelang.jit(out_idx=[-1])
def cluster_pingpong(N=64, remote=True, threads=128):
    """Two blocks of a cluster: every thread arrives on the partner block's cluster barrier
    (`remote`) or on its own, then waits on its own barrier."""

    @T.prim_func
    def main(A: T.Tensor((2, N), "float32"), B: T.Tensor((2, N), "float32")):
        with T.ClusterKernel(2, threads=threads, cluster_dims=(2, 1, 1)) as bx:
            bar = T.alloc_cluster_barrier([threads])
            tile = T.alloc_shared((N,), "float32")
            T.copy(A[bx, 0], tile)
            if remote:
                T.mbarrier_arrive(bar[0], cta_id=1 - T.block_rank_in_cluster())
            else:
                T.mbarrier_arrive(bar[0])
            T.mbarrier_wait_parity(bar[0], 0)
            T.copy(tile, B[bx, 0])

    return main
