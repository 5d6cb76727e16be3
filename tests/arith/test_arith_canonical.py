"""Canonical forms, compared as printed strings (printing must be stable)."""

import pytest

from tilelang.arith import Analyzer
from tilelang.ir import BinaryOp, FloatImm, Var, binary, call, cast, make_buffer, select
from tilelang.ir.dtype import float32, int64

x, y, z, n, m = (Var(c) for c in "xyznm")
i, j, k = Var("i"), Var("j"), Var("k")
A = make_buffer("A", (64,), "int32")
F = make_buffer("F", (64,), "float32")
f = Var("f", float32)


@pytest.fixture
def an():
    a = Analyzer()
    a.bind_range(i, 0, 128)
    a.bind_range(j, 0, 4)
    return a


def s(an, e) -> str:
    return str(an.simplify(e))


@pytest.mark.parametrize(
    "expr, want",
    [
        (x + y - x, "y"),
        (y + x, "x + y"),
        (x * 2 + x * 3, "x * 5"),
        (3 + x - 3, "x"),
        (x - x + 5, "5"),
        (0 - x, "x * -1"),
        (x - y - 1, "x - y - 1"),
        (7 - x, "7 - x"),
        ((x + 1) * (x - 1), "x * x - 1"),
        (x * y - y * x, "0"),
        (x * (y + 1) - x * y, "x"),
        (i + (Var("bx") * 128), "bx * 128 + i"),
        (A[x] * 2 + A[x], "A[x] * 3"),
        (A[x + 0] - A[x], "0"),
        ((x << 3) + x, "x * 9"),
        (call("ceildiv", x, 4, dtype="int32"), "(x + 3) // 4"),
        (cast(i, int64) * 2 + 1, "T.cast(i, int64) * T.int64(2) + T.int64(1)"),
    ],
)
def test_polynomial_forms(an, expr, want):
    assert s(an, expr) == want


def test_order_does_not_depend_on_input_order(an):
    a = an.simplify(x * 4 + y + z * 16)
    b = an.simplify(z * 16 + x * 4 + y)
    assert str(a) == str(b) == "z * 16 + x * 4 + y"


@pytest.mark.parametrize(
    "expr, want",
    [
        # without bounds on x, y: exact identities only
        ((x * 8 + y) // 8, "x + y // 8"),
        ((x * 8 + y) % 8, "y % 8"),
        ((x * 8 + 13) // 8, "x + 1"),
        ((x * 8 + 13) % 8, "5"),
        ((x - 1) // 4, "(x + 3) // 4 - 1"),
        (x // 4 // 8, "x // 32"),
        ((x // 4 + 1) // 8, "(x + 4) // 32"),
        (x % 32 // 4, "x // 4 % 8"),
        (x % 32 % 8, "x % 8"),
        (x % 8 % 32, "x % 8"),
        (x // 4 * 4 + x % 4, "x"),
        (x // 4 * 8 + x % 4 * 2, "x * 2"),
        ((x * 6 + 4) // 2, "x * 3 + 2"),
        ((x * 6 + 3) // 2, "x * 3 + 1"),
        ((x * 6 + 3) % 2, "1"),
        ((x * 4 + 2) // 8, "x // 2"),
        (x // -4, "x * -1 // 4"),
        (x % 1, "0"),
        (x // 1, "x"),
        (binary("div", x, 4), "x / 4"),
        (binary("floordiv", x * m, m), "m * x // m"),  # m may be <= 0
        # with bounds (i in [0, 128), j in [0, 4))
        ((x * 8 + j) // 8, "x"),
        ((x * 8 + j) % 8, "j"),
        (j // 4, "0"),
        (j % 4, "j"),
        (i % 128, "i"),
        ((i + 1) % 128, "(i + 1) % 128"),
        ((i + 128) % 128, "i"),
        ((i + 256) // 128, "2"),
        ((x * 4 + j) // 8, "x // 2"),
        ((x * 4 + j) % 8, "x % 2 * 4 + j"),
        ((x * 8 + j * 2 + 1) % 16, "x % 2 * 8 + j * 2 + 1"),
        (binary("div", i, 4), "i // 4"),
        (binary("div", i + 4, 4), "i // 4 + 1"),
    ],
)
def test_div_mod(an, expr, want):
    assert s(an, expr) == want


def test_symbolic_divisor():
    an = Analyzer()
    an.bind(n, 1, 1000)
    an.bind(x, 0, 10)
    an.bind(y, 0, 1000)
    assert s(an, binary("floordiv", x * m, m)) == "m * x // m"  # m unbounded
    assert s(an, binary("floordiv", x * n, n)) == "x"
    assert s(an, binary("floormod", x * n, n)) == "0"
    assert s(an, binary("floordiv", x * n + y, n)) == "(n * x + y) // n"  # y may reach n
    with an.constraint(y < n):
        assert s(an, binary("floordiv", x * n + y, n)) == "x"
        assert s(an, binary("floormod", x * n + y, n)) == "y"
        assert s(an, binary("floordiv", y, n)) == "0"


@pytest.mark.parametrize(
    "expr, want",
    [
        (binary("min", i, 200), "i"),
        (binary("max", i, -1), "i"),
        (binary("min", i, 64), "T.min(i, 64)"),
        (binary("min", 64, i), "T.min(i, 64)"),
        (binary("min", x + 1, x + 5), "x + 1"),
        (binary("max", x, x), "x"),
        (binary("min", binary("min", x, 8), 4), "T.min(x, 4)"),
        (binary("max", binary("max", x, 8), 4), "T.max(x, 8)"),
    ],
)
def test_min_max(an, expr, want):
    assert s(an, expr) == want


@pytest.mark.parametrize(
    "expr, want",
    [
        (x < x + 1, "True"),
        (x <= x, "True"),
        (x == x, "True"),
        (x * 2 == 3, "False"),
        (x * 2 < 5, "x < 3"),
        (x * 4 <= 7, "x <= 1"),
        (x + 3 < y + 5, "x < y + 2"),
        (n - x > 0, "n > x"),
        (x * 4 >= 7, "x >= 2"),
        (y * 2 + 1 >= x * 2 + 6, "y >= x + 3"),
        (5 < x, "x > 5"),
        (x * 2 == y * 2 + 4, "x == y + 2"),
        (i < 128, "True"),
        (i < 127, "i < 127"),
        (i != 200, "True"),
        (i >= 0, "True"),
        (~(x < y), "x >= y"),
        (~((x < y) & (y < z)), "((x >= y) or (y >= z))"),
        ((x < 5) & (x < 10), "x < 5"),
        ((x < 10) | (x < 5), "x < 10"),
        ((x < 5) | (i < 200), "True"),
        ((i < 5) & (i > 200), "False"),
    ],
)
def test_comparisons(an, expr, want):
    assert s(an, expr) == want


def test_select(an):
    assert s(an, select(i < 128, x, y)) == "x"
    assert s(an, select(i < 64, x, y)) == "T.if_then_else(i < 64, x, y)"
    assert s(an, select(x < y, binary("min", x, y), 0)) == "T.if_then_else(x < y, x, 0)"
    assert s(an, select(x < y, 0, binary("min", x, y))) == "T.if_then_else(x < y, 0, y)"
    assert s(an, select(x < 5, x, x)) == "x"
    assert s(an, select(i < 64, F[i], 0.0)) == "T.if_then_else(i < 64, F[i], 0.0)"


@pytest.mark.parametrize(
    "expr, want",
    [
        (f * 1.0, "f"),
        (f / 1.0, "f"),
        (f - 0.0, "f"),
        (f + FloatImm(-0.0), "f"),
        (f + 0.0, "f + 0.0"),  # -0.0 + 0.0 is +0.0: not an identity
        (f * 0.0, "f * 0.0"),  # NaN, inf and the sign of zero
        (f - f, "f - f"),
        (FloatImm(2.0) * FloatImm(3.0), "6.0"),
        (F[i + 0] * 2.0, "F[i] * 2.0"),
        (cast(x * 0 + 3, float32), "3.0"),
    ],
)
def test_float_expressions(an, expr, want):
    assert s(an, expr) == want


def test_unchanged_expression_is_returned_as_is(an):
    e = x * 4 + y
    assert an.simplify(e) is e
    e2 = F[i] * 2.0
    assert an.simplify(e2) is e2


def test_idempotent_and_stable_printing(an):
    e = (x * 8 + j * 2 + 1) % 16 + (y // 4 + 1) // 8 + binary("min", x, 7) * (z + 1)
    once = an.simplify(e)
    assert str(an.simplify(once)) == str(once)
    assert str(Analyzer().simplify(e)) == str(Analyzer().simplify(e))


def test_dtype_preserved(an):
    w = Var("w", int64)
    r = an.simplify(w * 2 + w)
    assert r.dtype == int64 and str(r) == "w * T.int64(3)"
    assert an.simplify(i + 0).dtype == i.dtype


def test_deep_sums_do_not_hit_the_recursion_limit():
    # `acc = acc + A[k]` in a Python loop builds a left-deep tree deeper than
    # Python's default recursion limit allows a naive recursive walk.
    an = Analyzer()
    an.bind_range(i, 0, 4)
    e = A[0]
    for t in range(1, 1200):
        e = e + A[t] + i
    r = an.simplify(e)  # i * 1199 + A[0] + A[1] + ... (too deep for the printer)
    x, adds = r, 0
    while isinstance(x, BinaryOp) and x.op == "add":
        x, adds = x.a, adds + 1
    assert adds == 1200 and str(x) == "i * 1199"
    assert an.const_int_bound(i * 0 + e - e) == (0, 0)
