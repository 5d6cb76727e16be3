"""Row kernels with a block_M parameter, written as public TileLang 0.1.x programs are
(lazy factories with out_idx), shared by tests/conformance/test_unit_dims.py (CPU backend,
nvcc builds, CUDA simulator) and its GPU twin tests/gpu/test_conformance_unit_dims.py.

block_M = 1 makes every row tile a unit dimension: fragments of shape (1, N), T.reduce_*
over dim=1 into (1,), T.Parallel(1, N) and T.Parallel(1), and slices
`X[bx * block_M:(bx + 1) * block_M, :]` whose extent only simplifies to 1. Each factory
has a float64 torch reference `ref_<name>`.
"""

from __future__ import annotations

import tilelang
import tilelang.language as T

LOG2E = 1.4426950408889634


@tilelang.jit(out_idx=[-1])
def rms_norm(M, N, block_M, threads=128, eps=1e-6):
    dtype = "float32"

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            A_shared = T.alloc_shared((block_M, N), dtype)
            A_local = T.alloc_fragment((block_M, N), dtype)
            A_pow = T.alloc_fragment((block_M, N), dtype)
            A_powsum = T.alloc_fragment((block_M,), dtype)
            T.copy(A[bx * block_M : (bx + 1) * block_M, :], A_shared)
            T.copy(A_shared, A_local)
            for i, j in T.Parallel(block_M, N):
                A_pow[i, j] = A_local[i, j] * A_local[i, j]
            T.reduce_sum(A_pow, A_powsum, dim=1)
            for i in T.Parallel(block_M):
                A_powsum[i] = T.rsqrt(A_powsum[i] / N + eps)
            for i, j in T.Parallel(block_M, N):
                A_local[i, j] *= A_powsum[i]
            T.copy(A_local, B[bx * block_M : (bx + 1) * block_M, :])

    return main


def ref_rms_norm(a, eps=1e-6):
    a = a.double()
    return a * (a.pow(2).mean(1, keepdim=True) + eps).rsqrt()


@tilelang.jit(out_idx=[-1])
def layer_norm(M, N, block_M, threads=128, eps=1e-5):
    dtype = "float32"

    @T.prim_func
    def main(
        X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Bias: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype)
    ):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), dtype)
            sq = T.alloc_fragment((block_M, N), dtype)
            mean = T.alloc_fragment((block_M,), dtype)
            rstd = T.alloc_fragment((block_M,), dtype)
            T.copy(X[bx * block_M : (bx + 1) * block_M, :], x)
            T.reduce_sum(x, mean, dim=1)
            for i in T.Parallel(block_M):
                mean[i] = mean[i] / N
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] - mean[i]
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(sq, rstd, dim=1)
            for i in T.Parallel(block_M):
                rstd[i] = T.rsqrt(rstd[i] / N + eps)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] * rstd[i] * W[j] + Bias[j]
            T.copy(x, Y[bx * block_M : (bx + 1) * block_M, :])

    return main


def ref_layer_norm(x, w, b, eps=1e-5):
    x = x.double()
    mu = x.mean(1, keepdim=True)
    var = (x - mu).pow(2).mean(1, keepdim=True)
    return (x - mu) * (var + eps).rsqrt() * w.double() + b.double()


@tilelang.jit(out_idx=[-1])
def online_softmax(M, N, block_M, block_N, threads=128):
    """Softmax over each row in one pass for the statistics (running max and sum, rescaled
    as the max grows) and one for the output, over column tiles of block_N."""
    dtype = "float32"

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, block_N), dtype)
            p = T.alloc_fragment((block_M, block_N), dtype)
            m_prev = T.alloc_fragment((block_M,), dtype)
            m_cur = T.alloc_fragment((block_M,), dtype)
            s_cur = T.alloc_fragment((block_M,), dtype)
            lse = T.alloc_fragment((block_M,), dtype)
            T.fill(m_prev, -T.infinity(dtype))
            T.fill(lse, 0)
            for k in T.serial(T.ceildiv(N, block_N)):
                T.copy(X[bx * block_M : (bx + 1) * block_M, k * block_N : (k + 1) * block_N], x)
                for i, j in T.Parallel(block_M, block_N):
                    x[i, j] = T.if_then_else(k * block_N + j < N, x[i, j], -T.infinity(dtype))
                T.copy(m_prev, m_cur)
                T.reduce_max(x, m_cur, dim=1, clear=False)
                for i, j in T.Parallel(block_M, block_N):
                    p[i, j] = T.exp2((x[i, j] - m_cur[i]) * LOG2E)
                T.reduce_sum(p, s_cur, dim=1)
                for i in T.Parallel(block_M):
                    lse[i] = lse[i] * T.exp2((m_prev[i] - m_cur[i]) * LOG2E) + s_cur[i]
                    m_prev[i] = m_cur[i]
            for k in T.serial(T.ceildiv(N, block_N)):
                T.copy(X[bx * block_M : (bx + 1) * block_M, k * block_N : (k + 1) * block_N], x)
                for i, j in T.Parallel(block_M, block_N):
                    p[i, j] = T.exp2((x[i, j] - m_prev[i]) * LOG2E) / lse[i]
                T.copy(p, Y[bx * block_M : (bx + 1) * block_M, k * block_N : (k + 1) * block_N])

    return main


def ref_online_softmax(x):
    return x.double().softmax(1)


@tilelang.jit(out_idx=[-1])
def scale_rows(M, N, blk, threads=128):
    """The slice copy of issue #17 item 3: `A[bx * blk:(bx + 1) * blk, :]` into a fragment."""
    dtype = "float32"

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, blk), threads=threads) as bx:
            A_local = T.alloc_fragment((blk, N), dtype)
            T.copy(A[bx * blk : (bx + 1) * blk, :], A_local)
            for i, j in T.Parallel(blk, N):
                A_local[i, j] = A_local[i, j] * 2 + 1
            T.copy(A_local, B[bx * blk : (bx + 1) * blk, :])

    return main


@tilelang.jit(out_idx=[-1])
def row_through_vector(M, N, threads=128):
    """Copies whose extents differ only by unit dims: the 1×N region `A[bx, 0:N]` into a (1, N)
    fragment, (1, N) into (N,), and a head address `B[bx, 0]` taking the (N,) extents."""
    dtype = "float32"

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(M, threads=threads) as bx:
            row = T.alloc_fragment((1, N), dtype)
            vec = T.alloc_fragment((N,), dtype)
            T.copy(A[bx, 0:N], row)
            for j in T.Parallel(N):
                row[0, j] = row[0, j] * 3
            T.copy(row, vec)
            for j in T.Parallel(N):
                vec[j] = vec[j] - 1
            T.copy(vec, B[bx, 0])

    return main


# name -> (factory, extra factory args after (M, N, block_M), reference, extra inputs)
ROW_KERNELS = {
    "rms_norm": (rms_norm, (), ref_rms_norm, 0),
    "layer_norm": (layer_norm, (), ref_layer_norm, 2),
    "online_softmax": (online_softmax, (64,), ref_online_softmax, 0),
    "online_softmax_full_row": (online_softmax, (None,), ref_online_softmax, 0),
}


def factory_args(name: str, M: int, N: int, block_M: int) -> tuple:
    """Positional factory arguments of ROW_KERNELS[name] (None: a full row, N)."""
    extra = tuple(N if a is None else a for a in ROW_KERNELS[name][1])
    return (M, N, block_M) + extra


def inputs(name: str, M: int, N: int, gen, device: str = "cpu") -> list:
    """Random non-zero inputs: X (M, N) and, for layer_norm, the weight and bias (N,)."""
    import torch

    x = torch.randn(M, N, generator=gen) + 0.5
    extra = [torch.randn(N, generator=gen) for _ in range(ROW_KERNELS[name][3])]
    return [t.to(device) for t in [x] + extra]
