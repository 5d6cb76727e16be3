# ruff: noqa
import argparse

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1], pass_configs={"tl.disable_warp_specialized": True})
def split_kv_decode(batch, heads, seqlen_kv, dim, num_split, block_N=64):
    assert seqlen_kv % (num_split * block_N) == 0, "seqlen_kv must divide evenly into splits"
    per_split = seqlen_kv // num_split
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    dtype = "float16"
    accum_dtype = "float"
    block_H = 16

    @T.prim_func
    def main(
        Q: T.Tensor([batch, heads, dim], dtype),
        KV: T.Tensor([batch, seqlen_kv, dim], dtype),
        Partial: T.Tensor([batch, heads, num_split, dim], accum_dtype),
    ):
        with T.Kernel(batch, T.ceildiv(heads, block_H), num_split, threads=128) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_H, dim], dtype)
            KV_shared = T.alloc_shared([block_N, dim], dtype)
            acc_s = T.alloc_fragment([block_H, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_H, block_N], dtype)
            acc_o = T.alloc_fragment([block_H, dim], accum_dtype)
            T.copy(Q[bx, by * block_H : (by + 1) * block_H, :], Q_shared)
            T.clear(acc_o)
            for k in T.Pipelined(per_split // block_N, num_stages=2):
                T.copy(KV[bx, bz * per_split + k * block_N : bz * per_split + (k + 1) * block_N, :], KV_shared)
                T.clear(acc_s)
                T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale)
                T.copy(acc_s, acc_s_cast)
                T.gemm(acc_s_cast, KV_shared, acc_o)
            T.copy(acc_o, Partial[bx, by * block_H : (by + 1) * block_H, bz, :])

    return main


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--heads", type=int, default=128)
    parser.add_argument("--kv_ctx", type=int, default=8192)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--splits", type=int, default=4)
    args = parser.parse_args()
    kernel = split_kv_decode(args.batch, args.heads, args.kv_ctx, args.dim, args.splits)
