"""Thread-level kernels written the way public TileLang programs write them: thread indices
from `T.get_thread_binding`, per-thread `T.alloc_local` arrays, `T.vectorized` loads, and the
cross-thread combination by shared-memory atomics, `T.tvm_thread_allreduce` or warp shuffles.
Shared by tests/conformance/test_thread_level.py, tests/gpu/test_conformance_thread_level.py
and benchmarks/gemv.py."""

from __future__ import annotations

import torch

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def gemv_per_row(N: int, K: int, block_n: int = 64, block_k: int = 32, dtype: str = "float16", accum: str = "float"):
    """One thread per output row; the block stages a K-slice of x and its rows of W in shared memory."""

    @T.prim_func
    def main(x: T.Tensor((K,), dtype), W: T.Tensor((N, K), dtype), y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_n), threads=block_n) as bn:
            tn = T.get_thread_binding(0)
            xs = T.alloc_shared((block_k,), dtype)
            ws = T.alloc_shared((block_n, block_k), dtype)
            acc = T.alloc_local((1,), accum)
            T.clear(acc)
            for kb in T.serial(T.ceildiv(K, block_k)):
                for kk in T.serial(block_k):
                    xs[kk] = x[kb * block_k + kk]
                    ws[tn, kk] = W[bn * block_n + tn, kb * block_k + kk]
                for kk in T.serial(block_k):
                    acc[0] += xs[kk].astype(accum) * ws[tn, kk].astype(accum)
            if bn * block_n + tn < N:
                y[bn * block_n + tn] = acc[0]

    return main


@tilelang.jit(out_idx=[-1])
def gemv_split_k_atomic(N: int, K: int, block_n: int = 32, reduce_threads: int = 8, dtype: str = "float16",
                        accum: str = "float"):  # fmt: skip
    """threads=(block_n, reduce_threads): thread (tn, tk) sums a strided slice of row tn with
    vectorized loads; the partial sums meet in shared memory through atomics."""
    vec = 8
    step = reduce_threads * vec

    @T.prim_func
    def main(x: T.Tensor((K,), dtype), W: T.Tensor((N, K), dtype), y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_n), threads=(block_n, reduce_threads)) as bn:
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            xl = T.alloc_local((vec,), dtype)
            wl = T.alloc_local((vec,), dtype)
            acc = T.alloc_local((1,), accum)
            partial = T.alloc_shared((block_n,), accum)
            if tk == 0:
                partial[tn] = 0
            T.clear(acc)
            for kb in T.serial(T.ceildiv(K, step)):
                for v in T.vectorized(vec):
                    xl[v] = x[kb * step + tk * vec + v]
                    wl[v] = W[bn * block_n + tn, kb * step + tk * vec + v]
                for v in T.serial(vec):
                    acc[0] += xl[v].astype(accum) * wl[v].astype(accum)
            T.atomic_add(partial[tn], acc[0])
            if tk == 0:
                y[bn * block_n + tn] = partial[tn]

    return main


@tilelang.jit(out_idx=[-1])
def gemv_allreduce(N: int, K: int, block_n: int = 8, reduce_threads: int = 32, reduce_axis: int = 1,
                   unroll: int = 1, dtype: str = "float16", accum: str = "float"):  # fmt: skip
    """As gemv_split_k_atomic, with the partial sums combined by T.tvm_thread_allreduce over the
    thread axis `reduce_axis` (1: threads=(block_n, reduce_threads), as the public example; 0:
    threads=(reduce_threads, block_n), the reducing threads are neighbours in a warp)."""
    vec = 8
    step = reduce_threads * vec
    threads = (block_n, reduce_threads) if reduce_axis == 1 else (reduce_threads, block_n)

    @T.prim_func
    def main(x: T.Tensor((K,), dtype), W: T.Tensor((N, K), dtype), y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_n), threads=threads) as bn:
            tn = T.get_thread_binding(1 - reduce_axis)
            tk = T.get_thread_binding(reduce_axis)
            xl = T.alloc_local((vec,), dtype)
            wl = T.alloc_local((vec,), dtype)
            acc = T.alloc_local((1,), accum)
            T.clear(acc)
            for kb in T.unroll(T.ceildiv(K, step), unroll_factor=unroll):
                for v in T.vectorized(vec):
                    xl[v] = x[kb * step + tk * vec + v]
                    wl[v] = W[bn * block_n + tn, kb * step + tk * vec + v]
                for v in T.serial(vec):
                    acc[0] += xl[v].astype(accum) * wl[v].astype(accum)
            total = T.alloc_local((1,), accum)
            with T.attr(
                T.comm_reducer(lambda a, b: a + b, [T.Cast(accum, 0)]),
                "reduce_scope",
                T.reinterpret(T.uint64(0), dtype="handle"),
            ):
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, total[0], tk, dtype="handle"))
            y[bn * block_n + tn] = total[0]

    return main


@tilelang.jit(out_idx=[-1])
def gemv_warp_shuffle(N: int, K: int, rows: int = 4, unroll: int = 1, dtype: str = "float16", accum: str = "float"):
    """One warp per row (threads=(32, rows)): lane tx sums a strided slice, then a butterfly of
    T.shfl_xor gives every lane the row's total."""
    vec = 8
    step = 32 * vec

    @T.prim_func
    def main(x: T.Tensor((K,), dtype), W: T.Tensor((N, K), dtype), y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, rows), threads=(32, rows)) as bn:
            lane = T.get_thread_binding(0)
            row = bn * rows + T.get_thread_binding(1)
            xl = T.alloc_local((vec,), dtype)
            wl = T.alloc_local((vec,), dtype)
            acc = T.alloc_local((1,), accum)
            T.clear(acc)
            for kb in T.unroll(T.ceildiv(K, step), unroll_factor=unroll):
                for v in T.vectorized(vec):
                    xl[v] = x[kb * step + lane * vec + v]
                    wl[v] = W[row, kb * step + lane * vec + v]
                for v in T.serial(vec):
                    acc[0] += xl[v].astype(accum) * wl[v].astype(accum)
            for s in T.unroll(5):
                acc[0] += T.shfl_xor(acc[0], 16 >> s)
            if lane == 0:
                y[row] = acc[0]  # (rows past N: dropped, as every out-of-bounds global store)

    return main


@tilelang.jit
def gemv_split_k_global(N: int, K: int, rows: int = 4, split: int = 4, unroll: int = 1, dtype: str = "float16",
                        accum: str = "float"):  # fmt: skip
    """Split-K over the grid: block (bn, bk) gives one warp per row its K-chunk (lanes along K,
    16-byte vectors), sums the lanes with T.shfl_down and lane 0 adds the partial into the float32
    output with a global atomic (the caller zeroes `y`)."""
    vec = 8
    step = 32 * vec
    trips = (K + split * step - 1) // (split * step)
    chunk = trips * step

    @T.prim_func
    def main(x: T.Tensor((K,), dtype), W: T.Tensor((N, K), dtype), y: T.Tensor((N,), accum)):
        with T.Kernel(T.ceildiv(N, rows), split, threads=(32, rows)) as (bn, bk):
            lane = T.get_thread_binding(0)
            row = bn * rows + T.get_thread_binding(1)
            xl = T.alloc_local((vec,), dtype)
            wl = T.alloc_local((vec,), dtype)
            acc = T.alloc_local((1,), accum)
            T.clear(acc)
            for kb in T.unroll(trips, unroll_factor=unroll):
                for v in T.vectorized(vec):
                    xl[v] = x[bk * chunk + kb * step + lane * vec + v]
                    wl[v] = W[row, bk * chunk + kb * step + lane * vec + v]
                for v in T.serial(vec):
                    acc[0] += xl[v].astype(accum) * wl[v].astype(accum)
            for s in T.unroll(5):
                acc[0] += T.shfl_down(acc[0], 16 >> s)
            if lane == 0:
                T.atomic_add(y[row], acc[0])

    return main


@tilelang.jit(out_idx=[-1])
def store_thread_index(n: int):
    """`A[tx] = tx` outside T.Parallel: every thread stores its own element."""

    @T.prim_func
    def main(A: T.Tensor((n,), "int32")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding(0)
            A[tx] = tx

    return main


@tilelang.jit(out_idx=[-1])
def thread_grid_2d(M: int, N: int, tx_n: int = 32, ty_n: int = 4):
    """threads=(32, 4); each thread fills a strided set of (i, j) with i*N + j + by-offsets."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, tx_n), T.ceildiv(M, ty_n), threads=(tx_n, ty_n)) as (bx, by):
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            i = by * ty_n + ty
            j = bx * tx_n + tx
            if i < M and j < N:
                A[i, j] = T.Cast("float32", i * 1000 + j) + T.Cast("float32", T.get_thread_extent(1))

    return main


@tilelang.jit(out_idx=[-1])
def thread_binding_loop(n: int, bound: int):
    """`for t in T.thread_binding(bound, thread="threadIdx.x")`: only threads below `bound` run."""

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, bound), threads=128) as bx:
            for t in T.thread_binding(0, bound, thread="threadIdx.x"):
                if bx * bound + t < n:
                    B[bx * bound + t] = A[bx * bound + t] * 2.0

    return main


@tilelang.jit(out_idx=[-1])
def block_reduce_shared(n: int, threads: int = 128):
    """Per-thread partial sums, a shared-memory tree reduction with barriers between levels."""
    levels = threads.bit_length() - 1

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), out: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding(0)
            acc = T.alloc_local((1,), "float32")
            buf = T.alloc_shared((threads,), "float32")
            T.clear(acc)
            for k in T.serial(T.ceildiv(n, threads)):
                if k * threads + tx < n:
                    acc[0] += A[k * threads + tx]
            buf[tx] = acc[0]
            for s in T.serial(levels):
                T.sync_threads()
                half = (threads >> 1) >> s
                if tx < half:
                    buf[tx] = buf[tx] + buf[tx + half]
            T.sync_threads()
            if tx == 0:
                out[0] = buf[0]

    return main


@tilelang.jit(out_idx=[-1])
def uniform_and_varying_stores(n: int):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), out: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding(0)
            cnt = T.alloc_shared((1,), "float32")
            cnt[0] = 0.0  # uniform: one thread
            T.sync_threads()
            cnt[0] = cnt[0] + 1.0  # uniform read-modify-write: once, not n times
            T.sync_threads()
            out[tx] = A[tx] + cnt[0]
            if tx == 3:
                out[0] = 100.0  # uniform value under per-thread control: thread 3 does it

    return main


@tilelang.jit(out_idx=[-1])
def shuffles(n: int):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), out: T.Tensor((4, n), "float32")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding(0)
            v = T.alloc_local((1,), "float32")
            r = T.alloc_local((4,), "float32")
            v[0] = A[tx]
            r[0] = T.shfl_xor(v[0], 5)
            r[1] = T.shfl_down(v[0], 3, 16)
            r[2] = T.shfl_up(v[0], 2)
            r[3] = T.shfl_sync(v[0], 7, 8)
            for q in T.serial(4):
                out[q, tx] = r[q]

    return main


def ref_shuffles(a):
    n = a.numel()
    out = torch.zeros(4, n)
    for t in range(n):
        lane = t % 32
        out[0, t] = a[t - lane + (lane ^ 5)]
        p = t % 16
        out[1, t] = a[t + 3] if p + 3 < 16 else a[t]
        out[2, t] = a[t - 2] if lane >= 2 else a[t]
        out[3, t] = a[t - t % 8 + 7]
    return out


@tilelang.jit(out_idx=[-1])
def row_max_allreduce(rows: int):
    @T.prim_func
    def main(A: T.Tensor((rows, 32), "float32"), out: T.Tensor((rows,), "float32")):
        with T.Kernel(1, threads=(32, rows)):
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            v = T.alloc_local((1,), "float32")
            r = T.alloc_local((1,), "float32")
            v[0] = A[ty, tx]
            with T.attr(T.comm_reducer(lambda a, b: T.max(a, b), [T.Cast("float32", 0)]), "reduce_scope", 0):
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), v[0], True, r[0], tx, dtype="handle"))
            if tx == 0:
                out[ty] = r[0]

    return main


@tilelang.jit(out_idx=[-1])
def reducer_sum_and_max(n: int, threads: int = 128):
    """Per-thread partial sums combined by T.alloc_reducer / T.finalize_reducer (sum), and the
    largest thread index by a max reducer: every thread updates its own replica outside
    T.Parallel, finalize combines the replicas."""

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), out: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding(0)
            acc = T.alloc_local((1,), "float32")
            total = T.alloc_reducer((1,), "float32", op="sum")
            top = T.alloc_reducer((1,), "float32", op="max")
            s = T.alloc_fragment((1,), "float32")
            m = T.alloc_fragment((1,), "float32")
            T.clear(acc)
            for k in T.serial(T.ceildiv(n, threads)):
                if k * threads + tx < n:
                    acc[0] += A[k * threads + tx]
            T.reducer_init(total)
            T.reducer_init(top)
            T.reducer_update(total[0], acc[0])
            T.reducer_update(top[0], T.Cast("float32", tx))
            T.finalize_reducer(total, s)
            T.finalize_reducer(top, m)
            out[0] = s[0]
            out[1] = m[0]

    return main


@tilelang.jit(out_idx=[-1])
def neighbour_sums_until_flag(n: int, threads: int = 64):
    """A `T.alloc_var` per thread, a loop with barriers whose `break` reads shared memory at a
    uniform place: each trip, thread tx adds its neighbour's element of the staged tile."""

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), out: T.Tensor((threads,), "float32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding(0)
            x = T.alloc_var("float32", init=1.0)
            buf = T.alloc_shared((threads,), "float32")
            for k in T.serial(T.ceildiv(n, threads)):
                buf[tx] = T.if_then_else(k * threads + tx < n, A[k * threads + tx], 0.0)
                T.sync_threads()
                if buf[0] > 2.5:
                    break
                x = x + buf[(tx + 1) % threads]
                T.sync_threads()
            out[tx] = x

    return main


def ref_neighbour_sums_until_flag(a, threads: int = 64):
    x = torch.ones(threads)
    for k in range((a.numel() + threads - 1) // threads):
        buf = torch.zeros(threads)
        seg = a[k * threads : (k + 1) * threads]
        buf[: seg.numel()] = seg
        if buf[0] > 2.5:
            break
        x += buf[(torch.arange(threads) + 1) % threads]
    return x


@tilelang.jit(out_idx=[-1])
def center_rows_mixed(M: int, N: int, bm: int = 32, bn: int = 64):
    """Tile ops, thread-level code and T.Parallel in one kernel: T.copy stages a tile, threads
    below bm sum one row each into shared memory, a T.Parallel loop subtracts the row means."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), out: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            tx = T.get_thread_binding(0)
            S = T.alloc_shared((bm, bn), "float32")
            R = T.alloc_shared((bm,), "float32")
            F = T.alloc_fragment((bm, bn), "float32")
            T.copy(A[bx * bm, 0], S)
            if tx < bm:
                acc = T.alloc_local((1,), "float32")
                acc[0] = 0.0
                for j in T.serial(N):
                    acc[0] += S[tx, j]
                R[tx] = acc[0]
            for i, j in T.Parallel(bm, bn):
                F[i, j] = S[i, j] - R[i] / N
            T.copy(F, out[bx * bm, 0])

    return main


@tilelang.jit(out_idx=[-1])
def lane_and_warp_indices(tx_n: int = 64, ty_n: int = 4):
    """T.get_lane_idx / get_warp_idx / get_warp_group_idx / shuffle_elect of every thread of a
    threads=(tx_n, ty_n) block, at its linear index."""

    @T.prim_func
    def main(out: T.Tensor((4, tx_n * ty_n), "int32")):
        with T.Kernel(1, threads=(tx_n, ty_n)):
            t = T.get_thread_binding(0) + tx_n * T.get_thread_binding(1)
            out[0, t] = T.get_lane_idx()
            out[1, t] = T.get_warp_idx()
            out[2, t] = T.get_warp_group_idx()
            out[3, t] = T.Cast("int32", T.shuffle_elect(32))

    return main


@tilelang.jit(out_idx=[-1])
def axpy_vectorized(n: int, threads: int = 128, vec: int = 4, dtype: str = "float32"):
    """y = 2 x + b, each thread loading and storing `vec` contiguous elements with T.vectorized
    through per-thread local arrays (the tail block guarded element by element)."""

    @T.prim_func
    def main(x: T.Tensor((n,), dtype), b: T.Tensor((n,), dtype), y: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, threads * vec), threads=threads) as bx:
            tx = T.get_thread_binding()
            base = (bx * threads + tx) * vec
            xl = T.alloc_local((vec,), dtype)
            bl = T.alloc_local((vec,), dtype)
            for v in T.vectorized(vec):
                xl[v] = x[base + v]
                bl[v] = b[base + v]
            for v in T.vectorized(vec):
                y[base + v] = xl[v] * 2 + bl[v]

    return main


@tilelang.jit(out_idx=[-1])
def block_sum_allreduce_2d(n: int, tx_n: int = 32, ty_n: int = 4):
    """T.tvm_thread_allreduce over both thread axes of a threads=(32, 4) block: every thread
    gets the block's sum; each writes it at its own place."""
    threads = tx_n * ty_n

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), out: T.Tensor((threads,), "float32")):
        with T.Kernel(1, threads=(tx_n, ty_n)):
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            t = ty * tx_n + tx
            acc = T.alloc_local((1,), "float32")
            total = T.alloc_local((1,), "float32")
            T.clear(acc)
            for k in T.serial(T.ceildiv(n, threads)):
                if k * threads + t < n:
                    acc[0] += A[k * threads + t]
            with T.attr(T.comm_reducer(lambda a, b: a + b, [T.Cast("float32", 0)]), "reduce_scope", 0):
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, total[0], tx, ty, dtype="handle"))
            out[t] = total[0]

    return main
