"""Every tile operator on hand-built IR, run on the C backend and checked against
float32/float64 torch references, with sizes that are not multiples of the tiles."""

import pytest
import torch

from tilelang.backend.c import DeviceAssertError
from tilelang.ir import (
    Atomic,
    BufferStore,
    Copy,
    CumSum,
    DeviceAssert,
    Evaluate,
    Fill,
    FinalizeReducer,
    FloatImm,
    For,
    Gemm,
    IntImm,
    Print,
    Reduce,
    ReducerInit,
    ReducerUpdate,
    Span,
    Var,
    cast,
    compare,
)

from .irb import alloc, ceildiv, full, kernel, loops, region, tensor

torch.manual_seed(0)
TORCH = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
    "int8": torch.int8,
    "int32": torch.int32,
    "float8_e4m3fn": torch.float8_e4m3fn,
}


# ---------------------------------------------------------------------------
# copy / fill
# ---------------------------------------------------------------------------


def test_copy_chain_with_casts_and_partial_tiles(build):
    """global -> shared (fp32) -> fragment (fp16) -> global, 100x70 in 32x32 tiles;
    a padded copy of the tiles shows that out-of-bounds reads give 0."""
    M, N, bm, bn = 100, 70, 32, 32
    gm, gn = ceildiv(M, bm), ceildiv(N, bn)
    A, B = tensor("A", (M, N)), tensor("B", (M, N), "float16")
    P = tensor("P", (gm * bm, gn * bn))

    def body(bx, by):
        S, a1 = alloc("S", (bm, bn), "float32", "shared.dyn")
        F, a2 = alloc("F", (bm, bn), "float16")
        return [
            a1,
            a2,
            Copy(region(A, (by * bm, bm), (bx * bn, bn)), full(S)),
            Copy(full(S), full(F)),
            Copy(full(F), region(B, (by * bm, bm), (bx * bn, bn))),
            Copy(full(S), region(P, (by * bm, bm), (bx * bn, bn))),
        ]

    art, run = build(kernel("copy_chain", (A, B, P), (gn, gm), body))
    a = torch.randn(M, N)
    b = torch.empty(M, N, dtype=torch.float16)
    p = torch.full((gm * bm, gn * bn), 99.0)
    run(a, b, p)
    assert torch.equal(b, a.half())
    ref = torch.zeros_like(p)
    ref[:M, :N] = a
    assert torch.equal(p, ref)
    assert "tl_f32_to_f16" in art.kernel_source


def test_copy_unit_dims_row_to_column(build):
    """A[bx, 0:N] (1 x N) -> fragment (N,) -> C[0:N, bx] (N x 1): unit dims are dropped."""
    R, N = 5, 37
    A, C = tensor("A", (R, N)), tensor("C", (N, R))

    def body(bx):
        F, a = alloc("F", (N,))
        return [a, Copy(region(A, bx, (0, N)), full(F)), Copy(full(F), region(C, (0, N), bx))]

    _, run = build(kernel("copy_unit", (A, C), (R,), body))
    a, c = torch.randn(R, N), torch.empty(N, R)
    run(a, c)
    assert torch.equal(c, a.t())


def test_fill_partial_global_region_and_local(build):
    M, bm = 50, 16
    X = tensor("X", (M,), "float16")
    Y = tensor("Y", (ceildiv(M, bm) * bm,), "float32")

    def body(bx):
        F, a = alloc("F", (bm,), "float32", "local")
        return [
            a,
            Fill(region(X, (bx * bm, bm)), FloatImm(3.5, X.dtype)),
            Fill(full(F), FloatImm(-1.25)),
            Copy(full(F), region(Y, (bx * bm, bm))),
        ]

    _, run = build(kernel("fill", (X, Y), (ceildiv(M, bm),), body))
    base = torch.zeros(M + 8, dtype=torch.float16)  # the tail past M must stay untouched
    x = base[:M]
    y = torch.zeros(ceildiv(M, bm) * bm)
    run(x, y)
    assert torch.equal(x, torch.full((M,), 3.5, dtype=torch.float16))
    assert torch.equal(base[M:], torch.zeros(8, dtype=torch.float16))
    assert torch.equal(y, torch.full_like(y, -1.25))


# ---------------------------------------------------------------------------
# gemm
# ---------------------------------------------------------------------------


def gemm_kernel(
    M,
    N,
    K,
    bm,
    bn,
    bk,
    ta=False,
    tb=False,
    in_dt="float32",
    acc_dt="float32",
    out_dt=None,
    a_fragment=False,
    clear_accum=False,
    name="gemm",
):
    out_dt = out_dt or acc_dt
    A = tensor("A", (K, M) if ta else (M, K), in_dt)
    B = tensor("B", (N, K) if tb else (K, N), in_dt)
    C = tensor("C", (M, N), out_dt)

    def body(bx, by):
        As, a1 = alloc("A_shared", (bk, bm) if ta else (bm, bk), in_dt, "shared.dyn")
        Bs, a2 = alloc("B_shared", (bn, bk) if tb else (bk, bn), in_dt, "shared.dyn")
        Cl, a3 = alloc("C_local", (bm, bn), acc_dt)
        Af, a4 = alloc("A_frag", (bk, bm) if ta else (bm, bk), in_dt)
        k = Var("k")
        a_reg = region(A, (k * bk, bk), (by * bm, bm)) if ta else region(A, (by * bm, bm), (k * bk, bk))
        b_reg = region(B, (bx * bn, bn), (k * bk, bk)) if tb else region(B, (k * bk, bk), (bx * bn, bn))
        steps = [Copy(a_reg, full(As)), Copy(b_reg, full(Bs))]
        if a_fragment:
            steps.append(Copy(full(As), full(Af)))
        steps.append(Gemm(full(Af if a_fragment else As), full(Bs), full(Cl), ta, tb, "Square", clear_accum))
        from tilelang.ir import seq

        init = (
            Fill(full(Cl), FloatImm(7.0, Cl.dtype) if Cl.dtype.is_float else IntImm(7, Cl.dtype))
            if clear_accum
            else Fill(full(Cl), FloatImm(0.0, Cl.dtype) if Cl.dtype.is_float else IntImm(0, Cl.dtype))
        )
        return [
            a1,
            a2,
            a3,
            a4,
            init,
            For(k, IntImm(0), IntImm(ceildiv(K, bk)), "pipelined", seq(*steps)),
            Copy(full(Cl), region(C, (by * bm, bm), (bx * bn, bn))),
        ]

    return kernel(name, (A, B, C), (ceildiv(N, bn), ceildiv(M, bm)), body)


def run_gemm(build, M, N, K, bm, bn, bk, ta=False, tb=False, in_dt="float32", acc_dt="float32", out_dt=None, **kw):
    out_dt = out_dt or acc_dt
    art, run = build(gemm_kernel(M, N, K, bm, bn, bk, ta, tb, in_dt, acc_dt, out_dt, **kw))
    if TORCH[in_dt].is_floating_point:
        a = torch.randn(M, K).to(TORCH[in_dt])
        b = torch.randn(K, N).to(TORCH[in_dt])
    else:
        a = torch.randint(-100, 100, (M, K)).to(TORCH[in_dt])
        b = torch.randint(-100, 100, (K, N)).to(TORCH[in_dt])
    c = torch.empty(M, N, dtype=TORCH[out_dt])
    run(a.t().contiguous() if ta else a, b.t().contiguous() if tb else b, c)
    ref = a.double() @ b.double()
    return art, c, ref


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_fp32_transposes_partial_tiles(build, ta, tb):
    art, c, ref = run_gemm(build, 72, 40, 50, 32, 16, 16, ta, tb)
    torch.testing.assert_close(c.double(), ref, rtol=1e-5, atol=1e-4)
    assert "tl_gemm_f32(" in art.kernel_source


@pytest.mark.parametrize(
    "in_dt,acc_dt,out_dt,tol",
    [
        ("float16", "float32", "float16", 1e-2),
        ("bfloat16", "float32", "float32", 1e-3),
        ("float16", "float16", "float16", 2e-2),
        ("float8_e4m3fn", "float32", "float32", 1e-4),
        ("float64", "float64", "float64", 1e-12),
    ],
)
def test_gemm_mixed_precision(build, in_dt, acc_dt, out_dt, tol):
    _, c, ref = run_gemm(build, 70, 48, 96, 32, 32, 32, in_dt=in_dt, acc_dt=acc_dt, out_dt=out_dt)
    torch.testing.assert_close(c.double(), ref, rtol=tol, atol=tol * 10)


def test_gemm_int8_int32_exact(build):
    _, c, ref = run_gemm(build, 33, 20, 40, 16, 16, 16, in_dt="int8", acc_dt="int32")
    assert torch.equal(c.double(), ref)


def test_gemm_fragment_a_and_clear_accum(build):
    # A from a fragment (like FlashAttention's P @ V); clear_accum overwrites the 7.0 fill
    _, c, ref = run_gemm(build, 40, 24, 16, 32, 16, 16, a_fragment=True, clear_accum=True)
    torch.testing.assert_close(c.double(), ref, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------
# reductions and scans
# ---------------------------------------------------------------------------

FLOAT_KINDS = ["sum", "max", "min", "absmax", "abssum"]


def reduce_ref(kind, x, dim):
    return {
        "sum": lambda: x.sum(dim),
        "max": lambda: x.amax(dim),
        "min": lambda: x.amin(dim),
        "absmax": lambda: x.abs().amax(dim),
        "abssum": lambda: x.abs().sum(dim),
    }[kind]()


def combine_ref(kind, old, r):
    return {
        "sum": old + r,
        "abssum": old + r,
        "max": torch.maximum(old, r),
        "absmax": torch.maximum(old, r),
        "min": torch.minimum(old, r),
    }[kind]


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("clear", [True, False])
def test_reduce_float_kinds(build, dim, clear):
    R, W = 6, 45
    n = W if dim == 0 else R
    X = tensor("X", (R, W))
    Init = tensor("Init", (n,))
    Out = tensor("Out", (len(FLOAT_KINDS), n))

    def body(bx):
        F, a = alloc("F", (R, W))
        stmts = [a, Copy(full(X), full(F))]
        for k, kind in enumerate(FLOAT_KINDS):
            D, ad = alloc(f"D_{kind}", (n,))
            stmts += [
                ad,
                Copy(full(Init), full(D)),
                Reduce(kind, full(F), full(D), dim, clear),
                Copy(full(D), region(Out, k, (0, n))),
            ]
        return stmts

    _, run = build(kernel(f"reduce_d{dim}_{int(clear)}", (X, Init, Out), (1,), body))
    x, init = torch.randn(R, W), torch.randn(n)
    out = torch.empty(len(FLOAT_KINDS), n)
    run(x, init, out)
    for k, kind in enumerate(FLOAT_KINDS):
        r = reduce_ref(kind, x.double(), dim)
        ref = r if clear else combine_ref(kind, init.double(), r)
        torch.testing.assert_close(out[k].double(), ref, rtol=1e-5, atol=1e-5, msg=kind)


def test_reduce_keepdim_nan_propagate_and_bits(build):
    R, W = 4, 33
    X, Xi = tensor("X", (R, W)), tensor("Xi", (R, W), "int32")
    O1, O2, O3 = tensor("O1", (R, 1)), tensor("O2", (2, R)), tensor("O3", (3, R), "int32")

    def body(bx):
        F, a1 = alloc("F", (R, W))
        Fi, a2 = alloc("Fi", (R, W), "int32")
        K, a3 = alloc("K", (R, 1))
        Pm, a4 = alloc("Pm", (R,))
        Qm, a5 = alloc("Qm", (R,))
        stmts = [
            a1,
            a2,
            a3,
            a4,
            a5,
            Copy(full(X), full(F)),
            Copy(full(Xi), full(Fi)),
            Reduce("max", full(F), full(K), 1),
            Copy(full(K), full(O1)),
            Reduce("max", full(F), full(Pm), 1, True, True),
            Reduce("max", full(F), full(Qm), 1, True, False),
            Copy(full(Pm), region(O2, 0, (0, R))),
            Copy(full(Qm), region(O2, 1, (0, R))),
        ]
        for k, kind in enumerate(["bitand", "bitor", "bitxor"]):
            D, ad = alloc(f"D{k}", (R,), "int32")
            stmts += [ad, Reduce(kind, full(Fi), full(D), 1), Copy(full(D), region(O3, k, (0, R)))]
        return stmts

    _, run = build(kernel("reduce_misc", (X, Xi, O1, O2, O3), (1,), body))
    x = torch.randn(R, W)
    x[1, 5] = float("nan")
    xi = torch.randint(-(2**30), 2**30, (R, W), dtype=torch.int32)
    o1, o2, o3 = torch.empty(R, 1), torch.empty(2, R), torch.empty(3, R, dtype=torch.int32)
    run(x, xi, o1, o2, o3)
    finite_max = torch.where(torch.isnan(x), -torch.inf, x).amax(1)
    assert torch.equal(o1[:, 0][[0, 2, 3]], finite_max[[0, 2, 3]])
    assert torch.isnan(o2[0, 1]) and torch.equal(o2[0][[0, 2, 3]], finite_max[[0, 2, 3]])
    assert torch.equal(o2[1], finite_max)  # without nan_propagate NaN is ignored (like fmaxf)
    import functools
    import operator

    for k, op in enumerate([operator.and_, operator.or_, operator.xor]):
        ref = torch.tensor([functools.reduce(op, row.tolist()) for row in xi], dtype=torch.int32)
        assert torch.equal(o3[k], ref)


def test_cumsum_dims_reverse_inplace(build):
    R, W = 7, 19
    X, Out = tensor("X", (R, W)), tensor("Out", (5, R, W))

    def body(bx):
        F, a = alloc("F", (R, W))
        stmts = [a, Copy(full(X), full(F))]
        for k, (dim, rev) in enumerate([(0, False), (1, False), (0, True), (1, True)]):
            D, ad = alloc(f"D{k}", (R, W))
            stmts += [ad, CumSum(full(F), full(D), dim, rev), Copy(full(D), region(Out, k, (0, R), (0, W)))]
        stmts += [CumSum(full(F), full(F), 1, False), Copy(full(F), region(Out, 4, (0, R), (0, W)))]
        return stmts

    _, run = build(kernel("cumsum", (X, Out), (1,), body))
    x = torch.randn(R, W)
    out = torch.empty(5, R, W)
    run(x, out)
    xd = x.double()
    refs = [xd.cumsum(0), xd.cumsum(1), xd.flip(0).cumsum(0).flip(0), xd.flip(1).cumsum(1).flip(1), xd.cumsum(1)]
    for k, ref in enumerate(refs):
        torch.testing.assert_close(out[k].double(), ref, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------
# atomics
# ---------------------------------------------------------------------------


def test_atomic_add_across_blocks_splitk_style(build):
    """grid (tiles_n, tiles_m, S): every split adds its tile into C (scalar and region forms)."""
    S, M, N, bm, bn = 6, 40, 24, 16, 16
    X, C, C2 = tensor("X", (S, M, N)), tensor("C", (M, N)), tensor("C2", (M, N))

    def body(bx, by, bz):
        F, a = alloc("F", (bm, bn))

        def upd(i, j):
            return Atomic("add", region(C, by * bm + i, bx * bn + j), F[i, j])

        return [
            a,
            Copy(region(X, bz, (by * bm, bm), (bx * bn, bn)), full(F)),
            loops([bm, bn], upd),
            Atomic("add", region(C2, (by * bm, bm), (bx * bn, bn)), full(F)),
        ]

    art, run = build(kernel("splitk", (X, C, C2), (ceildiv(N, bn), ceildiv(M, bm), S), body))
    x = torch.randn(S, M, N)
    c, c2 = torch.zeros(M, N), torch.zeros(M, N)
    run(x, c, c2)
    torch.testing.assert_close(c, x.sum(0), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(c2, x.sum(0), rtol=1e-5, atol=1e-5)
    assert "tl_atomic_add_f32(" in art.kernel_source


@pytest.mark.parametrize("dt", ["int32", "float32", "float16", "bfloat16", "float64"])
def test_atomic_max_min_add_all_blocks_hit_one_element(build, dt):
    G, B = 64, 32
    X, O = tensor("X", (G * B,), dt), tensor("O", (3,), dt)

    def body(bx):
        def upd(i):
            v = X[bx * B + i]
            return [
                Atomic("max", region(O, 0), v),
                Atomic("min", region(O, 1), v),
                Atomic("add", region(O, 2), cast(IntImm(1), dt)),
            ]

        return loops([B], upd)

    _, run = build(kernel(f"atomic_{dt}", (X, O), (G,), body))
    td = TORCH[dt]
    x = torch.randint(-1000, 1000, (G * B,)).to(td) if not td.is_floating_point else torch.randn(G * B).to(td)
    o = torch.tensor([-1e4, 1e4, 0]).to(td) if td.is_floating_point else torch.tensor([-(10**6), 10**6, 0], dtype=td)
    run(x, o)
    assert o[0] == x.max() and o[1] == x.min()
    # each add rounds to the dtype: bfloat16 (8 significant bits) stops counting at 256
    assert o[2].item() == (256 if dt == "bfloat16" else G * B)


def test_atomic_on_local_buffer_is_plain_update(build):
    X, O = tensor("X", (64,)), tensor("O", (1,))

    def body(bx):
        L, a = alloc("L", (1,), "float32", "local")
        return [
            a,
            Fill(full(L), FloatImm(0.0)),
            loops([64], lambda i: Atomic("add", region(L, 0), X[i])),
            Copy(full(L), full(O)),
        ]

    art, run = build(kernel("atomic_local", (X, O), (1,), body))
    x, o = torch.randn(64), torch.empty(1)
    run(x, o)
    torch.testing.assert_close(o[0], x.sum(), rtol=1e-5, atol=1e-5)
    assert "tl_atomic" not in art.kernel_source.split("#include")[1]


# ---------------------------------------------------------------------------
# alloc_reducer
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dt,ops", [("float32", ["sum", "max", "min"]), ("int32", ["bitand", "bitor", "bitxor", "sum"])]
)
def test_reducers(build, dt, ops):
    R, W = 5, 29
    X, O = tensor("X", (R, W), dt), tensor("O", (len(ops), R), dt)

    def body(bx):
        F, a = alloc("F", (R, W), dt)
        stmts = [a, Copy(full(X), full(F))]
        for k, op in enumerate(ops):
            acc, aa = alloc(f"acc_{op}", (R,), dt, "local.reducer", op=op)
            D, ad = alloc(f"D_{op}", (R,), dt)
            stmts += [
                aa,
                ReducerInit(acc),
                loops([R, W], lambda i, j, acc=acc: ReducerUpdate(acc, (i,), F[i, j])),
                ad,
                FinalizeReducer(acc, D),
                Copy(full(D), region(O, k, (0, R))),
            ]
        return stmts

    _, run = build(kernel(f"reducer_{dt}", (X, O), (1,), body))
    td = TORCH[dt]
    x = torch.randn(R, W).to(td) if td.is_floating_point else torch.randint(-(2**20), 2**20, (R, W), dtype=td)
    o = torch.empty(len(ops), R, dtype=td)
    run(x, o)
    import functools
    import operator

    for k, op in enumerate(ops):
        if op == "sum":
            ref = x.double().sum(1)
        elif op in ("max", "min"):
            ref = getattr(x, "a" + op)(1).double()
        else:
            f = {"bitand": operator.and_, "bitor": operator.or_, "bitxor": operator.xor}[op]
            ref = torch.tensor([functools.reduce(f, row.tolist()) for row in x], dtype=torch.float64)
        torch.testing.assert_close(o[k].double(), ref, rtol=1e-5, atol=1e-5, msg=op)


# ---------------------------------------------------------------------------
# print / device_assert
# ---------------------------------------------------------------------------


def test_print_scalar_buffer_and_message(build, capfd):
    X = tensor("X", (6,))

    def body(bx):
        L, a = alloc("L", (2, 3), "float32", "local")
        return [
            a,
            loops([2, 3], lambda i, j: BufferStore(L, (i, j), X[i * 3 + j])),
            Print(None, "hello"),
            Print(X[1] * 2.0, "twice x1"),
            Print(L, "tile"),
        ]

    _, run = build(kernel("printer", (X,), (1,), body))
    run(torch.arange(6, dtype=torch.float32) + 0.5)
    out = capfd.readouterr().out
    assert "hello" in out
    assert "twice x1 = 3" in out
    assert "tile: L[1, 2] = 5.5" in out
    assert out.count("tile: L[") == 6


def test_device_assert_reports_message_and_span(build):
    X = tensor("X", (256,))

    def body(bx):
        i = Var("i")
        cond = compare("ge", X[bx * 64 + i], 0.0)
        return For(
            i,
            IntImm(0),
            IntImm(64),
            "parallel",
            DeviceAssert(cond, "inputs must be non-negative", span=Span("mykernel.py", 42)),
        )

    _, run = build(kernel("asserting", (X,), (4,), body))
    run(torch.rand(256))  # passes
    x = torch.rand(256)
    x[150] = -1.0
    with pytest.raises(
        DeviceAssertError, match=r"mykernel.py:42: device_assert failed: inputs must be non-negative \(block 2, 0, 0\)"
    ):
        run(x)
    run(torch.rand(256))  # the error state is reset on the next launch


def test_evaluate_intrinsic_and_unused_result(build):
    X = tensor("X", (4,))
    f = kernel("evals", (X,), (1,), lambda bx: [Evaluate(IntImm(0)), BufferStore(X, (IntImm(0),), X[0] + 1.0)])
    _, run = build(f)
    x = torch.zeros(4)
    run(x)
    assert x[0] == 1.0
