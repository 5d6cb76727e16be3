"""Kernels written for the register-estimate test (`test_estimate.py`), outside the catalogue, in
a module of their own: their generated source names this file and its lines, so editing the test
does not make their entries in `ptxas_reference.json` stale."""

from __future__ import annotations

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def softmax_rows(M, N, bm=4, threads=128):
    """y = softmax(x) along rows, `bm` rows per block held in a fragment."""

    @T.prim_func
    def main(x: T.Tensor((M, N), "float32"), y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as bx:
            xf = T.alloc_fragment((bm, N), "float32")
            mx = T.alloc_fragment((bm,), "float32")
            sm = T.alloc_fragment((bm,), "float32")
            T.copy(x[bx * bm, 0], xf)
            T.reduce_max(xf, mx, dim=1)
            for i, j in T.Parallel(bm, N):
                xf[i, j] = T.exp(xf[i, j] - mx[i])
            T.reduce_sum(xf, sm, dim=1)
            for i, j in T.Parallel(bm, N):
                xf[i, j] = xf[i, j] / sm[i]
            T.copy(xf, y[bx * bm, 0])

    return main
