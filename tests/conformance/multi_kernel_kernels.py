"""Multi-kernel programs written the public way (issue #18, item 1), shared by the CPU
conformance tests (`test_multi_kernel.py`), their GPU twin and `benchmarks/splitkv_decode.py`.

- `splitkv_decode`: FlashDecoding for one query per (batch, head): kernel 1 runs an online
  softmax over each split of the KV sequence and writes the split's normalised partial output
  and its log-sum-exp (base 2) into `T.alloc_global` scratch; kernel 2 combines the splits.
  `num_split == 1` is a Python-level branch: a single kernel that writes the output directly.
- `center_rows`: the eager style (`T.const`, `T.empty`) with scratch between two kernels.
- `flip_rows`: the scratch allocated inside kernel 1 and read (other blocks' rows) by kernel 2.
- `scale_then_shift`: two kernels over an in/out parameter (`X` is scaled in place by kernel 1,
  kernel 2 reads it back and writes `Y = X + shift`).
"""

from __future__ import annotations

import torch

import tilelang
import tilelang.language as T

LOG2E = 1.44269504


@tilelang.jit(out_idx=[-1])
def splitkv_decode(batch, heads, seqlen_kv, dim, num_split=4, block_N=64, threads=128, num_stages=2):
    dtype = T.float16
    accum = T.float32
    scale = (1.0 / dim) ** 0.5 * LOG2E  # softmax in base 2
    split_len = (seqlen_kv + num_split - 1) // num_split
    n_tiles = (split_len + block_N - 1) // block_N
    q_shape = [batch, heads, dim]
    kv_shape = [batch, seqlen_kv, heads, dim]

    @T.macro
    def attend(Q, K, V, bb, bh, lo, hi, acc_o, logsum, m):
        """Unnormalised output, running sum and running max (base 2) over keys [lo, hi)."""
        Q_shared = T.alloc_shared([dim], dtype)
        K_shared = T.alloc_shared([block_N, dim], dtype)
        V_shared = T.alloc_shared([block_N, dim], dtype)
        qk = T.alloc_fragment([block_N, dim], accum)
        s = T.alloc_fragment([block_N], accum)
        m_prev = T.alloc_fragment([1], accum)
        s_sum = T.alloc_fragment([1], accum)
        r = T.alloc_fragment([1], accum)
        o_tile = T.alloc_fragment([dim], accum)
        T.copy(Q[bb, bh, :], Q_shared)
        T.fill(acc_o, 0)
        T.fill(logsum, 0)
        T.fill(m, -1e30)  # finite: an empty split keeps exp2(m_prev - m) defined
        for k in T.Pipelined(n_tiles, num_stages=num_stages):
            T.copy(K[bb, lo + k * block_N : lo + (k + 1) * block_N, bh, :], K_shared)
            T.copy(V[bb, lo + k * block_N : lo + (k + 1) * block_N, bh, :], V_shared)
            for j, d in T.Parallel(block_N, dim):
                qk[j, d] = T.cast(Q_shared[d], accum) * T.cast(K_shared[j, d], accum)
            T.reduce_sum(qk, s, dim=1)
            for j in T.Parallel(block_N):
                s[j] = T.if_then_else(lo + k * block_N + j < hi, s[j] * scale, -T.infinity(accum))
            T.copy(m, m_prev)
            T.reduce_max(s, m, dim=0, clear=False)
            for j in T.Parallel(block_N):
                s[j] = T.exp2(s[j] - m[0])
            T.reduce_sum(s, s_sum, dim=0)
            for i in T.Parallel(1):
                r[i] = T.exp2(m_prev[i] - m[i])
                logsum[i] = logsum[i] * r[i] + s_sum[i]
            for j, d in T.Parallel(block_N, dim):
                qk[j, d] = s[j] * T.cast(V_shared[j, d], accum)
            T.reduce_sum(qk, o_tile, dim=0)
            for d in T.Parallel(dim):
                acc_o[d] = acc_o[d] * r[0] + o_tile[d]

    @T.prim_func
    def main(
        Q: T.Tensor(q_shape, dtype),
        K: T.Tensor(kv_shape, dtype),
        V: T.Tensor(kv_shape, dtype),
        Output: T.Tensor(q_shape, dtype),
    ):
        if num_split == 1:
            with T.Kernel(heads, batch, threads=threads) as (bh, bb):
                acc_o = T.alloc_fragment([dim], accum)
                logsum = T.alloc_fragment([1], accum)
                m = T.alloc_fragment([1], accum)
                attend(Q, K, V, bb, bh, 0, seqlen_kv, acc_o, logsum, m)
                for d in T.Parallel(dim):
                    Output[bb, bh, d] = T.cast(acc_o[d] / logsum[0], dtype)
        else:
            lse = T.alloc_global([batch, heads, num_split], accum)
            o_part = T.alloc_global([batch, heads, num_split, dim], accum)
            with T.Kernel(heads, batch, num_split, threads=threads) as (bh, bb, bs):
                acc_o = T.alloc_fragment([dim], accum)
                logsum = T.alloc_fragment([1], accum)
                m = T.alloc_fragment([1], accum)
                lo = bs * split_len
                hi = T.min(lo + split_len, seqlen_kv)
                attend(Q, K, V, bb, bh, lo, hi, acc_o, logsum, m)
                for d in T.Parallel(dim):
                    o_part[bb, bh, bs, d] = T.if_then_else(logsum[0] > 0, acc_o[d] / logsum[0], 0)
                for i in T.Parallel(1):
                    lse[bb, bh, bs] = T.if_then_else(logsum[i] > 0, T.log2(logsum[i]) + m[i], -T.infinity(accum))
            with T.Kernel(heads, batch, threads=threads) as (bh, bb):
                lse_f = T.alloc_fragment([num_split], accum)
                w = T.alloc_fragment([num_split], accum)
                lse_max = T.alloc_fragment([1], accum)
                w_sum = T.alloc_fragment([1], accum)
                parts = T.alloc_fragment([num_split, dim], accum)
                o = T.alloc_fragment([dim], accum)
                T.copy(lse[bb, bh, :], lse_f)
                T.reduce_max(lse_f, lse_max, dim=0)
                for k in T.Parallel(num_split):
                    w[k] = T.exp2(lse_f[k] - lse_max[0])
                T.reduce_sum(w, w_sum, dim=0)
                T.copy(o_part[bb, bh, :, :], parts)
                for k, d in T.Parallel(num_split, dim):
                    parts[k, d] = parts[k, d] * (w[k] / w_sum[0])
                T.reduce_sum(parts, o, dim=0)
                T.copy(o, Output[bb, bh, :])

    return main


def decode_inputs(batch, heads, seqlen_kv, dim, device="cpu", seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    q = torch.randn(batch, heads, dim, generator=g).to(device=device, dtype=torch.float16)
    k = torch.randn(batch, seqlen_kv, heads, dim, generator=g).to(device=device, dtype=torch.float16)
    v = torch.randn(batch, seqlen_kv, heads, dim, generator=g).to(device=device, dtype=torch.float16)
    return q, k, v


def decode_reference(q, k, v):
    """float32 SDPA of one query per (batch, head) over the whole KV sequence."""
    qf = q.float().unsqueeze(2)  # B, H, 1, D
    kf, vf = (x.float().transpose(1, 2) for x in (k, v))  # B, H, S, D
    return torch.nn.functional.scaled_dot_product_attention(qf, kf, vf).squeeze(2)


@tilelang.jit(out_idx=[-1])
def scale_then_shift(M, N, alpha=2.0, shift=0.5, block_M=32, block_N=64):
    @T.prim_func
    def main(X: T.Tensor((M, N), T.float32), Y: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                if by * block_M + i < M and bx * block_N + j < N:
                    X[by * block_M + i, bx * block_N + j] = X[by * block_M + i, bx * block_N + j] * alpha
        # a different grid: kernel 2 must see every block of kernel 1's writes
        with T.Kernel(T.ceildiv(M, 16), threads=64) as bx:
            for i, j in T.Parallel(16, N):
                if bx * 16 + i < M:
                    Y[bx * 16 + i, j] = X[bx * 16 + i, j] + shift

    return main


@tilelang.jit
def center_rows(X, block: int = 16):
    """Eager style: kernel 1 writes each row's mean into scratch, kernel 2 subtracts it."""
    M, N = T.const("M, N")
    X: T.Tensor((M, N), T.float32)
    Y = T.empty((M, N), T.float32)
    mean = T.alloc_global((M,), T.float32)
    with T.Kernel(T.ceildiv(M, block), threads=64) as bx:
        acc = T.alloc_fragment((block, N), T.float32)
        s = T.alloc_fragment((block,), T.float32)
        T.copy(X[bx * block, 0], acc)
        T.reduce_sum(acc, s, dim=1)
        for i in T.Parallel(block):
            if bx * block + i < M:
                mean[bx * block + i] = s[i] / N
    with T.Kernel(M, threads=32) as bx:
        for j in T.Parallel(N):
            Y[bx, j] = X[bx, j] - mean[bx]
    return Y


@tilelang.jit(out_idx=[-1])
def flip_rows(M, N, block=16):
    """`T.alloc_global` inside kernel 1, named again by kernel 2 (Python scoping allows it)."""

    @T.prim_func
    def main(X: T.Tensor((M, N), T.float32), Y: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(M, block), threads=32) as bx:
            tmp = T.alloc_global((M, N), T.float32)
            for i, j in T.Parallel(block, N):
                if bx * block + i < M:
                    tmp[bx * block + i, j] = X[bx * block + i, j] + 1.0
        with T.Kernel(M, threads=32) as bx:
            for j in T.Parallel(N):
                Y[bx, j] = tmp[M - 1 - bx, j] * 2.0  # rows other blocks of kernel 1 wrote

    return main
