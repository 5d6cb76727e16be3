# ruff: noqa
import torch
import tilelang
import tilelang.language as T


@tilelang.jit
def prefix_sum(x, block: int = 256):
    M = T.const("M")
    x: T.Tensor((M,), "float32")
    y = T.empty((M,), "float32")
    with T.Kernel(T.ceildiv(M, block), threads=128) as bx:
        buf = T.alloc_shared((block,), "float32")
        T.copy(x[bx * block], buf)
        T.cumsum(buf, dim=0)
        T.copy(buf, y[bx * block])
    return y


if __name__ == "__main__":
    v = torch.randn(100000, device="cuda")
    print(prefix_sum(v))
