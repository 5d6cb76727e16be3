"""Layout inference (tilelang/transform/infer_layout.py), checked element by element.

Reference maps are written from the PTX ISA fragment tables and the warp-grid
convention of tilelang/layout/gemm.py (warp w at (w % warps_m, w // warps_m),
m16n8 atoms row-major, c0..c3), independently of the layout package."""

import itertools

import kernels as KZ
import pytest
from catalog import _example

import tilelang.language as T
from tilelang.errors import LayoutError
from tilelang.ir.stmt import For
from tilelang.ir.visitor import collect
from tilelang.layout import Fragment
from tilelang.transform.infer_layout import LOOP_LAYOUT, default_fragment, infer_layout
from tilelang.transform.simplify import simplify
from tilelang.transform.verify import verify


def infer(func):
    return infer_layout(simplify(verify(func)))


def layout_of(func, name):
    hits = [lay for b, lay in func.attrs["layout_map"].items() if b.name == name]
    assert len(hits) == 1, [b.name for b in func.attrs["layout_map"]]
    return hits[0]


def mma_accumulator(i, j, M, N, wm, wn):
    """(thread, register) of C[i, j] for an M×N block tile over a wm×wn warp grid."""
    tm, tn = M // wm, N // wn
    a, b = i // tm, j // tn
    ii, jj = i % tm, j % tn
    lane = 4 * (ii % 8) + (jj % 8) // 2
    reg = ((ii // 16) * (tn // 8) + jj // 8) * 4 + 2 * ((ii % 16) // 8) + jj % 2
    return 32 * (a + wm * b) + lane, reg


@pytest.mark.parametrize(
    "M,N,policy,grid",
    [
        (128, 128, "Square", (2, 2)),
        (64, 64, "FullRow", (4, 1)),
        (64, 128, "FullCol", (1, 4)),
        (128, 64, "Square", (4, 1)),
    ],
)
def test_gemm_accumulator_element_by_element(M, N, policy, grid):
    f = infer(KZ.gemm.get_tir(256, 256, 64, M, N, 32, "float16", "float32", "float32", policy=policy))
    F = layout_of(f, "C_l")
    assert F.meta["warp_grid"] == grid
    for i, j in itertools.product(range(M), range(N)):
        assert F.locate(i, j) == mma_accumulator(i, j, M, N, *grid), (i, j)
    F.check_bijective()


def flash(block=64, dim=64, causal=True):
    mha = _example("flash_attention/mha_fwd.py")
    return infer(mha.flashattn.get_tir(1, 2, 256, dim, causal, block_M=block, block_N=block))


def test_flash_attention_row_statistics_are_replicated_over_the_row_lanes():
    f = flash()
    acc = layout_of(f, "acc_s")
    for name in ("scores_max", "scores_max_prev", "scores_scale", "scores_sum", "logsum"):
        R = layout_of(f, name)
        assert R.replicate_size == 4, name
        R.check_bijective()
        for i in range(64):
            holders = {t for e, _, t, _ in R.placements() if e == (i,)}
            row_threads = {acc.locate(i, j)[0] for j in range(64)}
            assert holders == row_threads, (name, i)
            warp, g = i // 16, i % 8
            assert holders == {32 * warp + 4 * g + t for t in range(4)}
            assert R.locate(i)[1] == (i // 8) % 2


def test_flash_attention_second_gemm_operand_is_a_register_cast():
    f = flash()
    a, cast = layout_of(f, "acc_s"), layout_of(f, "acc_s_cast")
    assert cast.is_equal(a), cast.mismatch(a)
    assert (
        "operand A" in f.attrs["layout_origin"][next(b for b in f.attrs["layout_origin"] if b.name == "acc_s_cast")][0]
    )


@pytest.mark.parametrize("dim", [0, 1])
def test_reductions_along_either_dim(dim):
    f = infer(KZ.reduce_dim.get_tir(64, 96, dim, "sum"))
    src, dst = layout_of(f, "xf"), layout_of(f, "of")
    assert dst.is_equal(src.reduce_dims(dim))
    dst.check_bijective()
    n_out = 96 if dim == 0 else 64
    for k in range(n_out):
        holders = {t for e, _, t, _ in dst.placements() if e == (k,)}
        elems = [(r, k) if dim == 0 else (k, r) for r in range(64 if dim == 0 else 96)]
        assert holders == {src.locate(*e)[0] for e in elems}


def test_gemm_accumulator_reduced_along_rows_and_columns():
    f = infer(KZ.gemm_row_softmax.get_tir(64, 64, 32, "Square"))
    S, mx = layout_of(f, "S"), layout_of(f, "mx")
    assert mx.is_equal(S.reduce_dims(1)) and mx.replicate_size == 8  # 4 lanes x 2 warps along N
    f = infer(KZ.column_sum_of_gemm.get_tir(64, 64, 32))
    S, cs = layout_of(f, "S"), layout_of(f, "cs")
    assert cs.is_equal(S.reduce_dims(0))


def test_every_parallel_nest_gets_a_loop_layout():
    for func in (flash(), infer(KZ.fill_and_scale.get_tir(32, 64)), infer(KZ.atomic_sum_rows.get_tir(40, 24))):
        nests = collect(func.body, lambda n: isinstance(n, For) and n.kind == "parallel")
        outer = [n for n in nests if LOOP_LAYOUT in n.annotations]
        assert outer, func.name
        for n in outer:
            assert isinstance(n.annotations[LOOP_LAYOUT], Fragment)


@pytest.mark.parametrize(
    "shape,threads", [((64, 48), 128), ((1000,), 128), ((1,), 256), ((8, 8), 128), ((3, 384), 128)]
)
def test_default_fragments_are_valid_thread_maps(shape, threads):
    F = default_fragment(shape, threads, 4)
    F.check_bijective()
    assert all(a >= b for a, b in zip(F.shape, shape))
    assert F.get_thread_size() == threads  # spare threads hold replicas, never idle registers


def test_shared_gemm_operands_are_swizzled_the_rest_row_major():
    f = flash()
    for name in ("Q_shared", "K_shared", "V_shared"):
        assert layout_of(f, name).meta["swizzle"] == "128B"
    assert layout_of(f, "O_shared").meta["swizzle"] == "none"


def test_annotate_layout_overrides_the_default():
    @T.prim_func
    def k(x: T.Tensor((128,), "float32"), y: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((128,), "float32")
            T.annotate_layout({f: T.Fragment((128,), forward_fn=lambda i: (127 - i, 0))})
            T.copy(x, f)
            T.copy(f, y)

    f = infer(k)
    F = layout_of(f, "f")
    assert [F.locate(i)[0] for i in range(4)] == [127, 126, 125, 124]


def test_conflicting_gemm_policies_name_both_statements():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.copy(A, a)
            T.gemm(a, a, c, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
            T.gemm(a, a, c, policy=T.GemmWarpPolicy.FullCol)
            T.copy(c, C)

    with pytest.raises(LayoutError) as err:
        infer(k)
    msg = str(err.value)
    assert "FullRow" in msg and "FullCol" in msg
    assert msg.count("test_infer_layout.py:") >= 2


def test_writing_a_gemm_accumulator_from_the_wrong_threads_is_an_error():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            d = T.alloc_fragment((64, 64), "float32")
            T.copy(A, a)
            T.gemm(a, a, c, clear_accum=True)
            T.gemm(a, a, d, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(64, 64):
                c[i, j] = d[i, j] * 2.0  # reading d from other threads is fine (staged) ...
            for i, j in T.Parallel(64, 64):
                c[i, j] = c[i, j] + 1.0
                d[i, j] = d[i, j] + 1.0  # ... but one loop cannot write both layouts
            T.copy(c, C)

    with pytest.raises(LayoutError, match="writes `d`"):
        infer(k)


def test_loop_layout_annotation_is_honoured():
    L = T.Fragment((128,), forward_fn=lambda i: (i % 64, i // 64))

    @T.prim_func
    def k(x: T.Tensor((128,), "float32"), y: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(128, loop_layout=L):
                y[i] = x[i] + 1.0

    f = infer(k)
    (loop,) = [n for n in collect(f.body, lambda n: isinstance(n, For)) if LOOP_LAYOUT in n.annotations]
    assert loop.annotations[LOOP_LAYOUT] is L


@pytest.mark.parametrize(
    "fa_config, gemm_config, configs, want_wgmma",
    [
        # 128 + 128 + 64 + rows: more than 255 registers a thread; mma.sync unless split_rows splits it
        ((128, 128, 1, 128), None, {"tl.disable_row_split": True}, False),
        ((128, 128, 1, 128), None, {}, True),
        ((128, 64, 1, 128), None, {}, True),  # 224: fits
        ((128, 128, 2, 256), None, {}, True),
        (None, (256, 128, 64, 128), {}, True),  # one accumulator of 256 registers, but no register A operand
    ],
)
def test_wgmma_only_where_flash_attention_registers_fit(fa_config, gemm_config, configs, want_wgmma):
    """infer_layout.register_bound_rs_gemm: a kernel with a register-A gemm whose fragments
    exceed a thread's registers gets mma.sync layouts on sm_90a (measured faster there) — unless
    the compiler runs its rows in halves (backend/cuda/split_rows.py), which then keep wgmma."""
    import os
    import sys

    from tilelang.backend.target import parse
    from tilelang.transform.infer_layout import wgmma_plan_of

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    from flash_attention import mha_fwd

    if fa_config:
        bm, bn, st, t = fa_config
        func = mha_fwd.flashattn.get_tir(2, 2, 512, 128, False, block_M=bm, block_N=bn, num_stages=st, threads=t)
    else:
        bm, bn, bk, t = gemm_config
        func = KZ.gemm.get_tir(1024, 1024, 1024, bm, bn, bk, "float16", "float32", "float16", False, False,
                               "Square", 3, t)  # fmt: skip
    ctx = {"target": parse({"kind": "cuda", "arch": "sm_90a"}), "pass_configs": configs}
    out = infer_layout(simplify(verify(func)), ctx)
    plans = [wgmma_plan_of(lay) for lay in out.attrs["layout_map"].values()]
    assert any(p is not None for p in plans) == want_wgmma
