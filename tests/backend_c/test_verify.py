"""verify: structural errors are reported with the offending node's span."""

import pytest

from tilelang.errors import UnsupportedError, VerifyError
from tilelang.ir import (
    BufferStore,
    Copy,
    FloatImm,
    For,
    Gemm,
    IntImm,
    KernelLaunch,
    PrimFunc,
    Reduce,
    Span,
    Var,
    seq,
)
from tilelang.transform.lower_tile_ops import lower_tile_ops
from tilelang.transform.verify import verify

from .irb import alloc, full, kernel, loops, region, tensor

AT = Span("user.py", 12, 4, 12, 30)


def raises(func, match):
    with pytest.raises(VerifyError, match=match) as info:
        verify(func)
    return info.value


def test_buffer_used_after_its_scope_ends():
    X = tensor("X", (8,))

    def body(bx):
        F, a = alloc("F", (8,))
        i = Var("i")
        inner = seq(a, BufferStore(F, (i,), X[i]))
        return [For(i, IntImm(0), IntImm(8), "serial", inner), BufferStore(X, (IntImm(0),), F[0], span=AT)]

    e = raises(kernel("k", (X,), (1,), body), "outside the scope of its allocation")
    assert e.span == AT
    assert "user.py:12:5" in str(e)


def test_fragment_allocated_outside_the_kernel():
    X = tensor("X", (8,))
    F, a = alloc("F", (8,))
    bx = Var("bx")
    f = PrimFunc("k", (X,), seq(a, KernelLaunch((IntImm(1),), (bx,), (128, 1, 1), BufferStore(X, (IntImm(0),), F[0]))))
    raises(f, "outside T.Kernel")


def test_loop_extent_must_be_integer():
    X = tensor("X", (8,))
    i = Var("i")
    f = kernel(
        "k", (X,), (1,), lambda bx: For(i, IntImm(0), FloatImm(8.0), "serial", BufferStore(X, (i,), 1.0), span=AT)
    )
    assert raises(f, "loop extent").span == AT


def test_unknown_variable():
    X = tensor("X", (8,))
    ghost = Var("ghost")
    raises(kernel("k", (X,), (1,), lambda bx: BufferStore(X, (ghost,), 1.0)), "`ghost` is used outside")


@pytest.mark.parametrize(
    "scopes,match",
    [
        (("global", "shared.dyn", "local.fragment"), "operand A .* global"),
        (("shared.dyn", "shared.dyn", "shared.dyn"), "operand C .* shared.dyn"),
    ],
)
def test_gemm_operand_scopes(scopes, match):
    G = tensor("G", (16, 16))

    def body(bx):
        bufs, allocs = [], []
        for name, sc in zip("ABC", scopes):
            if sc == "global":
                bufs.append(G)
            else:
                b, a = alloc(name, (16, 16), "float32", sc)
                bufs.append(b)
                allocs.append(a)
        return [*allocs, Gemm(full(bufs[0]), full(bufs[1]), full(bufs[2]), span=AT)]

    assert raises(kernel("k", (G,), (1,), body), match).span == AT


@pytest.mark.parametrize("ta,tb,ok", [(False, False, False), (True, False, True), (False, True, False)])
def test_gemm_shapes_respect_transposes(ta, tb, ok):
    X = tensor("X", (1,))

    def body(bx):
        A, a1 = alloc("A", (32, 16), "float32", "shared.dyn")  # (K=32, M=16) when transposed
        B, a2 = alloc("B", (32, 8), "float32", "shared.dyn")
        C, a3 = alloc("C", (16, 8))
        return [a1, a2, a3, Gemm(full(A), full(B), full(C), ta, tb)]

    f = kernel("k", (X,), (1,), body)
    if ok:
        verify(f)
    else:
        raises(f, "T.gemm operand shapes disagree")


def test_reduce_dst_shape_rule():
    X = tensor("X", (1,))

    def body(bx, shape):
        S, a1 = alloc("S", (4, 8))
        D, a2 = alloc("D", shape)
        return [a1, a2, Reduce("sum", full(S), full(D), 1, span=AT)]

    for good in [(4,), (4, 1)]:
        verify(kernel("k", (X,), (1,), lambda bx, good=good: body(bx, good)))
    assert (
        raises(kernel("k", (X,), (1,), lambda bx: body(bx, (8,))), "reducing \\[4, 8\\] along dim 1 gives \\[4\\]").span
        == AT
    )


def test_copy_extents_must_match():
    A = tensor("A", (64, 64))

    def body(bx):
        S, a = alloc("S", (32, 16), "float32", "shared.dyn")
        return [a, Copy(region(A, (0, 32), (0, 32)), full(S))]

    raises(kernel("k", (A,), (1,), body), "different shapes")


def test_unknown_target_has_no_lowering(monkeypatch):
    from tilelang.tileop import copy as copy_ops

    # a target whose rules are not registered (the Metal rules register when its pipeline is imported)
    monkeypatch.delitem(copy_ops.RULES, "metal", raising=False)
    X = tensor("X", (8,))

    def body(bx):
        F, a = alloc("F", (8,))
        return [a, Copy(full(X), full(F), span=AT)]

    with pytest.raises(UnsupportedError, match="T.copy has no lowering for target 'metal'") as info:
        lower_tile_ops(kernel("k", (X,), (1,), body), {"target": "metal"})
    assert info.value.span == AT


def test_unlowered_tile_op_is_rejected_by_codegen():
    from tilelang.backend.c import generate

    X = tensor("X", (8,))

    def body(bx):
        F, a = alloc("F", (8,))
        return [a, Copy(full(X), full(F))]

    with pytest.raises(UnsupportedError, match="unlowered"):
        generate(kernel("k", (X,), (1,), body))


def test_valid_kernel_passes_unchanged():
    X = tensor("X", (8,))
    f = kernel("k", (X,), (1,), lambda bx: loops([8], lambda i: BufferStore(X, (i,), X[i] + 1.0)))
    assert verify(f) is f
