from __future__ import annotations

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def add(M, block=32):
    dtype = T.float32

    @T.prim_func
    def main(A: T.Tensor((M,), dtype), B: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, block)) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] + 1

    return main
