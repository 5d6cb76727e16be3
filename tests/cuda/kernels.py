"""Small parameterised kernels shared by the CUDA tests (CPU simulation, nvcc
compile checks, and tests/gpu on a real device)."""

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def gemm(M, N, K, bm=64, bn=64, bk=32, dtype="float16", accum="float32", out="float32", trans_a=False,
         trans_b=False, policy="Square", stages=2, threads=128):  # fmt: skip
    """C = op(A) @ op(B) for any dtype / transpose / warp policy (A: (M, K) or (K, M); B: (K, N) or (N, K))."""
    a_shape = (K, M) if trans_a else (M, K)
    b_shape = (N, K) if trans_b else (K, N)
    as_ = (bk, bm) if trans_a else (bm, bk)
    bs_ = (bn, bk) if trans_b else (bk, bn)

    @T.prim_func
    def main(A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), out)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_s = T.alloc_shared(as_, dtype)
            B_s = T.alloc_shared(bs_, dtype)
            C_l = T.alloc_fragment((bm, bn), accum)
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                if trans_a:
                    T.copy(A[k * bk, by * bm], A_s)
                else:
                    T.copy(A[by * bm, k * bk], A_s)
                if trans_b:
                    T.copy(B[bx * bn, k * bk], B_s)
                else:
                    T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l, transpose_A=trans_a, transpose_B=trans_b, policy=policy)
            T.copy(C_l, C[by * bm, bx * bn])

    return main


@tilelang.jit(out_idx=[-1])
def reduce_dim(R, C, dim, kind="sum", threads=128, dtype="float32"):
    """out = reduce_<kind>(x, dim) with x loaded into a fragment (dst layout = src.reduce_dims)."""
    oshape = (C,) if dim == 0 else (R,)

    @T.prim_func
    def main(x: T.Tensor((R, C), dtype), out: T.Tensor(oshape, dtype)):
        with T.Kernel(1, threads=threads):
            xf = T.alloc_fragment((R, C), dtype)
            of = T.alloc_fragment(oshape, dtype)
            T.copy(x, xf)
            if kind == "sum":
                T.reduce_sum(xf, of, dim=dim)
            elif kind == "max":
                T.reduce_max(xf, of, dim=dim)
            elif kind == "min":
                T.reduce_min(xf, of, dim=dim)
            elif kind == "absmax":
                T.reduce_absmax(xf, of, dim=dim)
            else:
                T.reduce_abssum(xf, of, dim=dim)
            T.copy(of, out)

    return main


@tilelang.jit(out_idx=[-1])
def gemm_row_softmax(M, N, K, policy="FullRow"):
    """A gemm accumulator reduced along rows (max and sum) and normalised: row stats
    of an mma fragment, like FlashAttention's."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), P: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared((N, K), "float16")
            S = T.alloc_fragment((M, N), "float32")
            mx = T.alloc_fragment((M,), "float32")
            sm = T.alloc_fragment((M,), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, S, transpose_B=True, policy=policy, clear_accum=True)
            T.reduce_max(S, mx, dim=1)
            for i, j in T.Parallel(M, N):
                S[i, j] = T.exp(S[i, j] - mx[i])
            T.reduce_sum(S, sm, dim=1)
            for i, j in T.Parallel(M, N):
                P[i, j] = S[i, j] / sm[i]

    return main


@tilelang.jit(out_idx=[-1])
def column_sum_of_gemm(M, N, K):
    """Reduce a gemm accumulator along dim 0 (across warps: shared-memory AllReduce)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), out: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared((K, N), "float16")
            S = T.alloc_fragment((M, N), "float32")
            cs = T.alloc_fragment((N,), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, S, clear_accum=True)
            T.reduce_sum(S, cs, dim=0)
            T.copy(cs, out)

    return main


@tilelang.jit(out_idx=[-1])
def cast_copy(M, N, src="float32", dst="float16", bm=32, bn=64):
    """global -> fragment -> (cast) fragment -> shared -> global."""

    @T.prim_func
    def main(x: T.Tensor((M, N), src), y: T.Tensor((M, N), dst)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            a = T.alloc_fragment((bm, bn), src)
            b = T.alloc_fragment((bm, bn), dst)
            s = T.alloc_shared((bm, bn), dst)
            T.copy(x[by * bm, bx * bn], a)
            T.copy(a, b)
            T.copy(b, s)
            T.copy(s, y[by * bm, bx * bn])

    return main


@tilelang.jit
def atomic_sum_rows(M, N, bm=16):
    """Every block adds its rows into out (scalar atomics from a T.Parallel loop)."""

    @T.prim_func
    def main(x: T.Tensor((M, N), "float32"), out: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            for i, j in T.Parallel(bm, N):
                T.atomic_add(out[j], x[bx * bm + i, j])

    return main


@tilelang.jit(out_idx=[-1])
def fill_and_scale(M, N, value=2.5):
    """T.fill on fragment / shared tiles, a projection read, and an element store."""

    @T.prim_func
    def main(x: T.Tensor((M, N), "float32"), y: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((M, N), "float32")
            s = T.alloc_shared((M, N), "float32")
            T.fill(s, value)
            T.copy(x, f)
            for i, j in T.Parallel(M, N):
                f[i, j] = f[i, j] * s[i, j]
            T.copy(f, y)

    return main


@T.prim_func
def scale_by_scalar(x: T.Tensor((1024,), "float32"), s: T.float32, n: T.int32):
    """Scalar parameters, and a grid that depends on one."""
    with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
        for i in T.Parallel(128):
            x[bx * 128 + i] = x[bx * 128 + i] * s


@tilelang.jit
def debug_print_assert(N=64):
    """T.print of a scalar, of a fragment and of a message; T.device_assert."""

    @T.prim_func
    def main(x: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32):
            f = T.alloc_fragment((N,), "float32")
            T.copy(x, f)
            T.print(x[2], msg="x2")
            T.print(f, msg="frag")
            T.print(msg="hello")
            T.device_assert(x[0] == x[0], "x[0] is not NaN")

    return main


def reduce_shared(shape, dim):
    """out = reduce_sum(x, dim) with x in a shared tile (the generic lowering: each output element
    summed by its owner), for 2-D and 3-D tiles."""
    oshape = tuple(n for d, n in enumerate(shape) if d != dim)

    @T.prim_func
    def main(x: T.Tensor(shape, "float32"), out: T.Tensor(oshape, "float32")):
        with T.Kernel(1, threads=128):
            xs = T.alloc_shared(shape, "float32")
            of = T.alloc_fragment(oshape, "float32")
            T.copy(x, xs)
            T.reduce_sum(xs, of, dim=dim)
            T.copy(of, out)

    return main
