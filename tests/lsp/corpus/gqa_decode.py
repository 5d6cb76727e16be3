# ruff: noqa
import argparse

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def gqa_decode(batch, heads, kv_heads, seqlen_kv, dim, block_N=64, threads=128):
    groups = heads // kv_heads
    assert heads % kv_heads == 0, "heads must be a multiple of kv_heads"
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    dtype = "float16"
    accum_dtype = "float"
    valid_block_H = min(16, groups)
    block_H = 16

    @T.prim_func
    def main(
        Q: T.Tensor([batch, heads, dim], dtype),
        K: T.Tensor([batch, seqlen_kv, kv_heads, dim], dtype),
        V: T.Tensor([batch, seqlen_kv, kv_heads, dim], dtype),
        Output: T.Tensor([batch, heads, dim], dtype),
    ):
        with T.Kernel(batch, heads // valid_block_H, threads=threads) as (bx, by):
            Q_shared = T.alloc_shared([block_H, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            acc_s = T.alloc_fragment([block_H, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_H, block_N], dtype)
            acc_o = T.alloc_fragment([block_H, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_H], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_H], accum_dtype)
            scores_scale = T.alloc_fragment([block_H], accum_dtype)
            scores_sum = T.alloc_fragment([block_H], accum_dtype)
            logsum = T.alloc_fragment([block_H], accum_dtype)
            kv = by * valid_block_H // groups
            T.copy(Q[bx, by * valid_block_H : by * valid_block_H + block_H, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))
            for k in T.Pipelined(T.ceildiv(seqlen_kv, block_N), num_stages=2):
                T.copy(K[bx, k * block_N : (k + 1) * block_N, kv, :], K_shared)
                T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_H):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bx, k * block_N : (k + 1) * block_N, kv, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_H, dim):
                acc_o[i, j] /= logsum[i]
            for i, j in T.Parallel(block_H, dim):
                if i < valid_block_H:
                    Output[bx, by * valid_block_H + i, j] = acc_o[i, j]

    return main


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv_heads", type=int, default=8)
    parser.add_argument("--kv_ctx", type=int, default=8192)
    parser.add_argument("--dim", type=int, default=128)
    args = parser.parse_args()
    batch, heads, kv_heads, kv_ctx, dim = args.batch, args.heads, args.kv_heads, args.kv_ctx, args.dim
    kernel = gqa_decode(batch, heads, kv_heads, kv_ctx, dim)
