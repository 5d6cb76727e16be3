"""legalize_memory_access: out-of-bounds global reads give 0 and writes are
dropped; guards the analyzer proves redundant disappear."""

import torch

from tilelang.ir import Atomic, BufferStore, Copy, For, IfThenElse, Select, Var, collect
from tilelang.tileop import IN_BOUNDS

from .irb import alloc, ceildiv, full, kernel, loops, region, tensor


def vector_add(M, block=128):
    A, B, C = tensor("A", (M,)), tensor("B", (M,)), tensor("C", (M,))

    def body(bx):
        return loops([block], lambda i: BufferStore(C, (bx * block + i,), A[bx * block + i] + B[bx * block + i]))

    grid = ceildiv(M, block) if isinstance(M, int) else (M + block - 1) // block
    return kernel("vadd", (A, B, C), (grid,), body)


def guards(func):
    return collect(func.body, lambda n: isinstance(n, (IfThenElse, Select)))


def test_no_guards_when_tiles_divide_the_tensor(build):
    art, run = build(vector_add(1024))
    assert guards(art.lowered) == []
    assert " if (" not in art.kernel_source.split("tl__error_raised()) continue;")[1]
    a, b, c = torch.randn(1024), torch.randn(1024), torch.empty(1024)
    run(a, b, c)
    assert torch.equal(c, a + b)


def test_guards_kept_for_partial_tiles(build):
    art, run = build(vector_add(1000))
    g = guards(art.lowered)
    assert len(g) == 1 and isinstance(g[0], IfThenElse)  # the loads are covered by the store's guard
    a, b = torch.randn(1000), torch.randn(1000)
    buf = torch.full((1024,), 7.0)
    run(a, b, buf[:1000])
    assert torch.equal(buf[:1000], a + b)
    assert torch.equal(buf[1000:], torch.full((24,), 7.0))  # writes past the end were dropped


def test_dynamic_shape_keeps_guards(build):
    m = Var("m")
    art, run = build(vector_add(m))
    assert guards(art.lowered)
    for n in (1, 127, 128, 1000):
        a, b, c = torch.randn(n), torch.randn(n), torch.empty(n)
        run(a, b, c)
        assert torch.equal(c, a + b)


def test_out_of_bounds_reads_are_zero(build):
    """C[i] = A[i + shift] reads past the end: those elements read as 0."""
    M, block = 100, 32
    A, C = tensor("A", (M,)), tensor("C", (M,))
    f = kernel(
        "shift",
        (A, C),
        (ceildiv(M, block),),
        lambda bx: loops([block], lambda i: BufferStore(C, (bx * block + i,), A[bx * block + i + 10] - 1.0)),
    )
    _, run = build(f)
    a, c = torch.randn(M), torch.empty(M)
    run(a, c)
    ref = torch.cat([a[10:], torch.zeros(10)]) - 1.0
    assert torch.equal(c, ref)


def test_tile_copy_is_versioned_and_fast_path_unguarded(build):
    M, bm = 100, 32
    A, B = tensor("A", (M, M)), tensor("B", (M, M))

    def body(bx, by):
        S, a = alloc("S", (bm, bm), "float32", "shared.dyn")
        return [
            a,
            Copy(region(A, (by * bm, bm), (bx * bm, bm)), full(S)),
            Copy(full(S), region(B, (bx * bm, bm), (by * bm, bm))),
        ]

    art, run = build(kernel("tcopy", (A, B), (ceildiv(M, bm), ceildiv(M, bm)), body))
    fast = [f for f in collect(art.lowered.body, lambda n: isinstance(n, For)) if f.annotations.get(IN_BOUNDS)]
    assert len(fast) == 2
    for f in fast:
        assert guards(f) == []
    a = torch.randn(M, M)
    b = torch.zeros(M, M)
    run(a, b)
    # tile (bx, by) of A lands at (by, bx)-swapped block offsets
    ref = torch.zeros(M, M)
    for by in range(ceildiv(M, bm)):
        for bx in range(ceildiv(M, bm)):
            tile = torch.zeros(bm, bm)
            src = a[by * bm : (by + 1) * bm, bx * bm : (bx + 1) * bm]
            tile[: src.shape[0], : src.shape[1]] = src
            r0, c0 = bx * bm, by * bm
            h, w = min(bm, M - r0), min(bm, M - c0)
            ref[r0 : r0 + h, c0 : c0 + w] = tile[:h, :w]
    assert torch.equal(b, ref)


def test_out_of_bounds_atomics_are_dropped(build):
    M, bm = 50, 16
    X, C = tensor("X", (ceildiv(M, bm) * bm,)), tensor("C", (M,))

    def body(bx):
        F, a = alloc("F", (bm,))
        return [
            a,
            Copy(region(X, (bx * bm, bm)), full(F)),
            Atomic("add", region(C, (bx * bm, bm)), full(F)),
            loops([bm], lambda i: Atomic("max", region(C, bx * bm + i), F[i])),
        ]

    _, run = build(kernel("oob_atomic", (X, C), (ceildiv(M, bm),), body))
    x = torch.rand(ceildiv(M, bm) * bm) + 1.0
    buf = torch.full((M + 14,), 5.0)
    c = buf[:M]
    c.zero_()
    run(x, c)
    assert torch.equal(c, x[:M])
    assert torch.equal(buf[M:], torch.full((14,), 5.0))


def test_disable_pass_config(build):
    art, run = build(vector_add(1000), pass_configs={"tl.disable_safe_memory_legalize": True})
    assert guards(art.lowered) == []


def test_guard_inside_user_condition_is_not_repeated(build):
    """`if i < M:` written by the user already protects the access."""
    M, block = 1000, 128
    A, C = tensor("A", (M,)), tensor("C", (M,))

    def elem(bx, i):
        idx = bx * block + i
        return IfThenElse(idx < M, BufferStore(C, (idx,), A[idx] * 2.0))

    f = kernel("user_guard", (A, C), (ceildiv(M, block),), lambda bx: loops([block], lambda i: elem(bx, i)))
    art, run = build(f)
    assert len(guards(art.lowered)) == 1
    a, c = torch.randn(M), torch.empty(M)
    run(a, c)
    assert torch.equal(c, a * 2.0)


def test_block_vars_bound_by_grid():
    """The pass itself: bx*128+i < 1024 is provable from the grid and loop ranges."""
    from tilelang.transform.legalize_memory_access import legalize_memory_access

    f = vector_add(1024)
    assert guards(legalize_memory_access(f, {})) == []
    assert guards(legalize_memory_access(vector_add(1000), {}))
    assert legalize_memory_access(f, {}) is f  # nothing to change: the same object
