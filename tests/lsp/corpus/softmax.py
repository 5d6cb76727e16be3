# ruff: noqa
import torch
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[1])
def softmax(M, N, blk_m=1, dtype="float16"):
    accum_dtype = "float"
    scale = 1.44269504  # log2(e)

    @T.prim_func
    def main(X: T.Tensor([M, N], dtype), Y: T.Tensor([M, N], dtype)):
        with T.Kernel(T.ceildiv(M, blk_m), threads=128) as bx:
            x = T.alloc_fragment([blk_m, N], accum_dtype)
            row_max = T.alloc_fragment([blk_m], accum_dtype)
            row_sum = T.alloc_fragment([blk_m], accum_dtype)
            T.copy(X[bx * blk_m, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(blk_m, N):
                x[i, j] = T.exp2(x[i, j] * scale - row_max[i] * scale)
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in T.Parallel(blk_m, N):
                x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, Y[bx * blk_m, 0])

    return main


def main(M=4096, N=1024):
    kernel = softmax(M, N)
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(kernel(x), torch.softmax(x.float(), -1).half(), rtol=1e-2, atol=1e-2)


if __name__ == "__main__":
    main()
