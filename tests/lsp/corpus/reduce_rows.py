# ruff: noqa
import torch
import tilelang
import tilelang.language as T


@tilelang.jit
def row_max(x, block_M: int = 32):
    M, N = T.const("M, N")
    x: T.Tensor((M, N), "float32")
    out = T.empty((M,), "float32")
    with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
        tile = T.alloc_fragment((block_M, N), "float32")
        best = T.alloc_fragment((block_M,), "float32")
        T.copy(x[bx * block_M, 0], tile)
        T.reduce_max(tile, best, dim=1)
        T.copy(best, out[bx * block_M])
    return out


x = torch.randn(1000, 256, device="cuda")
y = row_max(x)
