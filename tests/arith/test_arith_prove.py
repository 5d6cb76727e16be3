"""`can_prove`: what must be proven, and what must not be."""

import pytest

from tilelang.arith import Analyzer
from tilelang.ir import FloatImm, IntImm, Var, binary, make_buffer
from tilelang.ir.dtype import float32


@pytest.fixture
def an():
    a = Analyzer()
    i, bx = Var("i"), Var("bx")
    a.bind_range(i, 0, 128)
    a.bind_range(bx, 0, 8)
    a.i, a.bx = i, bx
    return a


def test_bounds_prove_comparisons(an):
    i, bx = an.i, an.bx
    assert an.can_prove(i < 128)
    assert an.can_prove(i >= 0)
    assert an.can_prove(bx * 128 + i < 1024)
    assert an.can_prove(bx * 128 + i <= 1023)
    assert an.can_prove(i != 128)
    assert an.can_prove(i * 2 != 7)  # parity: 2*i is even
    assert an.can_prove((i < 128) & (bx < 8))
    assert an.can_prove((i < 200) | (bx > 100))
    assert an.can_prove(~(i >= 128))


def test_not_proven_when_not_always_true(an):
    i, bx = an.i, an.bx
    assert not an.can_prove(i < 127)
    assert not an.can_prove(bx * 128 + i < 1023)
    assert not an.can_prove(i > 0)
    assert not an.can_prove(i == 5)
    assert not an.can_prove(i != 5)
    assert not an.can_prove((i < 128) & (i < 64))
    assert not an.can_prove(~(i < 128))
    x, y = Var("x"), Var("y")
    assert not an.can_prove(x < y)
    assert not an.can_prove(x * y >= 0)
    assert not an.can_prove(x // 4 * 4 == x)


def test_trivial_identities(an):
    x = Var("x")
    assert an.can_prove(x == x)
    assert an.can_prove(x + 1 > x)
    assert an.can_prove(x // 4 * 4 + x % 4 == x)
    assert an.can_prove(x % 8 < 8)
    assert an.can_prove(x % 8 >= 0)
    assert not an.can_prove(x % 8 < 7)


def test_constraint_scope(an):
    n, j = Var("n"), Var("j")
    with an.constraint(j < n):
        assert an.can_prove(j < n)
        assert an.can_prove(j <= n - 1)
        assert an.can_prove(j < n + 3)
        assert an.can_prove(j * 2 < n * 2)
        assert an.can_prove(binary("min", j, n) == j)
        assert not an.can_prove(j < n - 1)
        assert not an.can_prove(j >= 0)
    assert not an.can_prove(j < n)  # forgotten outside the scope


def test_negated_constraint_and_conjunction(an):
    i = an.i
    with an.constraint(~(i < 64)):
        assert an.can_prove(i >= 64)
        assert an.const_int_bound(i) == (64, 127)
    with an.constraint((i >= 10) & (i < 20)):
        assert an.can_prove(i // 10 == 1)
    with an.constraint((i < 10) | (i > 100)):  # a disjunction teaches nothing
        assert not an.can_prove(i < 10)
        assert not an.can_prove(i > 100)


def test_equality_constraint(an):
    x, y = Var("x"), Var("y")
    with an.constraint(x == y + 3):
        assert an.can_prove(x - y == 3)
        assert an.can_prove(x > y)


def test_symbolic_loop_extent_facts():
    an = Analyzer()
    n, i = Var("n"), Var("i")
    an.bind(n, 1, 2**31 - 1)
    an.bind_range(i, 0, n)
    assert an.can_prove(i < n)
    assert an.can_prove(i + 1 <= n)
    assert not an.can_prove(i + 1 < n)


def test_floats_are_never_proven_from_structure():
    an = Analyzer()
    f = Var("f", float32)
    assert not an.can_prove(f == f)  # NaN != NaN
    assert not an.can_prove(f <= f)
    assert not an.can_prove(~(f < f))
    assert an.can_prove(FloatImm(1.0) < FloatImm(2.0))


def test_loads_range_over_dtype():
    an = Analyzer()
    A = make_buffer("A", (4,), "uint8")
    assert an.can_prove(A[0] >= 0)
    assert an.can_prove(A[0] < 256)
    assert not an.can_prove(A[0] < 255)


def test_constants():
    an = Analyzer()
    assert an.can_prove(IntImm(3) < IntImm(4))
    assert not an.can_prove(IntImm(4) < IntImm(3))
    assert an.can_prove(True)
    assert not an.can_prove(False)
