"""CUDA lowering of `T.im2col` (semantics: `tileop/im2col.py`).

A shared `col` tile is loaded in runs of `v` channels (16, 8 or 4 bytes) with one predicated
vector load each (`tl::copy_vec_pred`, or `tl::cp_async_zfill` when `inject_pipeline` made the
op an asynchronous producer: the zero fill of the padding and of the matrix's edge comes from
the predicate), when every run stays inside one (kh, kw) window element —
C and block_K multiples of v, `img` and `col` of one dtype — and `col`'s layout keeps runs
of v contiguous (the swizzles of gemm operands do). Otherwise each element is loaded on its
own through the reference rule's expression.
"""

from __future__ import annotations

from ...ir.dtype import int32
from ...ir.expr import IntImm, Var, binary, const_int, select
from ...ir.node import FrozenDict
from ...ir.stmt import Evaluate, For, Stmt
from ...tileop import im2col
from ...tileop.base import IN_BOUNDS, load, store
from ...transform.infer_layout import default_loop_layout
from .lower_threads import ThreadCtx, address_of, tl_call
from .ops import _runs_contiguous, _static, default_nest


def im2col_elementwise(op: im2col.Im2Col, tc: ThreadCtx) -> Stmt:
    """The tile's elements spread over the block's threads, each loaded on its own through the
    reference rule's expression (zero where it is padding or past the matrix). Synchronous even
    when pipelined: the stores are done before the ring's barrier. Every target with plain
    loads and stores can run it (Metal and HIP use it as their rule)."""
    img, col = op.img.buffer, op.col.buffer
    ext = _static(im2col.tile_extents(op), "T.im2col", op.span)

    def element(vs: tuple) -> Stmt:
        valid, idx = im2col.patch(op, vs[0], vs[1])
        return store(col, im2col.col_index(op, vs[0], vs[1]), select(valid, load(img, idx), 0))

    return default_nest(tc, ext, element, op.span, 1)


def im2col_cuda(op: im2col.Im2Col, tc: ThreadCtx) -> Stmt:
    img, col = op.img.buffer, op.col.buffer
    ext = _static(im2col.tile_extents(op), "T.im2col", op.span)
    v = _run_length(op, tc, ext)
    if v is None:
        return im2col_elementwise(op, tc)
    grid = (ext[0], ext[1] // v)
    nbytes = v * img.dtype.bytes
    fn = f"tl::cp_async_zfill<{nbytes}>" if op.annotations.get("async") else f"tl::copy_vec_pred<{nbytes}>"

    def chunk(vs: tuple) -> Stmt:
        j = binary("mul", vs[1], v)
        valid, idx = im2col.patch(op, vs[0], j)
        dst = address_of(col, im2col.col_index(op, vs[0], j))
        return Evaluate(tl_call(fn, dst, address_of(img, idx), valid), op.span)

    vs = (Var("i0", int32), Var("i1", int32))
    nest = tc.lower_nest(vs, grid, chunk(vs), default_loop_layout(grid, tc.threads, 1), op.span)
    # the predicate is the bounds check (it zero-fills): keep legalize_memory_access from adding one
    return For(Var("chunk", int32), IntImm(0), IntImm(1), "serial", nest, None, FrozenDict({IN_BOUNDS: True}), op.span)


def _run_length(op: im2col.Im2Col, tc: ThreadCtx, ext: tuple) -> int | None:
    img, col = op.img.buffer, op.col.buffer
    channels = const_int(img.shape[3])
    if not tc.vector_copies or img.dtype is not col.dtype or channels is None or img.strides is not None:
        return None
    lay = tc.shared_layout(col)
    if lay is None or len(lay.shape) != len(col.shape):
        return None
    for nbytes in (16, 8, 4):
        v = nbytes // img.dtype.bytes
        if v < 2 or nbytes % img.dtype.bytes or channels % v or ext[1] % v:
            continue
        if _runs_contiguous(lay, v):
            return v
    return None


im2col.RULES["cuda"] = im2col_cuda
