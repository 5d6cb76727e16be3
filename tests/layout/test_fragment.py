"""Fragment: construction styles, bijectivity checks, transformations, rendering."""

import json

import pytest
from layout_checks import assert_valid_fragment

from tilelang.errors import LayoutError
from tilelang.ir import Var
from tilelang.layout import (
    Fragment,
    make_blocked_fragment,
    make_fully_replicated_fragment,
    make_gemm_fragment_8x8,
    make_gemm_fragment_8x8_transposed,
    make_mma_accumulator_fragment,
)


def c_atom():
    return Fragment((16, 8), forward_fn=lambda i, j: ((i % 8) * 4 + j // 2, (i // 8) * 2 + j % 2))


def test_forward_fn_and_separate_fns_agree():
    a = c_atom()
    b = Fragment(
        (16, 8),
        forward_thread_fn=lambda i, j: (i % 8) * 4 + j // 2,
        forward_index_fn=lambda i, j: (i // 8) * 2 + j % 2,
    )
    assert a.is_equal(b) and b.is_equal(a)
    assert a.get_thread_size() == 32 and a.locals_per_thread() == 4
    assert a.map_forward_thread((8, 3)) == 1
    assert a.locate(8, 3) == (1, 3)
    assert_valid_fragment(a)


def test_thread_expression_on_ir_vars():
    a = c_atom()
    x, y = Var("x"), Var("y")
    t = a.map_forward_thread((x, y))
    assert "x" in str(t) and "y" in str(t)
    assert str(a.thread) == "i % 8 * 4 + j // 2"


def test_replicated_fragment_with_rep_var():
    # a 16-element row vector replicated over 4 threads groups
    f = Fragment(
        (16,), forward_thread_fn=lambda i, rep: i // 4 + rep * 4, forward_index_fn=lambda i: i % 4, replicate=4
    )
    assert f.get_thread_size() == 16 and f.locals_per_thread() == 4 and f.replicate_size == 4
    assert sorted(f.map_forward_thread((5,), r) for r in range(4)) == [1, 5, 9, 13]
    assert_valid_fragment(f)


def test_replicate_needs_rep_parameter():
    with pytest.raises(TypeError, match="replicate var"):
        Fragment((16,), forward_thread_fn=lambda i: i // 4, forward_index_fn=lambda i: i % 4, replicate=2)
    with pytest.raises(TypeError, match="forward_index_fn"):
        Fragment((16,), forward_thread_fn=lambda i: i)
    with pytest.raises(ValueError, match="replicate var"):
        Fragment((16,), forward_fn=lambda i, rep: (rep, i + rep), replicate=2)


def test_check_bijective_reports_collisions():
    bad = Fragment((16, 8), forward_fn=lambda i, j: ((i % 8) * 4 + j // 4, (i // 8) * 2 + j % 2))
    with pytest.raises(LayoutError, match=r"thread 0 register 0 holds both \[0, 0\] \(rep 0\) and \[0, 2\] \(rep 0\)"):
        bad.check_bijective()
    assert not bad.is_bijective()


def test_check_bijective_reports_holes():
    holes = Fragment((8,), forward_fn=lambda i: (i, 1 + i // 8))  # register 0 never used
    with pytest.raises(LayoutError, match="thread 0 register 0 holds no element"):
        holes.check_bijective()


def test_check_bijective_reports_replicas_in_one_thread():
    f = Fragment((4,), forward_thread_fn=lambda i, rep: i, forward_index_fn=lambda i: i * 0, replicate=2)
    with pytest.raises(LayoutError, match=r"element \[0\] has two copies in thread 0|holds both"):
        f.check_bijective()


def test_repeat_on_registers_and_threads():
    atom = c_atom()
    regs = atom.repeat((2, 4), repeat_on_thread=False)
    assert regs.get_input_shape() == [32, 32] and regs.get_thread_size() == 32 and regs.locals_per_thread() == 32
    for i in range(32):
        for j in range(32):
            t, r = regs.locate(i, j)
            at, ar = atom.locate(i % 16, j % 8)
            assert t == at and r == ((i // 16) * 4 + j // 8) * 4 + ar  # tiles row-major, N fastest
    thr = atom.repeat((2, 2), repeat_on_thread=True, lower_dim_first=False)
    for i in range(32):
        for j in range(16):
            t, r = thr.locate(i, j)
            at, ar = atom.locate(i % 16, j % 8)
            assert r == ar and t == at + 32 * ((i // 16) + 2 * (j // 8))  # dim 0 fastest
    assert_valid_fragment(regs)
    assert_valid_fragment(thr)


def test_replicate_and_condense():
    atom = c_atom()
    rep = atom.replicate(3)
    assert rep.replicate_size == 3 and rep.get_thread_size() == 96
    assert [rep.map_forward_thread((9, 5), r) for r in range(3)] == [6, 38, 70]
    assert_valid_fragment(rep)
    twice = rep.replicate(2)
    assert twice.replicate_size == 6 and twice.get_thread_size() == 192
    assert_valid_fragment(twice)
    cond = rep.condense_rep_var()
    assert cond.replicate_size == 1 and cond.get_input_shape() == [16, 8, 3]
    assert all(cond.locate(i, j, r) == rep.locate(i, j, rep=r) for i in range(16) for j in range(8) for r in range(3))
    assert_valid_fragment(cond)


def test_inverse_of_replicated_fragment_returns_rep():
    rep = c_atom().replicate(2)
    inv = rep.inverse()
    assert inv.get_input_shape() == [64, 4] and inv.get_output_shape() == [16, 8, 2]
    for i in range(16):
        for j in range(8):
            for r in range(2):
                t, loc = rep.locate(i, j, rep=r)
                assert inv(t, loc) == (i, j, r)


def test_expand_and_reshape_keep_threads():
    acc = make_mma_accumulator_fragment(32, 32, 2, "FullRow")
    ex = acc.expand((2,))
    assert ex.get_input_shape() == [2, 32, 32] and ex.locals_per_thread() == 2 * acc.locals_per_thread()
    assert all(
        ex.map_forward_thread((s, i, j)) == acc.map_forward_thread((i, j))
        for s in range(2)
        for i in range(32)
        for j in range(32)
    )
    assert_valid_fragment(ex)
    flat = acc.reshape((1024,))
    assert all(flat.locate(k) == acc.locate(k // 32, k % 32) for k in range(1024))
    with pytest.raises(ValueError, match="rescaled"):
        acc.reshape((512,), 2, 1)


def test_is_equal_and_mismatch():
    a = make_mma_accumulator_fragment(64, 64, 4, "Square")
    b = make_mma_accumulator_fragment(64, 64, 4, "FullRow")
    assert a.is_equal(make_mma_accumulator_fragment(64, 64, 4, "Square"))
    assert not a.is_equal(b)
    assert a.mismatch(a) is None
    assert "element [0, 32]" in a.mismatch(b)


def test_summary_describe_to_dict():
    acc = make_mma_accumulator_fragment(128, 128, 4, "Square")
    assert acc.summary() == "mma m16n8 accumulator · 4 warps 2×2 · 128 regs/thread"
    assert acc.summary("float16").endswith("128 regs/thread (64 × 32-bit)")
    text = acc.describe(max_rows=4, max_cols=4)
    lines = text.splitlines()
    assert lines[0].startswith("Fragment 128×128 · mma m16n8 accumulator")
    assert lines[3].split("│")[1].split() == ["T0:0", "T0:1", "T1:0", "T1:1", "…"]
    assert "124 more rows" in text and "T0 holds 128: [0,0] [0,1] [8,0] [8,1]" in text
    d = acc.to_dict()
    json.dumps(d)
    assert d["threads"] == 128 and d["locals_per_thread"] == 128 and d["warp_grid"] == [2, 2]
    rep = make_fully_replicated_fragment((4, 4), 32)
    assert "replicated ×32" in rep.summary()
    assert "also held by 31 other" in rep.describe()


def test_small_factories():
    for f in (
        make_gemm_fragment_8x8(),
        make_gemm_fragment_8x8_transposed(),
        make_fully_replicated_fragment((4, 8), 64),
        make_blocked_fragment((64, 64), 128, 8),
        make_blocked_fragment((16,), 4, 2),
    ):
        assert_valid_fragment(f)
    blocked = make_blocked_fragment((64, 64), 128, 8)
    assert blocked.locate(0, 8) == (1, 0) and blocked.locate(16, 0) == (0, 8)
    with pytest.raises(ValueError, match="split evenly"):
        make_blocked_fragment((10, 10), 32, 4)


@pytest.mark.parametrize(
    "frag",
    [
        make_mma_accumulator_fragment(128, 128, 4, "FullRow"),
        make_mma_accumulator_fragment(128, 128, 4, "Square"),
        make_mma_accumulator_fragment(64, 32, 2, "FullCol"),
        make_blocked_fragment((32, 64), 64, 4),
    ],
    ids=["fullrow", "square", "fullcol", "blocked"],
)
@pytest.mark.parametrize("dim", [0, 1])
def test_reduce_dims_replicates_over_the_threads_that_shared_a_row(frag, dim):
    red = frag.reduce_dims(dim)
    assert_valid_fragment(red)
    M, N = frag.get_input_shape()
    keep_extent = M if dim == 1 else N
    assert red.get_input_shape() == [keep_extent]
    for k in range(keep_extent):
        cells = [(k, x) if dim == 1 else (x, k) for x in range(N if dim == 1 else M)]
        holders = {frag.map_forward_thread(c) for c in cells}
        got = {red.map_forward_thread((k,), r) for r in range(red.replicate_size)}
        assert got == holders
    kept = frag.reduce_dims(dim, keepdims=True)
    assert kept.get_input_shape() == ([M, 1] if dim == 1 else [1, N])


def test_reduce_fullrow_accumulator_rows_stay_in_a_quad():
    red = make_mma_accumulator_fragment(128, 128, 4, "FullRow").reduce_dims(1)
    assert red.replicate_size == 4 and red.get_thread_size() == 128 and red.locals_per_thread() == 4
    assert "reduced over dims [1]" in red.summary()


def test_reduce_of_replicated_fragment_merges_replicas():
    from tilelang.layout import make_mma_operand_a_fragment

    a = make_mma_operand_a_fragment(64, 64, 32, 4, "Square")  # replicated ×2 over column warps
    red = a.reduce_dims(1)
    assert red.replicate_size == 2 * 4  # 2 warp copies × 4 lanes of a quad
    assert_valid_fragment(red)


def test_layouts_pickle_for_worker_processes():
    import pickle

    from tilelang.layout import make_swizzled_layout

    acc = make_mma_accumulator_fragment(64, 64, 4, "Square")
    acc.check_bijective()  # fills the caches (compiled lambdas are not picklable)
    back = pickle.loads(pickle.dumps(acc))
    assert back.is_equal(acc) and back.locate(17, 33) == acc.locate(17, 33) and back.summary() == acc.summary()
    sw = make_swizzled_layout((64, 64), dtype="float16")
    sw.table()
    sw2 = pickle.loads(pickle.dumps(sw))
    assert sw2(5, 9) == sw(5, 9) and sw2.meta == sw.meta
