"""The `simplify` pass on hand-built PrimFuncs."""

from tilelang.ir import (
    Allocate,
    BufferStore,
    Copy,
    FloatImm,
    For,
    IfThenElse,
    IntImm,
    KernelLaunch,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Var,
    While,
    binary,
    make_buffer,
    select,
    seq,
)
from tilelang.ir.dtype import bool_
from tilelang.transform.simplify import simplify, simplify_expr


def kernel(grid, body_fn, params, threads=128):
    """PrimFunc with one launch; `body_fn(block_vars)` builds the body."""
    grid = tuple(grid)
    bvs = tuple(Var(n) for n in ("bx", "by", "bz")[: len(grid)])
    launch = KernelLaunch(grid, bvs, (threads, 1, 1), body_fn(*bvs))
    return PrimFunc("k", tuple(params), launch)


def guarded_store(A, bound):
    def body(bx):
        i = Var("i")
        store = BufferStore(A, (bx * 128 + i,), FloatImm(1.0))
        return For(i, IntImm(0), IntImm(128), "parallel", IfThenElse(bx * 128 + i < bound, store))

    return body


def test_guard_removed_when_grid_is_static():
    A = make_buffer("A", (1024,), "float32")
    f = kernel([IntImm(8)], guarded_store(A, 1024), [A])
    g = simplify(f)
    assert "if" not in g.script()
    assert "A[bx * 128 + i] = 1.0" in g.script()
    assert "if bx * 128 + i < 1024:" in f.script()  # the input is untouched


def test_guard_kept_when_grid_is_symbolic():
    M = Var("M")
    A = make_buffer("A", (M,), "float32")
    f = kernel([(M + 127) // 128], guarded_store(A, 1024), [A])
    assert "if bx * 128 + i < 1024:" in simplify(f).script()
    f2 = kernel([(M + 127) // 128], guarded_store(A, M), [A])
    assert "if bx * 128 + i < M:" in simplify(f2).script()


def test_guard_kept_when_it_can_fail():
    A = make_buffer("A", (1000,), "float32")
    f = kernel([IntImm(8)], guarded_store(A, 1000), [A])
    assert "if bx * 128 + i < 1000:" in simplify(f).script()


def test_unchanged_function_is_returned_as_is():
    A = make_buffer("A", (1024,), "float32")
    f = kernel([IntImm(8)], lambda bx: BufferStore(A, (bx * 128,), FloatImm(0.0)), [A])
    assert simplify(f) is f


def test_false_branch_and_else():
    A = make_buffer("A", (16,), "float32")

    def body(bx):
        i = Var("i")
        then = BufferStore(A, (i,), FloatImm(1.0))
        other = BufferStore(A, (i,), FloatImm(2.0))
        return For(i, IntImm(0), IntImm(16), "serial", IfThenElse(i >= 16, then, other))

    text = simplify(kernel([IntImm(1)], body, [A])).script()
    assert "if" not in text and "A[i] = 2.0" in text and "1.0" not in text


def test_nested_condition_known_from_enclosing_if():
    A = make_buffer("A", (64,), "float32")
    n = Var("n")

    def body(bx):
        i = Var("i")
        inner = IfThenElse(i < n + 1, BufferStore(A, (i,), FloatImm(1.0)), BufferStore(A, (i,), FloatImm(3.0)))
        outer = IfThenElse(i < n, inner, BufferStore(A, (i,), FloatImm(2.0)))
        return For(i, IntImm(0), IntImm(64), "serial", outer)

    text = simplify(kernel([IntImm(1)], body, [A, n])).script()
    assert text.count("if") == 1 and "3.0" not in text
    assert "if i < n:" in text and "A[i] = 2.0" in text


def test_else_branch_knows_the_negation():
    A = make_buffer("A", (64,), "float32")

    def body(bx):
        i = Var("i")
        inner = IfThenElse(i >= 32, BufferStore(A, (i,), FloatImm(1.0)))
        return For(i, IntImm(0), IntImm(64), "serial", IfThenElse(i < 32, BufferStore(A, (i,), FloatImm(2.0)), inner))

    text = simplify(kernel([IntImm(1)], body, [A])).script()
    assert text.count("if") == 1 and "else:" in text and "A[i] = 1.0" in text


def test_condition_reading_memory_is_not_assumed():
    A = make_buffer("A", (4,), "int32")
    B = make_buffer("B", (4,), "int32")

    def body(bx):
        inner = IfThenElse(A[0] < 5, BufferStore(B, (IntImm(0),), IntImm(1)))
        return IfThenElse(A[0] < 5, seq(BufferStore(A, (IntImm(0),), IntImm(10)), inner))

    text = simplify(kernel([IntImm(1)], body, [A, B])).script()
    assert text.count("if A[0] < 5:") == 2


def test_zero_extent_loops_and_empty_bodies_removed():
    A = make_buffer("A", (16,), "float32")
    n = Var("n")

    def body(bx):
        i, j, k = Var("i"), Var("j"), Var("k")
        dead = For(i, IntImm(0), n - n, "serial", BufferStore(A, (i,), FloatImm(1.0)))
        empty = For(j, IntImm(0), IntImm(4), "serial", IfThenElse(j > 10, BufferStore(A, (j,), FloatImm(1.0))))
        live = For(k, IntImm(0), IntImm(4), "serial", BufferStore(A, (k,), FloatImm(5.0)))
        return seq(dead, empty, live)

    g = simplify(kernel([IntImm(1)], body, [A, n]))
    text = g.script()
    assert text.count("for ") == 1 and "A[k] = 5.0" in text
    assert isinstance(g.body.body, For)  # the sequence collapsed to its one statement


def test_loop_with_step_and_start():
    A = make_buffer("A", (64,), "float32")

    def body(bx):
        i = Var("i")
        # i in {4, 7, ..., 31}
        guard = IfThenElse((i >= 4) & (i < 32), BufferStore(A, (i,), FloatImm(1.0)))
        return For(i, IntImm(4), IntImm(10), "serial", guard, IntImm(3))

    text = simplify(kernel([IntImm(1)], body, [A])).script()
    assert "if" not in text and "A[i] = 1.0" in text


def test_dynamic_shape_vars_are_positive():
    M = Var("M")
    A = make_buffer("A", (M,), "float32")

    def body(bx):
        return IfThenElse(M >= 1, BufferStore(A, (IntImm(0),), FloatImm(1.0)))

    assert "if" not in simplify(kernel([IntImm(1)], body, [A])).script()


def test_let_inlining():
    A = make_buffer("A", (256,), "float32")
    B = make_buffer("B", (256,), "int32")

    def body(bx):
        t, u = Var("t"), Var("u")
        return seq(
            LetStmt(t, bx * 2 + 1),  # pure index expression: inlined
            LetStmt(u, B[t]),  # reads memory: stays
            BufferStore(A, (t * 2 + u,), FloatImm(1.0)),
        )

    f = kernel([IntImm(8)], body, [A, B])
    text = simplify(f).script()
    assert "t: int32" not in text and "u: int32 = B[bx * 2 + 1]" in text
    assert "A[bx * 4 + u + 2] = 1.0" in text
    kept = simplify(f, {"pass_configs": {"tl.Simplify": {"enable_simplify_let_inline": False}}}).script()
    assert "t: int32 = bx * 2 + 1" in kept
    from tilelang.pass_config import PassConfigKey

    cfg = {PassConfigKey.TL_SIMPLIFY: {"enable_simplify_let_inline": False}}
    assert "t: int32 = bx * 2 + 1" in simplify(f, {"pass_configs": cfg}).script()


def test_let_used_in_buffer_shape_is_kept():
    t = Var("t")
    S = make_buffer("S", (t,), "float32", scope="shared.dyn")
    A = make_buffer("A", (64,), "float32")

    def body(bx):
        return seq(LetStmt(t, IntImm(32) + bx), Allocate(S), BufferStore(A, (t,), FloatImm(1.0)))

    text = simplify(kernel([IntImm(1)], body, [A])).script()
    assert "t: int32" in text
    assert "A[0 + 32] = 1.0" not in text and "A[32] = 1.0" in text  # bx == 0: t is known to be 32


def test_let_range_used_when_not_inlined():
    A = make_buffer("A", (64,), "int32")

    def body(bx):
        u = Var("u")
        return seq(
            LetStmt(u, A[bx] % 8),
            IfThenElse(u < 8, BufferStore(A, (u,), IntImm(1))),
        )

    text = simplify(kernel([IntImm(4)], body, [A])).script()
    assert "u: int32 = A[bx] % 8" in text and "if" not in text


def test_tile_op_regions_simplified():
    M = Var("M")
    A = make_buffer("A", (M, 64), "float16")
    S = make_buffer("S", (128, 64), "float16", scope="shared.dyn")

    def body(bx):
        src = A[bx * 128 + 0 : bx * 128 + 128, 0:64]
        return seq(Allocate(S), Copy(src, S.full_region()))

    g = simplify(kernel([(M + 127) // 128], body, [A]))
    copy = g.body.body.stmts[1]
    assert str(copy.src.region[0].begin) == "bx * 128"
    assert str(copy.src.region[0].extent) == "128"


def test_select_and_while():
    A = make_buffer("A", (16,), "float32")

    def body(bx):
        i = Var("i")
        v = select(i < 16, FloatImm(1.0), FloatImm(2.0))
        return seq(
            For(i, IntImm(0), IntImm(16), "serial", BufferStore(A, (i,), v)),
            While(IntImm(0, bool_), BufferStore(A, (IntImm(0),), FloatImm(3.0))),
        )

    text = simplify(kernel([IntImm(1)], body, [A])).script()
    assert "A[i] = 1.0" in text and "while" not in text and "3.0" not in text


def test_only_else_branch_left_inverts_condition():
    A = make_buffer("A", (64,), "float32")
    n = Var("n")

    def body(bx):
        i = Var("i")
        then = For(Var("j"), IntImm(0), IntImm(0), "serial", BufferStore(A, (i,), FloatImm(1.0)))
        return For(i, IntImm(0), IntImm(64), "serial", IfThenElse(i < n, then, BufferStore(A, (i,), FloatImm(2.0))))

    text = simplify(kernel([IntImm(1)], body, [A, n])).script()
    assert "if i >= n:" in text and "else" not in text


def test_simplify_expr_helper():
    x = Var("x")
    assert str(simplify_expr(x * 2 + x)) == "x * 3"
    assert str(simplify_expr(binary("floormod", x * 4 + 2, 2))) == "0"


def test_empty_body_survives():
    f = PrimFunc("k", (), SeqStmt(()))
    assert simplify(f) is f
