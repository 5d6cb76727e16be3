# ruff: noqa
import tilelang
import tilelang.language as T


def combine(batch, heads, num_split, dim, dtype="float16", accum_dtype="float"):
    @T.prim_func
    def main(
        Partial: T.Tensor((batch, heads, num_split, dim), accum_dtype),
        Lse: T.Tensor((batch, heads, num_split), accum_dtype),
        Out: T.Tensor((batch, heads, dim), dtype),
    ):
        with T.Kernel(heads, batch, threads=128) as (by, bz):
            po = T.alloc_fragment([dim], accum_dtype)
            o = T.alloc_fragment([dim], accum_dtype)
            lse_local = T.alloc_var(accum_dtype)
            lse_max = T.alloc_var(accum_dtype)
            lse_sum = T.alloc_var(accum_dtype)
            scale = T.alloc_var(accum_dtype)
            T.clear(o)
            lse_max = -T.infinity(accum_dtype)
            for k in T.serial(num_split):
                lse_max = T.max(lse_max, Lse[bz, by, k])
            lse_sum = 0
            for k in T.serial(num_split):
                lse_sum += T.exp2(Lse[bz, by, k] - lse_max)
            for k in T.serial(num_split):
                for i in T.Parallel(dim):
                    po[i] = Partial[bz, by, k, i]
                lse_local = Lse[bz, by, k]
                scale = T.exp2(lse_local - lse_max) / lse_sum
                for i in T.Parallel(dim):
                    o[i] += po[i] * scale
            for i in T.Parallel(dim):
                Out[bz, by, i] = o[i]

    return main


if __name__ == "__main__":
    kernel = tilelang.compile(combine(4, 32, 8, 128), out_idx=[2])
