# ruff: noqa
import argparse

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def int8_gemv(N, K, block_N=64, block_K=128, threads=128):
    assert K % block_K == 0

    @T.prim_func
    def main(
        x: T.Tensor((K,), "float16"),
        W: T.Tensor((N, K), "int8"),
        scale: T.Tensor((N,), "float16"),
        y: T.Tensor((N,), "float16"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), threads=threads) as bn:
            x_shared = T.alloc_shared((block_K,), "float16")
            w_local = T.alloc_fragment((block_N, block_K), "float32")
            acc = T.alloc_fragment((block_N,), "float32")
            part = T.alloc_fragment((block_N,), "float32")
            T.clear(acc)
            for k in T.serial(K // block_K):
                T.copy(x[k * block_K], x_shared)
                for i, j in T.Parallel(block_N, block_K):
                    w_local[i, j] = W[bn * block_N + i, k * block_K + j].astype("float32") * x_shared[j].astype(
                        "float32"
                    )
                T.reduce_sum(w_local, part, dim=1)
                for i in T.Parallel(block_N):
                    acc[i] += part[i]
            for i in T.Parallel(block_N):
                y[bn * block_N + i] = (acc[i] * scale[bn * block_N + i].astype("float32")).astype("float16")

    return main


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=14336)
    parser.add_argument("--k", type=int, default=4096)
    opts = parser.parse_args()
    return int8_gemv(opts.n, opts.k)


if __name__ == "__main__":
    main()
