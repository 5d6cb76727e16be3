"""Kernels whose loops and branches are block-uniform only through scalars the program keeps
in `T.alloc_local` / `T.alloc_var` buffers or loads from global memory, with shared-memory
traffic inside (so they need barriers there), and loops that `break` / `continue`.
Shared by tests/conformance/test_sync_uniformity.py (CPU, nvcc, simulator) and its GPU twin
tests/gpu/test_conformance_sync.py; only the core package is imported."""

from __future__ import annotations

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def streamk_gemm(M, N, K, block_M=32, block_N=32, block_K=32, blocks=4, counter="local"):
    """Each block walks output tiles bx, bx + blocks, ... in a `while` loop whose counter lives
    in a one-element `T.alloc_local` (counter="local") or a `T.alloc_var` (counter="var")."""
    tiles_n = T.ceildiv(N, block_N)
    tiles = T.ceildiv(M, block_M) * tiles_n

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(blocks, threads=128) as bx:
            A_s = T.alloc_shared((block_M, block_K), "float16")
            B_s = T.alloc_shared((block_K, block_N), "float16")
            C_l = T.alloc_fragment((block_M, block_N), "float32")
            if counter == "local":
                tile = T.alloc_local((1,), "int32")
                tile[0] = bx
                while tile[0] < tiles:
                    T.clear(C_l)
                    for ko in T.serial(T.ceildiv(K, block_K)):
                        T.copy(A[(tile[0] // tiles_n) * block_M, ko * block_K], A_s)
                        T.copy(B[ko * block_K, (tile[0] % tiles_n) * block_N], B_s)
                        T.gemm(A_s, B_s, C_l)
                    T.copy(C_l, C[(tile[0] // tiles_n) * block_M, (tile[0] % tiles_n) * block_N])
                    tile[0] = tile[0] + blocks
            else:
                t = T.alloc_var("int32")
                t = bx
                while t < tiles:
                    T.clear(C_l)
                    for ko in T.serial(T.ceildiv(K, block_K)):
                        T.copy(A[(t // tiles_n) * block_M, ko * block_K], A_s)
                        T.copy(B[ko * block_K, (t % tiles_n) * block_N], B_s)
                        T.gemm(A_s, B_s, C_l)
                    T.copy(C_l, C[(t // tiles_n) * block_M, (t % tiles_n) * block_N])
                    t = t + blocks

    return main


@tilelang.jit(out_idx=[-1])
def sum_of_first_tiles(M, N, block_M=32, block_N=16):
    """C[:, :block_N] = the sum of the first L[0] column tiles of A (a `for` over a bound that the
    kernel loads into a local)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), L: T.Tensor((1,), "int32"), C: T.Tensor((M, block_N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            S = T.alloc_shared((block_M, block_N), "float32")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            n = T.alloc_local((1,), "int32")
            n[0] = L[0]
            T.clear(acc)
            for k in T.serial(n[0]):
                T.copy(A[bx * block_M, k * block_N], S)
                for i, j in T.Parallel(block_M, block_N):
                    acc[i, j] += S[i, j]
            T.copy(acc, C[bx * block_M, 0])

    return main


@tilelang.jit(out_idx=[-1])
def branch_on_loaded_flag(M, N, block_M=32):
    """C = 2 A (through shared memory) where F[0] > 0, else A + B (through shared memory)."""

    @T.prim_func
    def main(
        A: T.Tensor((M, N), "float32"),
        B: T.Tensor((M, N), "float32"),
        F: T.Tensor((1,), "int32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            S = T.alloc_shared((block_M, N), "float32")
            f = T.alloc_fragment((block_M, N), "float32")
            if F[0] > 0:
                T.copy(A[bx * block_M, 0], S)
                T.copy(S, f)
                for i, j in T.Parallel(block_M, N):
                    f[i, j] = f[i, j] * 2.0
            else:
                T.copy(B[bx * block_M, 0], S)
                T.copy(S, f)
                for i, j in T.Parallel(block_M, N):
                    f[i, j] = f[i, j] + A[bx * block_M + i, j]
            T.copy(f, C[bx * block_M, 0])

    return main


@tilelang.jit(out_idx=[-1])
def weighted_tiles(M, N, block_M=32, block_N=16, loop="serial", shared=True):
    """C = sum over column tiles k of (k + 1) A[:, tile k], skipping tile P[0] (`continue`) and
    stopping before tile P[1] (`break`), in a serial loop or a `while` loop on a `T.alloc_var`
    counter; through shared memory (`shared`) or straight from global memory."""
    tiles = T.ceildiv(N, block_N)

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), P: T.Tensor((2,), "int32"), C: T.Tensor((M, block_N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            S = T.alloc_shared((block_M, block_N), "float32")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            if loop == "serial":
                for k in T.serial(tiles):
                    if k == P[0]:
                        continue
                    if k >= P[1]:
                        break
                    if shared:
                        T.copy(A[bx * block_M, k * block_N], S)
                        for i, j in T.Parallel(block_M, block_N):
                            acc[i, j] += S[i, j] * T.cast(k + 1, "float32")
                    else:
                        for i, j in T.Parallel(block_M, block_N):
                            acc[i, j] += T.if_then_else(
                                k * block_N + j < N, A[bx * block_M + i, k * block_N + j], 0.0
                            ) * T.cast(k + 1, "float32")
            else:
                k = T.alloc_var("int32")
                k = -1
                while k < tiles - 1:
                    k = k + 1
                    if k == P[0]:
                        continue
                    if k >= P[1]:
                        break
                    if shared:
                        T.copy(A[bx * block_M, k * block_N], S)
                        for i, j in T.Parallel(block_M, block_N):
                            acc[i, j] += S[i, j] * T.cast(k + 1, "float32")
                    else:
                        for i, j in T.Parallel(block_M, block_N):
                            acc[i, j] += T.if_then_else(
                                k * block_N + j < N, A[bx * block_M + i, k * block_N + j], 0.0
                            ) * T.cast(k + 1, "float32")
            T.copy(acc, C[bx * block_M, 0])

    return main


@tilelang.jit(out_idx=[-1])
def positives_before_plunge(M, N, block_M=32):
    """C[r] = how many elements of row r are > 0 before its first element < -1.5: a serial loop
    per row inside T.Parallel (each thread its own trips), with `continue` and `break`."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M,), "int32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            for i in T.Parallel(block_M):
                cnt = T.alloc_local((1,), "int32")
                cnt[0] = 0
                for k in T.serial(N):
                    if A[bx * block_M + i, k] < -1.5:
                        break
                    if A[bx * block_M + i, k] <= 0.0:
                        continue
                    cnt[0] = cnt[0] + 1
                if bx * block_M + i < M:
                    C[bx * block_M + i] = cnt[0]

    return main


@tilelang.jit(out_idx=[-1])
def per_thread_trip_count(M, N, block_M=32, block_N=16, loop="for"):
    """Genuinely divergent: the trip count is written inside T.Parallel, so only the thread
    that runs that iteration holds it — and the loop needs a barrier. Must not compile."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), L: T.Tensor((1,), "int32"), C: T.Tensor((M, block_N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            S = T.alloc_shared((block_M, block_N), "float32")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            n = T.alloc_local((1,), "int32")
            for i in T.Parallel(1):
                n[0] = L[i]
            T.clear(acc)
            if loop == "for":
                for k in T.serial(n[0]):  # DIVERGENT-FOR
                    T.copy(A[bx * block_M, k * block_N], S)
                    for i, j in T.Parallel(block_M, block_N):
                        acc[i, j] += S[i, j]
            else:
                while n[0] > 0:  # DIVERGENT-WHILE
                    n[0] = n[0] - 1
                    T.copy(A[bx * block_M, n[0] * block_N], S)
                    for i, j in T.Parallel(block_M, block_N):
                        acc[i, j] += S[i, j]
            T.copy(acc, C[bx * block_M, 0])

    return main


# -- torch references -------------------------------------------------------------------------------


def tiles_of(a, block_N: int) -> list:
    """Column tiles of `a` (float64), the last one zero-padded to `block_N` columns."""
    import torch

    out = []
    for k0 in range(0, a.shape[1], block_N):
        t = torch.zeros(a.shape[0], block_N, dtype=torch.float64)
        part = a[:, k0 : k0 + block_N].double()
        t[:, : part.shape[1]] = part
        out.append(t)
    return out


def ref_first_tiles(a, n: int, block_N: int):
    ts = tiles_of(a, block_N)
    return sum(ts[:n], start=0 * ts[0])


def ref_positives_before_plunge(a):
    import torch

    out = []
    for row in a.tolist():
        n = 0
        for v in row:
            if v < -1.5:
                break
            if v <= 0:
                continue
            n += 1
        out.append(n)
    return torch.tensor(out, dtype=torch.int32)


def ref_weighted(a, skip: int, stop: int, block_N: int):
    ts = tiles_of(a, block_N)
    acc = 0 * ts[0]
    for k, t in enumerate(ts):
        if k == skip:
            continue
        if k >= stop:
            break
        acc = acc + t * (k + 1)
    return acc
