"""Kernels of the random-number conformance tests, shared by the CPU suite (`test_rng.py`)
and its GPU twin (`tests/gpu/test_conformance_rng.py`): the upstream test's five-stream fill,
a dropout kernel (mask + scaled output), Gumbel-max sampling from logits, and the
statement-form skip-ahead (`T.rng_rand()` whose value is dropped), written the public way."""

from __future__ import annotations

import torch

import tilelang
import tilelang.language as T
from conformance.philox_ref import draw


@tilelang.jit
def rand_1d(M=1024, seed=42, num_per_thread=128, threads=1):
    """Upstream's test kernel: one block per `num_per_thread` elements, positions from `off`."""
    blk_M = num_per_thread * threads

    @T.prim_func
    def rand_kernel(
        A: T.Tensor((M,), "uint32"),
        B: T.Tensor((M,), "float32"),
        C: T.Tensor((M,), "float64"),
        D: T.Tensor((M,), "float32"),
        E: T.Tensor((M,), "float64"),
    ):
        with T.Kernel(T.ceildiv(M, threads * num_per_thread), threads=threads) as bx:
            T.rng_init(seed, 0, bx * blk_M)
            for i, j in T.Parallel(threads, num_per_thread):
                idx = (bx * threads + i) * num_per_thread + j
                if idx < M:
                    A[idx] = T.rng_rand()
            for i, j in T.Parallel(threads, num_per_thread):
                idx = (bx * threads + i) * num_per_thread + j
                if idx < M:
                    B[idx] = T.rng_rand_float()
            for i, j in T.Parallel(threads, num_per_thread):
                idx = (bx * threads + i) * num_per_thread + j
                if idx < M:
                    C[idx] = T.rng_rand_float(bit=64)
            for i, j in T.Parallel(threads, num_per_thread):
                idx = (bx * threads + i) * num_per_thread + j
                if idx < M:
                    D[idx] = T.rng_rand_float(dist="normal")
            for i, j in T.Parallel(threads, num_per_thread):
                idx = (bx * threads + i) * num_per_thread + j
                if idx < M:
                    E[idx] = T.rng_rand_float(bit=64, dist="normal")

    return rand_kernel


def rand_1d_reference(M, seed, num_per_thread=128, threads=1):
    """What rand_1d writes (language/random.py's positions), from the Python Philox."""
    blk = num_per_thread * threads
    out = ([], [], [], [], [])
    kinds = ("u32", "uniform_f32", "uniform_f64", "normal_f32", "normal_f64")
    widths = (1, 1, 2, 2, 4)
    for idx in range(M):
        b, j = divmod(idx, blk)
        base = b * blk
        for n, (kind, w) in enumerate(zip(kinds, widths)):
            out[n].append(draw(kind, seed, 0, base + j * w))
            base += blk * w
    return (
        torch.tensor(out[0], dtype=torch.int64).to(torch.uint32),
        torch.tensor(out[1], dtype=torch.float32),
        torch.tensor(out[2], dtype=torch.float64),
        torch.tensor(out[3], dtype=torch.float32),
        torch.tensor(out[4], dtype=torch.float64),
    )


@tilelang.jit(out_idx=[-2, -1])
def dropout(M, N, p, seed, block_M=32, block_N=64, threads=128, dtype="float16"):
    """Y = X * mask / (1 - p); one subsequence per tile (`seq` = tile index)."""

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Mask: T.Tensor((M, N), "uint8"), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            x = T.alloc_fragment((block_M, block_N), dtype)
            keep = T.alloc_fragment((block_M, block_N), "uint8")
            T.copy(X[by * block_M, bx * block_N], x)
            T.rng_init(seed, by * T.ceildiv(N, block_N) + bx)
            for i, j in T.Parallel(block_M, block_N):
                keep[i, j] = T.if_then_else(T.rng_rand_float() < p, 0, 1)
                x[i, j] = x[i, j] * T.cast(keep[i, j], dtype) / (1.0 - p)
            T.copy(keep, Mask[by * block_M, bx * block_N])
            T.copy(x, Y[by * block_M, bx * block_N])

    return main


def dropout_mask_reference(M, N, p, seed, block_M=32, block_N=64):
    gx = -(-N // block_N)
    mask = torch.empty(M, N, dtype=torch.uint8)
    for r in range(M):
        for c in range(N):
            by, i = divmod(r, block_M)
            bx, j = divmod(c, block_N)
            u = draw("uniform_f32", seed, by * gx + bx, i * block_N + j)
            mask[r, c] = 0 if u < torch.tensor(p, dtype=torch.float32).item() else 1
    return mask


@tilelang.jit(out_idx=[-1])
def gumbel_perturb(B, V, seed, block_V=64, threads=128):
    """G = logits - log(-log(u)), u uniform per (row, column); argmax over a row samples
    softmax(logits). Row `by` is subsequence `by`; column `c` is position `c`."""

    @T.prim_func
    def main(logits: T.Tensor((B, V), "float32"), G: T.Tensor((B, V), "float32")):
        with T.Kernel(T.ceildiv(V, block_V), B, threads=threads) as (bx, by):
            g = T.alloc_fragment((block_V,), "float32")
            T.rng_init(seed, by, bx * block_V)
            for j in T.Parallel(block_V):
                u = T.rng_rand_float()
                g[j] = logits[by, bx * block_V + j] - T.log(-T.log(u))
            T.copy(g, G[by, bx * block_V])

    return main


def gumbel_uniforms(B, V, seed):
    return torch.tensor([[draw("uniform_f32", seed, r, c) for c in range(V)] for r in range(B)], dtype=torch.float32)


@tilelang.jit(out_idx=[-1])
def skip_ahead(M, seed, threads=1):
    """Triton's randint(seed, 4 * i) layout: every element draws four numbers and keeps one."""

    @T.prim_func
    def main(A: T.Tensor((M,), "uint32")):
        with T.Kernel(1, threads=threads):
            T.rng_init(seed)
            for i in T.Parallel(M):
                A[i] = T.rng_rand()
                T.rng_rand()
                T.rng_rand()
                T.rng_rand()

    return main


@tilelang.jit(out_idx=[-1])
def serial_draws(M, seed, trips=3):
    """Block-level draws in a serial loop (program order), then a T.Parallel fill after them."""

    @T.prim_func
    def main(A: T.Tensor((M + trips,), "float32")):
        with T.Kernel(1, threads=128):
            T.rng_init(seed, 9)
            acc = T.alloc_var("float32", init=0.0)
            for t in T.serial(trips):
                r = T.rng_rand_float()
                acc = acc + r
                A[M + t] = acc
            for i in T.Parallel(M):
                A[i] = T.rng_rand_float()

    return main


def serial_draws_reference(M, seed, trips=3):
    out = torch.empty(M + trips, dtype=torch.float32)
    acc = torch.zeros((), dtype=torch.float32)
    for t in range(trips):
        acc = acc + torch.tensor(draw("uniform_f32", seed, 9, t), dtype=torch.float32)
        out[M + t] = acc
    for i in range(M):
        out[i] = draw("uniform_f32", seed, 9, trips + i)
    return out


def gumbel_reference(logits, u):
    return (logits.double() - torch.log(-torch.log(u.double()))).float()
