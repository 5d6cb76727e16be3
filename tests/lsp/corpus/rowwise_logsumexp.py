# ruff: noqa
import tilelang
import tilelang.language as T

LOG2E = 1.44269504


@tilelang.jit(out_idx=[1])
def logsumexp(M, N, blk_m=4, dtype=T.float32):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, blk_m), threads=128) as bx:
            x = T.alloc_shared((blk_m, N), dtype)
            xf = T.alloc_fragment((blk_m, N), dtype)
            mx = T.alloc_fragment((blk_m,), dtype)
            s = T.alloc_fragment((blk_m,), dtype)
            T.copy(X[bx * blk_m : (bx + 1) * blk_m, :], x)
            T.copy(x, xf)
            T.reduce_max(xf, mx, dim=1)
            for i, j in T.Parallel(blk_m, N):
                xf[i, j] = T.exp2((xf[i, j] - mx[i]) * LOG2E)
            T.reduce_sum(xf, s, dim=1)
            for i in T.Parallel(blk_m):
                s[i] = T.log2(s[i]) / LOG2E + mx[i]
            T.copy(s, Y[bx * blk_m : (bx + 1) * blk_m])

    return main


if __name__ == "__main__":
    k = logsumexp(8192, 1024)
    print(k.get_kernel_source())
