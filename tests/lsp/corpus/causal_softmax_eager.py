# ruff: noqa
import torch
import tilelang
import tilelang.language as T


@tilelang.jit
def masked_softmax(scores, block_rows: int = 4):
    R, C = T.const("R, C")
    scores: T.Tensor((R, C), "float32")
    out = T.empty((R, C), "float32")
    with T.Kernel(T.ceildiv(R, block_rows), threads=128) as bx:
        s = T.alloc_fragment((block_rows, C), "float32")
        m = T.alloc_fragment((block_rows,), "float32")
        z = T.alloc_fragment((block_rows,), "float32")
        T.copy(scores[bx * block_rows, 0], s)
        for i, j in T.Parallel(block_rows, C):
            s[i, j] = T.if_then_else(j <= bx * block_rows + i, s[i, j], -T.infinity("float32"))
        T.reduce_max(s, m, dim=1)
        for i, j in T.Parallel(block_rows, C):
            s[i, j] = T.exp(s[i, j] - m[i])
        T.reduce_sum(s, z, dim=1)
        for i, j in T.Parallel(block_rows, C):
            s[i, j] = s[i, j] / z[i]
        T.copy(s, out[bx * block_rows, 0])
    return out


seq = 512
x = torch.randn(seq, seq, device="cuda")
y = masked_softmax(x)
