"""Reductions: the seed's fragment row reduction (no-return kernel writing into
`out`), T.alloc_reducer with reducer_init / reducer_update / finalize_reducer,
and T.cumsum."""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import check, device

import tilelang
import tilelang.language as T

rows, width = 64, 96


@tilelang.jit
def fragment_reduce(
    x: T.Tensor((rows, width), "float32"),
    out: T.Tensor((rows, width), "float32"),
) -> None:
    with T.Kernel(1, threads=128):
        x_frag = T.alloc_fragment((rows, width), "float32")
        sum_frag = T.alloc_fragment((rows,), "float32")
        for i, j in T.Parallel(rows, width):
            x_frag[i, j] = x[i, j]
        T.reduce_sum(x_frag, sum_frag, dim=1)
        for i, j in T.Parallel(rows, width):
            out[i, j] = x_frag[i, j] / sum_frag[i]


@tilelang.jit
def reducer_rows(x, op: str = "sum"):
    R, W = T.const("R, W")
    x: T.Tensor((R, W), "float32")
    out = T.empty((R,), "float32")
    with T.Kernel(1, threads=128):
        x_frag = T.alloc_fragment((R, W), "float32")
        T.copy(x, x_frag)
        acc = T.alloc_reducer((R,), "float32", op=op)
        T.reducer_init(acc)
        for i, j in T.Parallel(R, W):
            T.reducer_update(acc[i], x_frag[i, j])
        dst = T.alloc_fragment((R,), "float32")
        T.finalize_reducer(acc, dst)
        T.copy(dst, out)
    return out


@tilelang.jit
def prefix_sum(x, block: int = 128):
    M = T.const("M")
    x: T.Tensor((M,), "float32")
    y = T.empty((M,), "float32")
    with T.Kernel(T.ceildiv(M, block), threads=128) as bx:
        buf = T.alloc_shared((block,), "float32")
        T.copy(x[bx * block], buf)
        T.cumsum(buf, dim=0)
        T.copy(buf, y[bx * block])
    return y


def main() -> None:
    dev = device()
    x = torch.rand(rows, width, device=dev) + 0.5
    out = torch.empty_like(x)
    fragment_reduce(x, out)
    check("fragment row reduction", out, x / x.sum(1, keepdim=True), atol=1e-5)
    r = torch.randn(48, 70, device=dev)
    check("alloc_reducer sum", reducer_rows(r), r.sum(1), atol=1e-4)
    check("alloc_reducer max", reducer_rows(r, op="max"), r.amax(1), atol=0)
    v = torch.randn(1000, device=dev)
    ref = torch.cat([c.cumsum(0) for c in v.split(128)])
    check("block cumsum", prefix_sum(v), ref, atol=1e-4)


if __name__ == "__main__":
    main()
