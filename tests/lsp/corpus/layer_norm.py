# ruff: noqa
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def layer_norm(M, N, eps=1e-5):
    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=256) as bx:
            x = T.alloc_fragment((N,), "float32")
            sq = T.alloc_fragment((N,), "float32")
            mean = T.alloc_fragment((1,), "float32")
            var = T.alloc_fragment((1,), "float32")
            T.copy(X[bx, 0:N], x)
            T.reduce_sum(x, mean, dim=0)
            for i in T.Parallel(N):
                sq[i] = (x[i] - mean[0] / N) * (x[i] - mean[0] / N)
            T.reduce_sum(sq, var, dim=0)
            for i in T.Parallel(N):
                Y[bx, i] = (x[i] - mean[0] / N) * T.rsqrt(var[0] / N + eps)

    return main
