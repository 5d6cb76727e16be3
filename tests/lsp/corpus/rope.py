# ruff: noqa
import math

import tilelang
import tilelang.language as T

HALF = 64


@tilelang.jit(out_idx=[-1])
def rotary(tokens, heads, head_dim=2 * HALF, base=10000.0, block_T=32):
    half = head_dim // 2
    log_base = math.log(base)
    assert head_dim % 2 == 0

    @T.prim_func
    def main(X: T.Tensor((tokens, heads, head_dim), "float32"), Y: T.Tensor((tokens, heads, head_dim), "float32")):
        with T.Kernel(T.ceildiv(tokens, block_T), heads, threads=128) as (bt, h):
            x = T.alloc_fragment((block_T, head_dim), "float32")
            T.copy(X[bt * block_T, h, 0], x)
            for i, j in T.Parallel(block_T, half):
                pos = (bt * block_T + i) * 1.0
                theta = pos * T.exp(-(2.0 * j / head_dim) * log_base)
                Y[bt * block_T + i, h, j] = x[i, j] * T.cos(theta) - x[i, j + half] * T.sin(theta)
                Y[bt * block_T + i, h, j + half] = x[i, j + half] * T.cos(theta) + x[i, j] * T.sin(theta)

    return main
