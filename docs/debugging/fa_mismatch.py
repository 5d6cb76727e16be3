"""The FlashAttention kernel of docs/debugging.md, with the bug that page hunts down.

    python docs/debugging/fa_mismatch.py            # the bug: a mismatch once seq_len > block_N
    python docs/debugging/fa_mismatch.py --fixed    # the fix: matches SDPA

Runs on the CPU backend anywhere and on CUDA where a GPU is present.
"""

import argparse

import torch

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[3])
def flashattn(batch, heads, seq_len, dim, block_M=64, block_N=64, threads=128, fixed=False):
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # 1/sqrt(d) * log2(e)
    shape = [batch, seq_len, heads, dim]
    dtype, accum_dtype = T.float16, T.float32

    @T.prim_func
    def main(
        Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype), Out: T.Tensor(shape, dtype)
    ):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
            acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
            m = T.alloc_fragment([block_M], accum_dtype)
            m_prev = T.alloc_fragment([block_M], accum_dtype)
            rescale = T.alloc_fragment([block_M], accum_dtype)
            row_sum = T.alloc_fragment([block_M], accum_dtype)
            logsum = T.alloc_fragment([block_M], accum_dtype)

            T.copy(Q[bz, bx * block_M : (bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(m, -T.infinity(accum_dtype))
            for k in T.Pipelined(T.ceildiv(seq_len, block_N), num_stages=1):
                T.copy(K[bz, k * block_N : (k + 1) * block_N, by, :], K_shared)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.if_then_else(k * block_N + j >= seq_len, -T.infinity(accum_dtype), 0)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(m, m_prev)
                T.reduce_max(acc_s, m, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    if fixed:
                        rescale[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                    else:
                        rescale[i] = T.exp2(m_prev[i] - m[i])  # the bug: the softmax scale is missing
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m[i] * scale)
                T.reduce_sum(acc_s, row_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * rescale[i] + row_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= rescale[i]
                T.copy(V[bz, k * block_N : (k + 1) * block_N, by, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, Out[bz, bx * block_M : (bx + 1) * block_M, by, :])

    return main


def reference(q, k, v):
    q, k, v = (x.float().transpose(1, 2) for x in (q, k, v))
    return torch.nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seq-len", type=int, default=200)
    parser.add_argument("--fixed", action="store_true")
    args = parser.parse_args()
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, args.seq_len, 2, 64, device=dev, dtype=torch.float16) for _ in range(3))
    out = flashattn(1, 2, args.seq_len, 64, fixed=args.fixed)(q, k, v)
    err = (out.float() - reference(q, k, v)).abs().max().item()
    print(
        f"seq_len={args.seq_len} fixed={args.fixed}: max |out - sdpa| = {err:.4f}",
        "(match)" if err < 2e-2 else "(MISMATCH)",
    )


if __name__ == "__main__":
    main()
