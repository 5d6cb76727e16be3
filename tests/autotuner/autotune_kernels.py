"""Kernels for the autotuner tests. Module level, so compile workers (spawned
processes, Dask workers) can import them; torch is imported lazily so worker
start-up stays cheap."""

import itertools
import multiprocessing
import os
import signal
import time

import tilelang
import tilelang.language as T

# 8 valid configs; block_K=0 is invalid (the kernel body raises while tracing)
CONFIGS = [dict(block_M=bm, block_N=bn, block_K=bk) for bm, bn, bk in itertools.product([32, 64], [32, 64], [16, 32])]
INVALID = dict(block_M=32, block_N=32, block_K=0)


@tilelang.jit(out_idx=[-1], target="c")
def gemm_lazy(M, N, K, block_M=64, block_N=64, block_K=32, num_stages=2, threads=128):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), T.float16)
            B_shared = T.alloc_shared((block_K, block_N), T.float16)
            C_local = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


@tilelang.jit(target="c")
def gemm_eager(A, B, block_M: int = 64, block_N: int = 64, block_K: int = 32, threads: int = 128):
    M, N, K = T.const("M, N, K")
    A: T.Tensor((M, K), T.float16)
    B: T.Tensor((K, N), T.float16)
    C = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), T.float16)
        B_shared = T.alloc_shared((block_K, block_N), T.float16)
        C_local = T.alloc_fragment((block_M, block_N), T.float32)
        T.clear(C_local)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
            T.copy(A[by * block_M, k * block_K], A_shared)
            T.copy(B[k * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C[by * block_M, bx * block_N])
    return C


def ref_program(A, B):
    return A.float() @ B.float()


def scale_factory(N=1024, block=128, repeat=0, delay=0.0, die=False):
    """A PrimFunc factory for AutoTuner.from_kernel: B = 2 * A, plus `repeat` rounds
    of `B = B / 2 + A` (same result, much more work; the compiler cannot drop it).
    `delay`: seconds spent tracing (timeout tests); `die`: the tracing process is killed
    by SIGSEGV when it is a compile worker (crash tests; never the tuning process)."""
    if die and multiprocessing.current_process().name != "MainProcess":
        os.kill(os.getpid(), signal.SIGSEGV)
    if delay:
        time.sleep(delay)  # a config that takes `delay` seconds to trace (timeout test)

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * 2.0
            for _ in T.serial(repeat):
                for i in T.Parallel(block):
                    B[bx * block + i] = B[bx * block + i] * 0.5 + A[bx * block + i]

    return main


def scale_ref(A):
    return A * 2


def faulty_factory(N=1000, block=128, fault="none"):
    """B = 2 * A, or a kernel that dies (`fault="crash"`: an integer division by a zero
    computed at run time, SIGFPE on the CPU backend) or never finishes (`fault="hang"`:
    ~10^12 rounds of real work). The tuner must survive both and keep timing the others."""
    crash = 1 if fault == "crash" else 0
    rounds = 1 << 40 if fault == "hang" else 0

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    zero = T.cast(A[bx * block + i] * 0.0, "int32") * crash  # 0, known only at run time
                    B[bx * block + i] = A[bx * block + i] * 2.0 + T.cast(crash // (zero + 1 - crash), "float32")
            for _ in T.serial(rounds):
                for i in T.Parallel(block):
                    if bx * block + i < N:
                        B[bx * block + i] = B[bx * block + i] * 0.5 + A[bx * block + i]

    return main
