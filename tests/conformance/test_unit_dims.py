"""Unit dimensions everywhere (issue #17, items 3 and 4).

Row kernels (RMSNorm, LayerNorm, online softmax) with block_M in {1, 2, 4}: block_M = 1
gives fragments of shape (1, N), T.reduce_* over dim=1 into (1,), T.Parallel(1, N) and
T.Parallel(1) — loops whose variable simplify replaces by 0 — and slices
`X[bx * block_M:(bx + 1) * block_M, :]` whose extent is 1 only once simplified. Checked on
the CPU backend against float64 torch, lowered + nvcc-built for sm_80 and sm_90a, and
executed by the CUDA simulator (per-thread lowered IR) against torch. A provable extent
mismatch is still an error at the T.copy line.
"""

from __future__ import annotations

import pytest
import torch

import tilelang
import tilelang.language as T
from conformance import unit_dims_kernels as K
from conformance.util import CUDA_ARCHS, cuda_build
from tilelang.errors import TileLangError
from tilelang.ir.buffer import BufferRegion
from tilelang.ir.expr import IntImm
from tilelang.ir.stmt import Copy
from tilelang.ir.visitor import collect

M, N = 37, 300  # neither a multiple of any block_M > 1 nor of block_N = 64
BLOCKS = (1, 2, 4)


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _close(got, ref, atol=2e-5, rtol=2e-5):
    torch.testing.assert_close(got.double(), ref.double(), atol=atol, rtol=rtol)


def _ref(name: str, ins: list):
    return K.ROW_KERNELS[name][2](*ins)


@pytest.mark.parametrize("block_M", BLOCKS)
@pytest.mark.parametrize("name", sorted(K.ROW_KERNELS))
def test_row_kernel_cpu(name, block_M):
    fac = K.ROW_KERNELS[name][0]
    kernel = tilelang.compile(fac.get_tir(*K.factory_args(name, M, N, block_M)), out_idx=[-1], target="c")
    ins = K.inputs(name, M, N, _gen(block_M))
    _close(kernel(*ins), _ref(name, ins))


@pytest.mark.parametrize("arch", CUDA_ARCHS)
@pytest.mark.parametrize("block_M", BLOCKS)
@pytest.mark.parametrize("name", ["rms_norm", "layer_norm", "online_softmax"])
def test_row_kernel_builds(name, block_M, arch):
    fac = K.ROW_KERNELS[name][0]
    art = cuda_build(fac.get_tir(*K.factory_args(name, M, N, block_M)), arch)
    assert "__global__" in art.kernel_source and art.lib_path


SIMULATED = [(n, b, "sm_80") for n in ("rms_norm", "layer_norm", "online_softmax") for b in BLOCKS] + [
    (n, 1, "sm_90a") for n in ("rms_norm", "layer_norm", "online_softmax_full_row")
]


@pytest.mark.parametrize("name,block_M,arch", SIMULATED)
def test_row_kernel_simulated(name, block_M, arch):
    """The lowered CUDA IR computes the right rows; the simulator also raises on a read of a
    register no thread wrote (what block_M = 1 produced before: a nest run by one warp or
    one thread writing a fragment that all four warps hold)."""
    from sim import simulate

    m = 11  # a few blocks are enough; 11 is not a multiple of 2 or 4
    fac = K.ROW_KERNELS[name][0]
    ins = K.inputs(name, m, N, _gen(7))
    out = torch.zeros(m, N)
    simulate(fac.get_tir(*K.factory_args(name, m, N, block_M)), ins + [out], arch=arch)
    _close(out, _ref(name, ins))


# -- item 3: slice extents are simplified before they are compared --------------------------------------


def _copies(func) -> list:
    return collect(func.body, lambda n: isinstance(n, Copy))


def test_unit_slice_extent_is_simplified():
    """`A[bx * blk:(bx + 1) * blk, :]` with blk = 1 is a 1×N region (it was rejected:
    "source extents [bx + 1 - bx, 8192] ...")."""
    func = K.scale_rows.get_tir(5, 8192, 1)
    for c in _copies(func):
        for r in (c.src, c.dst):
            assert isinstance(r, BufferRegion)
            assert all(isinstance(e, IntImm) for e in r.extents), r
    glob = [c.src for c in _copies(func) if c.src.buffer.scope == "global"][0]
    assert [e.value for e in glob.extents] == [1, 8192]


@pytest.mark.parametrize("blk", (1, 3))
def test_unit_slice_copy_cpu(blk):
    a = torch.randn(5, 8192, generator=_gen(blk))
    kernel = tilelang.compile(K.scale_rows.get_tir(5, 8192, blk), out_idx=[-1], target="c")
    _close(kernel(a), a.double() * 2 + 1)


def test_unit_slice_copy_simulated():
    from sim import simulate

    a = torch.randn(3, 520, generator=_gen(3))
    out = torch.zeros(3, 520)
    simulate(K.scale_rows.get_tir(3, 520, 1), [a, out])
    _close(out, a.double() * 2 + 1)


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_unit_slice_copy_builds(arch):
    cuda_build(K.scale_rows.get_tir(5, 8192, 1), arch)


def test_copies_differing_by_unit_dims():
    """A[bx, 0:N] (1×N) into (1, N), (1, N) into (N,), and a head address B[bx, 0]."""
    from sim import simulate

    a = torch.randn(6, N, generator=_gen(4))
    ref = a.double() * 3 - 1
    kernel = tilelang.compile(K.row_through_vector.get_tir(6, N), out_idx=[-1], target="c")
    _close(kernel(a), ref)
    out = torch.zeros(6, N)
    simulate(K.row_through_vector.get_tir(6, N), [a, out])
    _close(out, ref)


def _mismatch_kernel(src_rows, dst_rows):
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(8, threads=128) as bx:
            s = T.alloc_shared((8, 64), "float32")
            T.copy(A[src_rows(bx), :], s[dst_rows(bx), :])  # the line the error points at
            T.copy(s, B[bx * 8 : bx * 8 + 8, :])

    return main


@pytest.mark.parametrize(
    "src_rows,dst_rows,why",
    [
        (lambda bx: slice(bx * 4, (bx + 1) * 4), lambda bx: slice(0, 2), "non-unit dimension 0: 4 against 2"),
        (lambda bx: slice(bx, bx + bx + 2), lambda bx: slice(0, bx + 1), "bx + 2 against bx + 1"),
        (lambda bx: slice(bx * 2, bx * 2 + 2), lambda bx: 0, "2 against 1 non-unit dimension(s)"),
    ],
    ids=["constants", "symbolic", "rank"],
)
def test_provable_mismatch_is_an_error_at_the_line(src_rows, dst_rows, why):
    import inspect

    with pytest.raises(TileLangError) as ei:
        _mismatch_kernel(src_rows, dst_rows)
    err = ei.value
    msg = str(err)
    assert "T.copy: source extents" in msg and "do not match" in msg and why in msg, msg
    src, first = inspect.getsourcelines(_mismatch_kernel)
    line = first + next(k for k, t in enumerate(src) if "the line the error points at" in t)
    assert err.span is not None and err.span.line == line, (err.span, line)


# -- item 4: what layout inference decides for unit dims --------------------------------------------------


def test_unit_row_nests_run_where_their_fragments_live():
    """block_M = 1: every T.Parallel nest of RMSNorm takes the layout of the fragment it writes
    (replicas included), as it does for block_M = 2."""
    from tilelang.backend.target import parse
    from tilelang.layout import Fragment
    from tilelang.transform.infer_layout import LOOP_LAYOUT, infer_layout
    from tilelang.transform.simplify import simplify
    from tilelang.transform.verify import verify

    ctx = {"target": parse({"kind": "cuda", "arch": "sm_80"})}
    f = infer_layout(simplify(verify(K.rms_norm.get_tir(M, N, 1), ctx), ctx), ctx)
    lm = f.attrs["layout_map"]
    nests = collect(f.body, lambda n: getattr(n, "kind", None) == "parallel" and LOOP_LAYOUT in n.annotations)
    assert len(nests) == 3
    for n in nests:
        L = n.annotations[LOOP_LAYOUT]
        stores = collect(n, lambda x: type(x).__name__ == "BufferStore")
        F = lm[stores[0].buffer]
        assert isinstance(L, Fragment) and isinstance(F, Fragment)
        # every thread that holds an element of the written row executes the iteration writing it
        assert L.get_thread_size() * L.replicate_size == F.get_thread_size() * F.replicate_size
        assert L.replicate_size == F.replicate_size, (stores[0].buffer.name, L, F)


def test_verify_pairs_hand_built_regions_by_the_same_rule():
    """IR built without the frontend: verify simplifies extents too ((bx + 1) - bx pairs with a
    unit dimension) and rejects a provable symbolic mismatch (bx + 3 against bx + 1)."""
    from tilelang.errors import VerifyError
    from tilelang.ir import Allocate, BufferRegion, IntImm, KernelLaunch, PrimFunc, Range, Var, make_buffer, seq
    from tilelang.ir.expr import binary
    from tilelang.transform.verify import verify

    A = make_buffer("A", (64, 64), "float32", "global")
    S = make_buffer("S", (64, 64), "float32", "shared.dyn")
    bx = Var("bx")

    def func(src_extent, dst):
        src = BufferRegion(A, (Range(bx, src_extent), Range(IntImm(0), IntImm(64))))
        body = seq(Allocate(S, None), Copy(src, dst))
        return PrimFunc("k", (A,), KernelLaunch((IntImm(8),), (bx,), (128, 1, 1), body))

    unit = binary("sub", binary("add", bx, 1), bx)
    verify(func(unit, BufferRegion(S, (Range(IntImm(0), IntImm(1)), Range(IntImm(0), IntImm(64))))))
    verify(func(unit, S[5, 0:64]))
    three = binary("sub", binary("add", binary("mul", bx, 2), 3), bx)
    with pytest.raises(VerifyError, match="bx \\+ 3 against bx \\+ 1"):
        verify(func(three, BufferRegion(S, (Range(IntImm(0), binary("add", bx, 1)), Range(IntImm(0), IntImm(64))))))
