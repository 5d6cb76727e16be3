"""Layout: evaluation, shapes, transformations, inversion, equality, simplifier."""

import itertools
import json
import random
import time

import pytest

from tilelang.ir import Var, make_buffer
from tilelang.layout import Layout, make_swizzled_layout
from tilelang.layout._expr import compile_map, simplify


def points(shape):
    return itertools.product(*(range(d) for d in shape))


def swz(i, j):
    return [i, ((j // 8) ^ (i % 8)) * 8 + j % 8]


def test_identity_default_and_accessors():
    lay = Layout((4, 6))
    assert lay.get_input_shape() == [4, 6]
    assert lay.get_output_shape() == [4, 6]
    assert [v.name for v in lay.get_forward_vars()] == ["i", "j"]
    assert lay.index == lay.get_forward_index()
    assert all(lay(*p) == p for p in points((4, 6)))
    assert lay.is_bijective()


def test_int_evaluation_matches_python_and_is_compiled_once():
    lay = Layout((64, 64), swz)
    for i, j in points((64, 64)):
        assert lay(i, j) == (i, ((j // 8) ^ (i % 8)) * 8 + j % 8)
    fn = lay._fn
    assert fn is not None and lay._eval_fn() is fn  # cached lambda
    t = time.perf_counter()
    for i, j in points((64, 64)):
        lay(i, j)
    assert time.perf_counter() - t < 0.5  # ~4k calls: microseconds each


def test_expression_evaluation_substitutes():
    lay = Layout((64, 64), swz)
    x, y = Var("x"), Var("y")
    out = lay(x, y)
    assert len(out) == 2 and out[0] is x
    f = compile_map((x, y), out)
    assert all(f(i, j) == lay(i, j) for i, j in [(0, 0), (3, 17), (63, 63), (9, 40)])
    # mixing ints and expressions folds the constants
    (row, col) = lay(5, y)
    assert str(row) == "5"


def test_output_shape_and_linearized_index():
    lay = Layout((8, 16), lambda i, j: [j, i])
    assert lay.get_output_shape() == [16, 8]
    lin = lay.get_linearized_forward_index()
    f = compile_map(tuple(lay.get_forward_vars()), (lin,))
    assert sorted(f(i, j)[0] for i, j in points((8, 16))) == list(range(128))
    assert all(f(i, j)[0] == j * 8 + i for i, j in points((8, 16)))
    assert lay.linear_offset(3, 5) == 5 * 8 + 3


def test_single_expression_and_padding_output_shape():
    lay = Layout((4, 4), lambda i, j: i * 8 + j)
    assert lay.get_output_shape() == [28]  # image bound: max 3*8+3
    assert not lay.is_bijective()
    padded = Layout((4, 4), output_shape=(4, 8))
    assert padded.get_output_shape() == [4, 8] and not padded.is_bijective()
    with pytest.raises(ValueError, match="not a bijection"):
        padded.inverse()


def test_negative_index_is_rejected():
    with pytest.raises(ValueError, match="negative"):
        Layout((4,), lambda i: i - 2).get_output_shape()


def test_repeat_adds_leading_output_dim():
    atom = Layout((8, 64), swz)
    rep = atom.repeat(0, 4)
    assert rep.get_input_shape() == [32, 64]
    assert rep.get_output_shape() == [4, 8, 64]
    for i, j in points((32, 64)):
        assert rep(i, j) == (i // 8,) + atom(i % 8, j)


def test_expand_prepends_passthrough_dims():
    base = Layout((8, 64), swz)
    ex = base.expand((3,))
    assert ex.get_input_shape() == [3, 8, 64] and ex.get_output_shape() == [3, 8, 64]
    assert all(ex(s, i, j) == (s,) + base(i, j) for s, i, j in points((3, 8, 64)))


def test_reshape_same_count_keeps_storage():
    base = Layout((16, 64), swz)
    flat = base.reshape((1024,))
    assert flat.get_output_shape() == [16, 64]
    for k in range(1024):
        assert flat(k) == base(k // 64, k % 64)
    re2 = base.reshape((32, 32))
    assert all(re2(a, b) == base((a * 32 + b) // 64, (a * 32 + b) % 64) for a, b in points((32, 32)))
    with pytest.raises(ValueError, match="element counts"):
        base.reshape((10, 10))


def test_reshape_rescale_pairs_and_halves():
    base = Layout((16, 64), swz)  # fp16 tile
    as32 = base.reshape((16, 32), 2, 1)  # pairs of fp16 as one 32-bit element
    assert as32.get_output_shape() == [16, 32]
    for i, j in points((16, 32)):
        lo = base.linear_offset(i, 2 * j)
        assert as32.linear_offset(i, j) * 2 == lo and base.linear_offset(i, 2 * j + 1) == lo + 1
    as8 = base.reshape((16, 128), 1, 2)  # bytes
    for i, j in points((16, 128)):
        assert as8.linear_offset(i, j) == base.linear_offset(i, j // 2) * 2 + j % 2
    odd = Layout((4, 4), lambda i, j: [j, i])  # transposed: pairs are not contiguous
    with pytest.raises(ValueError, match="contiguous"):
        odd.reshape((4, 2), 2, 1)


@pytest.mark.parametrize(
    "shape,fn",
    [
        ((16, 64), swz),
        ((8, 16), lambda i, j: [j, i]),
        ((12, 10), lambda i, j: [i % 3, j, i // 3]),  # non power of two digits
        ((32, 32), lambda i, j: [(i * 32 + j) % 64, (i * 32 + j) // 64]),
        ((4, 8, 16), lambda a, i, j: [a, i, ((j // 4) ^ (i % 4)) * 4 + j % 4]),
        ((128,), lambda k: [k % 8, k // 8]),
    ],
)
def test_inverse_composes_to_identity(shape, fn):
    lay = Layout(shape, fn)
    inv = lay.inverse()
    assert inv.get_input_shape() == lay.get_output_shape()
    assert inv.get_output_shape() == list(shape)
    for p in points(shape):
        assert inv(*lay(*p)) == p
    for q in points(tuple(lay.get_output_shape())):
        assert lay(*inv(*q)) == q


def test_inverse_of_non_digit_map_explains():
    lay = Layout((7,), lambda i: (i * 3) % 7)  # a bijection, but neither digits nor XOR-linear
    with pytest.raises(ValueError, match="cannot invert"):
        lay.inverse()


def test_is_equal_structural_and_semantic():
    a = Layout((16, 64), swz)
    b = Layout((16, 64), swz)
    c = Layout((16, 64), lambda i, j: [i, ((j // 8) ^ (i % 8)) * 8 + (j % 8) // 2 * 2 + j % 2])
    d = Layout((16, 64))
    assert a.is_equal(b)  # different Var objects, same structure
    assert a.is_equal(c)  # different expressions, same map
    assert not a.is_equal(d)
    assert not a.is_equal(Layout((16, 32), swz))


def test_symbolic_shape_layout_works_on_expressions():
    m = Var("m")
    lay = Layout((m, 64), swz)
    assert lay.get_output_shape()[1] == 64
    assert lay(3, 9) == (3, ((9 // 8) ^ 3) * 8 + 1)
    with pytest.raises(ValueError, match="symbolic"):
        lay.table()


def test_to_dict_is_json_and_describe_renders():
    lay = make_swizzled_layout(make_buffer("A_s", (64, 64), "float16", "shared.dyn"))
    d = lay.to_dict()
    json.dumps(d)
    assert d["kind"] == "Layout" and d["swizzle"] == "128B" and d["output_shape"] == [64, 64]
    text = lay.describe(max_rows=4, max_cols=4)
    assert "swizzle 128B" in text and "60 more rows" in text
    row1 = text.splitlines()[4]  # title, header, rule, row 0, row 1
    assert row1.split("│")[1].split()[:2] == ["72", "73"]  # row 1, chunk 0 -> chunk 0 ^ 1: 64 + 8


def test_bad_inputs():
    with pytest.raises(ValueError, match="non-positive"):
        Layout((0, 4))
    with pytest.raises(ValueError, match="takes 2 indices"):
        Layout((4, 4))(1)
    with pytest.raises(TypeError, match="integer arithmetic"):
        Layout((4,), lambda i: i * 0.5)(1)


def _random_digit_expr(rng, v, ext, depth=0):
    if depth > 3 or rng.random() < 0.25:
        return v if rng.random() < 0.7 else rng.randrange(0, 5)
    op = rng.choice(["add", "mul", "div", "mod", "xor", "split"])
    a = _random_digit_expr(rng, v, ext, depth + 1)
    k = rng.choice([1, 2, 3, 4, 8, 16])
    if op == "add":
        return a + _random_digit_expr(rng, v, ext, depth + 1)
    if op == "mul":
        return a * k
    if op == "div":
        return a // k
    if op == "mod":
        return a % k
    if op == "xor":
        return (a % 8) ^ (v % k)
    return (a // k) * k + a % k


def test_simplifier_preserves_values_on_random_expressions():
    rng = random.Random(7)
    i, j = Var("i"), Var("j")
    ext = {i: 32, j: 24}
    for _ in range(400):
        e = _random_digit_expr(rng, i, ext) * 3 + _random_digit_expr(rng, j, ext)
        if isinstance(e, int):
            continue
        s = simplify(e, ext)
        f0, f1 = compile_map((i, j), (e,)), compile_map((i, j), (s,))
        for a, b in points((32, 24)):
            assert f0(a, b) == f1(a, b), (str(e), str(s), a, b)


def test_simplifier_canonical_forms():
    i, j = Var("i"), Var("j")
    ext = {i: 128, j: 64}
    assert simplify(i // 8 * 8 + i % 8, ext) is i
    assert str(simplify((i * 64 + j) % 8, ext)) == "j % 8"
    assert str(simplify((i * 64 + j) // 64, ext)) == "i"
    assert str(simplify(i // 2 % 4 + i // 8 * 4, ext)) == "i // 2"
