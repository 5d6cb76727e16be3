"""Constant integer bounds and the interval arithmetic beneath them."""

import pytest

from tilelang.arith import NEG_INF, POS_INF, Analyzer
from tilelang.arith import interval as iv
from tilelang.ir import BufferLoad, Cast, Var, binary, call, cast, make_buffer, select
from tilelang.ir.dtype import int8, int64, uint8


@pytest.fixture
def an():
    a = Analyzer()
    return a


def test_bind_is_inclusive_and_bind_range_half_open(an):
    i, j = Var("i"), Var("j")
    an.bind(i, 3, 9)
    an.bind_range(j, 4, 10)
    assert an.const_int_bound(i) == (3, 9)
    assert an.const_int_bound(j) == (4, 13)


def test_unbound_var_has_dtype_range(an):
    assert an.const_int_bound(Var("x")) == (-(2**31), 2**31 - 1)
    assert an.const_int_bound(Var("b", int8)) == (-128, 127)
    assert an.const_int_bound(Var("u", uint8)) == (0, 255)


def test_arithmetic_bounds(an):
    i, j = Var("i"), Var("j")
    an.bind_range(i, 0, 128)
    an.bind(j, -3, 5)
    assert an.const_int_bound(i * 2 + 1) == (1, 255)
    assert an.const_int_bound(i - j) == (-5, 130)
    assert an.const_int_bound(j * j) == (0, 25)  # the canonical form knows j*j; intervals alone give (-15, 25)
    assert an.const_int_bound(i * j) == (-381, 635)
    assert an.const_int_bound(binary("min", i, j)) == (-3, 5)
    assert an.const_int_bound(binary("max", i, j)) == (0, 127)


def test_square_interval_is_sound_without_canonical_form():
    # plain interval multiplication of j * j with j in [-3, 5]
    assert iv.mul((-3, 5), (-3, 5)) == (-15, 25)


def test_division_bounds(an):
    i, j = Var("i"), Var("j")
    an.bind_range(i, 0, 128)
    an.bind(j, -7, 9)
    assert an.const_int_bound(i // 8) == (0, 15)
    assert an.const_int_bound(j // 4) == (-2, 2)
    assert an.const_int_bound(j % 4) == (0, 3)
    assert an.const_int_bound(binary("div", j, 4)) == (-1, 2)  # truncates toward zero
    assert an.const_int_bound(i % 200) == (0, 127)
    assert an.const_int_bound((i + 256) % 128) == (0, 127)
    n = Var("n")
    an.bind(n, 1, 64)
    assert an.const_int_bound(i // n) == (0, 127)
    assert an.const_int_bound(i % n) == (0, 63)


def test_division_by_range_containing_zero_skips_zero():
    assert iv.floordiv((10, 20), (-2, 5)) == (-20, 20)
    assert iv.floordiv((10, 20), (0, 0)) == (NEG_INF, POS_INF)


def test_infinite_operands():
    assert iv.floordiv((0, POS_INF), (4, 4)) == (0, POS_INF)
    assert iv.floormod((NEG_INF, POS_INF), (8, 8)) == (0, 7)
    assert iv.mul((0, POS_INF), (0, 0)) == (0, 0)
    assert iv.floordiv((-5, 7), (1, POS_INF)) == (-5, 7)
    assert iv.truncdiv((-5, 7), (2, POS_INF)) == (-2, 3)


def test_select_cast_load_call_bounds(an):
    i = Var("i")
    an.bind_range(i, 0, 16)
    assert an.const_int_bound(select(i < 8, i, 100)) == (0, 100)
    assert an.const_int_bound(cast(i, int64)) == (0, 15)
    assert an.const_int_bound(Cast(Var("w", int64), int8)) == (-128, 127)  # may wrap: dtype range
    A = make_buffer("A", (16,), "uint8")
    assert an.const_int_bound(BufferLoad(A, (i,), A.dtype)) == (0, 255)
    assert an.const_int_bound(call("ceildiv", i, 4, dtype="int32")) == (0, 4)
    assert an.const_int_bound(call("abs", i - 20)) == (5, 20)
    assert an.const_int_bound(i < 3) == (0, 1)


def test_bitwise_bounds(an):
    i, j = Var("i"), Var("j")
    an.bind_range(i, 0, 8)
    an.bind_range(j, 0, 32)
    assert an.const_int_bound(i ^ j) == (0, 31)
    assert an.const_int_bound(j & 7) == (0, 7)
    assert an.const_int_bound(j >> 2) == (0, 7)
    assert an.const_int_bound(i << 2) == (0, 28)


def test_symbolic_bind_uses_bound_of_expression(an):
    n, i = Var("n"), Var("i")
    an.bind(n, 1, 100)
    an.bind_range(i, 0, n)
    assert an.const_int_bound(i) == (0, 99)


def test_scope_restores_bounds(an):
    i = Var("i")
    an.bind(i, 0, 100)
    with an.scope():
        an.bind(i, 5, 6)
        assert an.const_int_bound(i * 2) == (10, 12)
    assert an.const_int_bound(i * 2) == (0, 200)


def test_infinity_markers_accepted_by_bind(an):
    x = Var("x")
    an.bind(x, 0, POS_INF)
    assert an.const_int_bound(x) == (0, 2**31 - 1)
    an.bind(x, NEG_INF, 5)
    assert an.const_int_bound(x) == (-(2**31), 5)
