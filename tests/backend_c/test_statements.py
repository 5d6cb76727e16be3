"""Statements and parameters: while/break/continue, stepped and unrolled loops,
local.var scalars, scalar parameters of every kind, vector (Ramp/Broadcast)
stores, let bindings before the launch, large tiles in thread-local storage."""

import pytest
import torch

from tilelang.errors import TileLangError
from tilelang.ir import (
    Break,
    Broadcast,
    BufferStore,
    Continue,
    Copy,
    DataType,
    Fill,
    FloatImm,
    For,
    IfThenElse,
    IntImm,
    KernelLaunch,
    LetStmt,
    PrimFunc,
    Ramp,
    Var,
    While,
    cast,
    seq,
)

from .irb import alloc, full, kernel, loops, region, tensor
from .test_tileops import run_gemm


def test_while_break_continue_and_local_var(build):
    """Per row: index of the first element > 1.0 (or -1), and the count of
    negative elements before it (continue skips positives)."""
    R, W = 16, 50
    X, First, Neg = tensor("X", (R, W)), tensor("First", (R,), "int32"), tensor("Neg", (R,), "int32")

    def body(bx):
        j, a1 = alloc("j", (1,), "int32", "local.var", init=0)
        found, a2 = alloc("found", (1,), "int32", "local.var", init=-1)
        neg, a3 = alloc("neg", (1,), "int32", "local.var", init=0)
        step = seq(
            IfThenElse(X[bx, j[0]] > 1.0, seq(BufferStore(found, (IntImm(0),), j[0]), Break())),
            BufferStore(j, (IntImm(0),), j[0] + 1),
            IfThenElse(X[bx, j[0] - 1] >= 0.0, Continue()),
            BufferStore(neg, (IntImm(0),), neg[0] + 1),
        )
        return [a1, a2, a3, While(j[0] < W, step), BufferStore(First, (bx,), found[0]), BufferStore(Neg, (bx,), neg[0])]

    _, run = build(kernel("scan_rows", (X, First, Neg), (R,), body))
    x = torch.randn(R, W)
    x[3] = -1.0  # never above 1.0
    first, neg = torch.empty(R, dtype=torch.int32), torch.empty(R, dtype=torch.int32)
    run(x, first, neg)
    for r in range(R):
        hits = (x[r] > 1.0).nonzero()
        f = int(hits[0]) if len(hits) else -1
        assert first[r] == f
        upto = W if f < 0 else f
        assert neg[r] == int((x[r, :upto] < 0).sum())


def test_stepped_and_unrolled_loops(build):
    N = 40
    X = tensor("X", (N,))

    def body(bx):
        i, k = Var("i"), Var("k")
        return [
            For(i, IntImm(1), IntImm(13), "serial", BufferStore(X, (i,), X[i] + 1.0), IntImm(3)),  # 1, 4, ..., 37
            For(k, IntImm(0), IntImm(4), "unrolled", BufferStore(X, (k,), X[k] * 2.0)),
        ]

    art, run = build(kernel("loops", (X,), (1,), body))
    x = torch.zeros(N)
    x[:4] = 1.0
    ref = x.clone()
    ref[1:38:3] += 1.0
    ref[:4] *= 2.0
    run(x)
    assert torch.equal(x, ref)
    assert "#pragma GCC unroll 4" in art.kernel_source


def test_scalar_parameters_of_every_dtype(build):
    X = tensor("X", (8,), "float32")
    ps = [
        Var(n, DataType(t))
        for n, t in [
            ("a", "float16"),
            ("b", "bfloat16"),
            ("c", "int8"),
            ("d", "uint32"),
            ("e", "float64"),
            ("f", "bool"),
            ("g", "int64"),
        ]
    ]

    def body(bx):
        total = sum((cast(p, "float32") for p in ps[1:]), cast(ps[0], "float32"))
        return BufferStore(X, (IntImm(0),), total)

    _, run = build(kernel("scalars", (X, *ps), (1,), body))
    x = torch.zeros(8)
    run(x, 1.5, 2.25, -7, 4000000000, 0.125, True, -(2**40))
    # the same sum in float32, left to right
    want = torch.tensor(1.5)
    for v in (2.25, -7.0, 4000000000.0, 0.125, 1.0, float(-(2**40))):
        want = want + torch.tensor(v, dtype=torch.float32)
    assert x[0].item() == want.item()


def test_vector_store_is_scalarized(build):
    N = 32
    X, Y = tensor("X", (N,)), tensor("Y", (N,))

    def body(bx):
        i = Var("i")
        idx = Ramp(i * 4, IntImm(1), 4, DataType("int32x4"))
        from tilelang.ir import BinaryOp, BufferLoad

        val = BinaryOp(
            "add",
            BufferLoad(X, (idx,), DataType("float32x4")),
            Broadcast(FloatImm(0.5), 4, DataType("float32x4")),
            DataType("float32x4"),
        )
        return For(i, IntImm(0), IntImm(N // 4), "serial", BufferStore(Y, (idx,), val))

    _, run = build(kernel("vec", (X, Y), (1,), body))
    x, y = torch.randn(N), torch.empty(N)
    run(x, y)
    assert torch.equal(y, x + 0.5)


def test_let_before_launch_and_dynamic_grid(build):
    m = Var("m")
    X = tensor("X", (m,))
    half = Var("half")
    bx = Var("bx")
    body = loops([64], lambda i: IfThenElse(bx * 64 + i < half, BufferStore(X, (bx * 64 + i,), FloatImm(1.0))))
    f = PrimFunc("lets", (X,), seq(LetStmt(half, m // 2), KernelLaunch(((half + 63) // 64,), (bx,), (128, 1, 1), body)))
    _, run = build(f)
    for n in (10, 200, 257):
        x = torch.zeros(n)
        run(x)
        assert x.sum().item() == n // 2 and x[: n // 2].eq(1.0).all()


def test_large_tiles_use_thread_local_storage(build):
    art, c, ref = run_gemm(build, 130, 260, 40, 128, 256, 32)
    torch.testing.assert_close(c.double(), ref, rtol=1e-5, atol=1e-4)
    assert "static _Thread_local float C_local" in art.kernel_source


def test_dynamic_local_buffer_is_rejected(build):
    """A per-thread buffer with a run-time shape would be a stack VLA here and is not
    expressible in registers on GPUs: every target rejects it at its allocation."""
    m = Var("m")
    X, Y = tensor("X", (m,)), tensor("Y", (m,))

    def body(bx):
        F, a = alloc("F", (m,), "float32", "local")
        return [
            a,
            Copy(full(X), full(F)),
            Fill(region(Y, (0, m)), FloatImm(0.0)),
            loops([m], lambda i: BufferStore(Y, (i,), F[m - 1 - i])),
        ]

    with pytest.raises(TileLangError, match="not known at compile time"):
        build(kernel("reverse", (X, Y), (1,), body))
