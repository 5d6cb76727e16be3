"""The "cuda" lowering rules of the tile operators (Ampere mma.sync path).

Importing this module registers one function per op family in the
`RULES` dicts of `tilelang.tileop` (next to the reference "c" rules). Each rule
receives the `ThreadCtx` of `lower_threads.py` as its context and returns
per-thread IR (see that module for the thread model):

- `T.copy`: global→shared as 4/8/16-byte chunks spread over the block,
  `cp.async` (zero-filled at the boundary) when `inject_pipeline` marked the
  copy asynchronous, vector loads/stores otherwise; copies touching a fragment
  run over the fragment's own layout (vectorised where its registers hold
  contiguous runs); fragment→fragment copies are register casts when both
  layouts agree and go through shared memory otherwise; everything else is an
  element loop with the default layout.
- `T.gemm`: `tl::gemm_ss` / `tl::gemm_rs` (gemm.h) on the registers of the
  accumulator fragment; tf32 for float32 inputs, int8 needs `transpose_B`.
  When layout inference planned the gemm on wgmma (sm_90a, the accumulator's
  `meta["wgmma"]`): `tl::wgmma_gemm_ss` / `tl::wgmma_gemm_rs` (gemm_sm90.h) with
  descriptors over the operands' swizzled tiles, waiting for the group at the
  end unless the op says `wgmma_wait=False`.
- `T.reduce_*`: per-thread partials over the thread's registers, then
  `tl::AllReduce` over the threads that share an output element (one call per
  digit field of the output's replication: warp shuffles, shared memory across
  warps); layouts that do not line up reduce through shared memory.
- `T.fill`, `T.cumsum` (shared buffers; rows in parallel, a 1-D scan in one
  thread), atomics (`tl::atomic_*`), reducers (init / update / finalize =
  cross-thread reduction), `T.print` (`printf`) and `T.device_assert`
  (`tl::device_assert_fail`, which traps).
"""

from __future__ import annotations

from typing import Any

from ...arith import Analyzer
from ...errors import UnsupportedError
from ...ir.buffer import Buffer, BufferRegion
from ...ir.dtype import DataType, int32
from ...ir.expr import (
    BufferLoad,
    Call,
    IntImm,
    PrimExpr,
    StringImm,
    Var,
    as_expr,
    binary,
    cast,
    compare,
    const_int,
    logical_and,
    logical_not,
)
from ...ir.stmt import (
    Allocate,
    Atomic,
    BufferStore,
    Copy,
    CumSum,
    DeviceAssert,
    Evaluate,
    Fill,
    FinalizeReducer,
    For,
    Gemm,
    IfThenElse,
    Print,
    Reduce,
    ReducerInit,
    ReducerUpdate,
    Stmt,
    seq,
)
from ...ir.visitor import Mutator, free_vars_of
from ...layout import Fragment, Layout, SwizzleMode, detect_swizzle_mode, mma_k
from ...layout._expr import normalize, parse_digits
from ...layout.gemm import WgmmaPlan
from ...layout.layout import prod
from ...tileop import annotate, atomic, copy, cumsum, fill, gemm, reduce, reducer
from ...tileop import print as print_ops
from ...tileop.base import IN_BOUNDS, LowerContext, combine, identity, nonunit_dims
from ...tileop.copy import matched_dims
from ...transform.infer_layout import _struct_equal, default_loop_layout, wgmma_plan_of
from ...transform.nest_access import loop_from_fragment
from .explicit_hopper import all_reduce_barrier, region_first_thread
from .lower_threads import (
    FRAGMENT_SCOPES,
    SHARED_SCOPES,
    ThreadCtx,
    address_of,
    tl_call,
)

# --------------------------------------------------------------------------
# Nest builders
# --------------------------------------------------------------------------


def _static(xs: tuple, what: str, span) -> tuple:
    out = tuple(const_int(x) for x in xs)
    if any(x is None for x in out):
        raise UnsupportedError(
            f"{what} with a dynamic extent ({[str(x) for x in xs]}) is not supported on CUDA",
            span,
            "use compile-time tile sizes; out-of-bounds parts of a tile are handled automatically",
        )
    return out  # type: ignore[return-value]


def _vars(n: int, prefix: str = "i") -> tuple:
    return tuple(Var(f"{prefix}{k}", int32) for k in range(n))


def default_nest(tc: ThreadCtx, extents: tuple, body_fn, span, vec: int = 1) -> Stmt:
    """Lower `for vars in T.Parallel(extents): body_fn(vars)` with the default loop layout."""
    vs = _vars(len(extents))
    L = default_loop_layout(tuple(extents), tc.threads, vec)
    return tc.lower_nest(vs, tuple(extents), body_fn(vs), L, span)


def fragment_nest(tc: ThreadCtx, frag: Buffer, region: tuple, body_fn, span) -> Stmt:
    """Run `body_fn(element indices)` in the threads holding each element of the
    fragment region (`region`: (begin, extent) per dim), over the fragment's layout."""
    F = tc.fragment(frag)
    shape = tuple(const_int(d) for d in frag.shape)
    vs = _vars(len(shape))
    L = loop_from_fragment(F, tuple(range(len(shape))), shape)
    guard = None
    for v, (b, e), n in zip(vs, region, shape):
        bi, ei = const_int(b), const_int(e)
        if bi == 0 and ei == n:
            continue
        conds = [compare("ge", v, b), compare("lt", v, binary("add", b, e))]
        for c in conds:
            guard = c if guard is None else logical_and(guard, c)
    body = body_fn(vs)
    if guard is not None:
        body = IfThenElse(guard, body, None, span)
    return tc.lower_nest(vs, shape, body, L, span)


def register_loop(tc: ThreadCtx, n: int, fn) -> Stmt:
    c = Var("r", int32)
    body = fn(c)
    if n == 1:
        from ...ir.visitor import substitute

        return substitute(body, {c: IntImm(0)})
    return For(c, IntImm(0), IntImm(n), "unrolled", body)


def _widest(*bufs: Buffer) -> int:
    return max([b.dtype.bytes for b in bufs if b.scope == "global" or b.scope in SHARED_SCOPES] or [4])


def _same_layout(a: Fragment, b: Fragment) -> bool:
    if a is b or _struct_equal(a, b):
        return True
    try:
        return a.is_equal(b)
    except ValueError:
        return False


# --------------------------------------------------------------------------
# T.copy
# --------------------------------------------------------------------------


def copy_cuda(op: Copy, tc: ThreadCtx) -> Stmt:
    if "tma_barrier" in op.annotations or op.annotations.get("tma_store"):  # inject_pipeline / tma_store.py
        from .tma_lower import pipeline_tma_copy, tma_store_stmt

        return tma_store_stmt(op, tc) if op.annotations.get("tma_store") else pipeline_tma_copy(op, tc)
    src, dst = op.src, op.dst
    sb, db = src.buffer, dst.buffer
    sd, dd, ext = matched_dims(src, dst, op.span)
    if sb.scope in FRAGMENT_SCOPES and db.scope in FRAGMENT_SCOPES:
        return _copy_frag_frag(op, tc, sd, dd, ext)
    if db.scope in FRAGMENT_SCOPES or sb.scope in FRAGMENT_SCOPES:
        fr, other, fd, od = (dst, src, dd, sd) if db.scope in FRAGMENT_SCOPES else (src, dst, sd, dd)
        return _copy_with_fragment(op, tc, fr, other, fd, od, fr is dst)
    if not ext:
        return tc.block(BufferStore(db, dst.begins, cast(BufferLoad(sb, src.begins, sb.dtype), db.dtype), op.span))
    if sb.scope == "global" and db.scope in SHARED_SCOPES and (tc.vector_copies or op.annotations.get("async")):
        chunked = _chunked_copy(op, tc, sd, dd, bool(op.annotations.get("async")))
        if chunked is not None:
            return chunked
    exts = _static(tuple(ext), "T.copy", op.span)

    def body(vs):
        si, di = list(src.begins), list(dst.begins)
        for d, v in zip(sd, vs):
            si[d] = binary("add", si[d], v)
        for d, v in zip(dd, vs):
            di[d] = binary("add", di[d], v)
        return BufferStore(db, tuple(di), cast(BufferLoad(sb, tuple(si), sb.dtype), db.dtype), op.span)

    return default_nest(tc, exts, body, op.span, max(1, 16 // _widest(sb, db)))


def _copy_frag_frag(op: Copy, tc: ThreadCtx, sd, dd, ext) -> Stmt:
    src, dst = op.src, op.dst
    Fs, Fd = tc.fragment(src.buffer), tc.fragment(dst.buffer)
    full = src.is_whole() and dst.is_whole() and tuple(src.buffer.shape) and _eq_shape(src.buffer, dst.buffer)
    if full and _same_layout(Fs, Fd):
        rs, rd = tc.reg(src.buffer), tc.reg(dst.buffer)
        n = Fd.locals_per_thread()
        if rs.dtype.base == "float32" and rd.dtype.is_half_like and n % 2 == 0:
            # pairs of registers convert into one packed 32-bit register (what mma operands need)
            def pair(c):
                lo, hi = binary("mul", c, 2), binary("add", binary("mul", c, 2), 1)
                return Evaluate(tl_call(f"tl::cvt_pair<{_ctype(rd.dtype)}>", address_of(rd, (lo,)),
                                        BufferLoad(rs, (lo,), rs.dtype), BufferLoad(rs, (hi,), rs.dtype)))  # fmt: skip

            return register_loop(tc, n // 2, pair)
        return register_loop(tc, n, lambda c: BufferStore(rd, (c,), cast(BufferLoad(rs, (c,), rs.dtype), rd.dtype)))

    region = tuple((r.begin, r.extent) for r in dst.region)

    def body(vs):
        si = list(src.begins)
        for d_s, d_d in zip(sd, dd):
            si[d_s] = binary("add", si[d_s], binary("sub", vs[d_d], dst.region[d_d].begin))
        return BufferStore(dst.buffer, tuple(vs), cast(BufferLoad(src.buffer, tuple(si), src.buffer.dtype),
                                                       dst.buffer.dtype), op.span)  # fmt: skip

    return fragment_nest(tc, dst.buffer, region, body, op.span)


def _copy_with_fragment(op: Copy, tc: ThreadCtx, fr: BufferRegion, other: BufferRegion, fd, od, to_frag: bool) -> Stmt:
    region = tuple((r.begin, r.extent) for r in fr.region)
    fb, ob = fr.buffer, other.buffer
    for d, r in enumerate(fr.region):
        if d not in fd and const_int(r.extent) != 1:
            raise UnsupportedError("T.copy: mismatched fragment region", op.span)

    def body(vs):
        oi = list(other.begins)
        for d_f, d_o in zip(fd, od):
            oi[d_o] = binary("add", oi[d_o], binary("sub", vs[d_f], fr.region[d_f].begin))
        if to_frag:
            return BufferStore(fb, tuple(vs), cast(BufferLoad(ob, tuple(oi), ob.dtype), fb.dtype), op.span)
        return BufferStore(ob, tuple(oi), cast(BufferLoad(fb, tuple(vs), fb.dtype), ob.dtype), op.span)

    return fragment_nest(tc, fb, region, body, op.span)


def _ctype(dt: DataType) -> str:
    from .codegen import ctype

    return ctype(dt)


def _eq_shape(a: Buffer, b: Buffer) -> bool:
    return tuple(const_int(x) for x in a.shape) == tuple(const_int(x) for x in b.shape)


_RUNS: dict = {}


def _runs_contiguous(layout: Layout, v: int) -> bool:
    """Every aligned run of `v` elements along the last dim is contiguous in storage."""
    key = (id(layout), v)
    hit = _RUNS.get(key)
    if hit is not None and hit[0] is layout:
        return hit[1]
    ok = True
    if not layout.is_static:
        ok = False
    elif layout.meta.get("swizzle") and layout.meta.get("dtype"):
        ok = v * DataType(layout.meta["dtype"]).bits <= 128 and layout.shape[-1] % v == 0
    else:
        try:
            offs = layout.offsets()
            last = layout.shape[-1]
            ok = last % v == 0 and all(
                offs[g] % v == 0 and all(offs[g + r] == offs[g] + r for r in range(1, v))
                for g in range(0, len(offs), v)
            )
        except ValueError:
            ok = False
    _RUNS[key] = (layout, ok)
    return ok


def _chunked_copy(op: Copy, tc: ThreadCtx, sd, dd, is_async: bool) -> Stmt | None:
    """global → shared in chunks of v elements (4/8/16 bytes), predicated (zero fill)."""
    src, dst = op.src, op.dst
    sb, db = src.buffer, dst.buffer
    if sb.dtype is not db.dtype or sb.strides is not None or not sd:
        return None
    if sd[-1] != len(sb.shape) - 1 or dd[-1] != len(db.shape) - 1:
        return None
    ext = tuple(const_int(src.region[d].extent) for d in sd)
    if any(e is None for e in ext):
        return None
    lay = tc.shared_layout(db)
    if lay is None:
        return None
    elem = sb.dtype.bytes
    an = Analyzer()
    for bits in (16, 8, 4):  # chunk bytes
        # packed 4-bit tiles move whole bytes: v elements are v / 2 bytes, never half a byte
        v = bits * 8 // sb.dtype.bits if sb.dtype.bits < 8 else bits // elem
        if v < 1 or bits % elem or ext[-1] % v:
            continue
        if not _runs_contiguous(lay, v):
            continue
        if const_int(dst.region[dd[-1]].begin) is None or const_int(dst.region[dd[-1]].begin) % v:
            continue
        conds = []
        for e in (sb.shape[-1], src.region[sd[-1]].begin):
            c = an.simplify(binary("floormod", e, v))
            if const_int(c) == 0:
                continue
            if const_int(c) is not None:
                conds = None
                break
            conds.append(compare("eq", c, 0))
        if conds is None:
            continue
        fast = _chunks(op, tc, sd, dd, ext, v, is_async)
        if not conds:
            return fast
        cond = conds[0]
        for c in conds[1:]:
            cond = logical_and(cond, c)
        return IfThenElse(cond, fast, _element_copy(op, tc, sd, dd), op.span)
    return None


def _element_copy(op: Copy, tc: ThreadCtx, sd, dd) -> Stmt:
    src, dst = op.src, op.dst
    ext = _static(tuple(src.region[d].extent for d in sd), "T.copy", op.span)

    def body(vs):
        si, di = list(src.begins), list(dst.begins)
        for d, v in zip(sd, vs):
            si[d] = binary("add", si[d], v)
        for d, v in zip(dd, vs):
            di[d] = binary("add", di[d], v)
        return BufferStore(dst.buffer, tuple(di), cast(BufferLoad(src.buffer, tuple(si), src.buffer.dtype),
                                                       dst.buffer.dtype), op.span)  # fmt: skip

    return default_nest(tc, ext, body, op.span, 1)


def _chunks(op: Copy, tc: ThreadCtx, sd, dd, ext: tuple, v: int, is_async: bool) -> Stmt:
    src, dst = op.src, op.dst
    sb, db = src.buffer, dst.buffer
    grid = tuple(ext[:-1]) + (ext[-1] // v,)
    bytes_ = sb.dtype.storage_bytes(v)

    def body(vs):
        vs = list(vs)
        vs[-1] = binary("mul", vs[-1], v)
        si, di = list(src.begins), list(dst.begins)
        for d, x in zip(sd, vs):
            si[d] = binary("add", si[d], x)
        for d, x in zip(dd, vs):
            di[d] = binary("add", di[d], x)
        pred = None
        for i, n in zip(si, sb.shape):
            for c in (compare("ge", i, 0), compare("lt", i, n)):
                pred = c if pred is None else logical_and(pred, c)
        fn = f"tl::cp_async_zfill<{bytes_}>" if is_async else f"tl::copy_vec_pred<{bytes_}>"
        call = tl_call(fn, address_of(db, tuple(di)), address_of(sb, tuple(si)), pred if pred is not None else True)
        return Evaluate(call, op.span)

    vs = _vars(len(grid))
    L = default_loop_layout(grid, tc.threads, 1)
    nest = tc.lower_nest(vs, grid, body(vs), L, op.span)
    # the chunks carry their own bounds predicate: a one-trip loop marked in-bounds
    # keeps legalize_memory_access from guarding (and so skipping) the zero fill
    from ...ir.node import FrozenDict

    return For(Var("chunk", int32), IntImm(0), IntImm(1), "serial", nest, None, FrozenDict({IN_BOUNDS: True}), op.span)


# --------------------------------------------------------------------------
# T.gemm
# --------------------------------------------------------------------------


def smem_layout_type(lay: Layout, buf: Buffer, span) -> str:
    """`tl::SmemLayout<ROWS, COLS, ELEM_BYTES, SWIZZLE_BYTES>` of the last two dims of `lay`."""
    rows, cols = lay.shape[-2], lay.shape[-1]
    eb = buf.dtype.bytes
    label = lay.meta.get("swizzle")
    if buf.dtype.bits < 8:  # packed 4-bit tile: the layout of its byte tile (layout/packed.py)
        if not (label and lay.meta.get("packed") and lay.meta.get("dtype") == str(buf.dtype)):
            raise UnsupportedError(
                f"T.gemm operand `{buf.name}` ({buf.dtype}) needs the packed operand layout, got {lay}",
                span,
                "leave gemm operand tiles of 4-bit dtypes without T.annotate_layout",
            )
        cols, eb = cols // 2, 1
    if label and lay.meta.get("dtype") == str(buf.dtype):
        if lay.meta.get("padded"):
            return f"tl::SmemLayout<{rows}, {lay.output_shape[-1] // (2 if buf.dtype.bits < 8 else 1)}, {eb}, 0>"
        sw = 0 if label == "none" else int(label[:-1])
        return f"tl::SmemLayout<{rows}, {cols}, {eb}, {sw}>"
    inner = lay
    if lay.ndim == 2:
        mode = detect_swizzle_mode(inner, buf.dtype)
        if mode is not None:
            return f"tl::SmemLayout<{rows}, {cols}, {eb}, {mode.swizzle_byte_size() if mode is not SwizzleMode.NONE else 0}>"
    raise UnsupportedError(
        f"T.gemm operand `{buf.name}` has a shared layout the mma.sync path cannot address ({lay})",
        span,
        "use the default layout or T.annotate_layout with make_swizzled_layout / make_*_bank_swizzled_layout",
    )


def gemm_cuda(op: Gemm, tc: ThreadCtx) -> Stmt:
    from ...tileop.gemm import gemm_dtype_problem, matrix_dims

    A, B, C = op.A, op.B, op.C
    F = tc.fragment(C.buffer)
    plan = wgmma_plan_of(F)
    if plan is not None:
        return gemm_wgmma(op, tc, plan)
    if "wgmma_wait" in op.annotations:
        raise UnsupportedError(
            "T.wgmma_gemm: this gemm cannot run on wgmma, so it cannot be issued asynchronously",
            op.span,
            "compile for sm_90a without tl.disable_wgmma, use whole warpgroups (threads a multiple of 128), "
            "64-row warpgroup tiles and operand tiles whose rows are a multiple of 32 bytes — or use T.gemm",
        )
    wm, wn = F.meta.get("warp_grid", (None, None))
    if wm is None:
        raise UnsupportedError("T.gemm accumulator has no mma layout", op.span)
    ad, bd = matrix_dims(A, op.span, "A"), matrix_dims(B, op.span, "B")
    M, N = (const_int(x) for x in C.buffer.shape)
    aext = (const_int(A.region[ad[0]].extent), const_int(A.region[ad[1]].extent))
    K = aext[0] if op.transpose_A else aext[1]
    adt, bdt = A.buffer.dtype, B.buffer.dtype
    problem = gemm_dtype_problem(adt, bdt, C.buffer.dtype)  # the rule of every target (verify checks it too)
    if problem is not None:
        raise UnsupportedError(problem[0], op.span, problem[1])
    if adt.bits == 64:
        raise UnsupportedError(
            f"T.gemm on {adt} has no tensor-core path on CUDA", op.span, "use float32 operands, or a T.Parallel loop"
        )
    # fp8 below sm_89 (no fp8 mma) runs as exact f16 mmas inside tl::mma_sync (tl/mma.h)
    k = mma_k(adt)
    if K % k:
        raise UnsupportedError(f"T.gemm K={K} is not a multiple of the instruction's k={k}", op.span)
    wM, wN = M // wm, N // wn
    if wN % 8 or wM % 16:
        raise UnsupportedError(f"T.gemm warp tile {wM}×{wN} does not fit m16n8 atoms", op.span)
    cdt = C.buffer.dtype
    stmts: list = []
    creg = tc.reg(C.buffer)
    n = F.locals_per_thread()
    if op.clear_accum:
        stmts.append(register_loop(tc, n, lambda c: BufferStore(creg, (c,), as_expr(0, cdt))))
    pc = address_of(creg, (IntImm(0),))
    bl = tc.shared_layout(B.buffer)
    for r, d in ((B, bd),):
        if r.buffer.scope not in SHARED_SCOPES:
            raise UnsupportedError("T.gemm operand B must be in shared memory", op.span)
        _check_tile_region(r, d, op.span)
    b_t = smem_layout_type(bl, B.buffer, op.span)
    pb = address_of(B.buffer, B.begins)
    ta, tb = "true" if op.transpose_A else "false", "true" if op.transpose_B else "false"
    kt = K // 2 if adt.bits < 8 else K  # packed 4-bit: the templates count K in bytes (tl/gemm.h)
    lean = ", true" if register_pressure(tc, exclude=C.buffer) > LEAN_THRESHOLD else ""
    if A.buffer.scope in FRAGMENT_SCOPES:
        pa = address_of(tc.reg(A.buffer), (IntImm(0),))
        fn = f"tl::gemm_rs<{M}, {N}, {kt}, {wm}, {wn}, {tb}, {b_t}{lean}>"
    else:
        _check_tile_region(A, ad, op.span)
        a_t = smem_layout_type(tc.shared_layout(A.buffer), A.buffer, op.span)
        pa = address_of(A.buffer, A.begins)
        fn = f"tl::gemm_ss<{M}, {N}, {kt}, {wm}, {wn}, {ta}, {tb}, {a_t}, {b_t}{lean}>"
    stmts.append(Evaluate(tl_call(fn, pa, pb, pc), op.span))
    return seq(*stmts)


def gemm_wgmma(op: Gemm, tc: ThreadCtx, plan: WgmmaPlan) -> Stmt:
    """`tl::wgmma_gemm_ss` / `_rs` (gemm_sm90.h) for a gemm layout inference planned on wgmma.

    The plan (warpgroup grid, instruction N) comes from the accumulator fragment, the
    swizzle of each shared operand from its final layout; a trailing wait is emitted
    unless the op carries `wgmma_wait=False` (T.wgmma_gemm: the user waits)."""
    from ...tileop.gemm import matrix_dims

    A, B, C = op.A, op.B, op.C
    M, N = (const_int(x) for x in C.buffer.shape)
    ad = matrix_dims(A, op.span, "A")
    K = const_int(A.region[ad[0] if op.transpose_A else ad[1]].extent)
    _check_tile_region(B, matrix_dims(B, op.span, "B"), op.span)
    b_t = _wgmma_smem_layout(tc, B.buffer, op.span)
    flags = f"{'true' if op.clear_accum else 'false'}, {'true' if op.annotations.get('wgmma_wait', True) else 'false'}"
    flags += f", {region_first_thread(tc)}"  # THREAD_BASE: warpgroups counted from a T.ws region's first
    grid = f"{M}, {N}, {K}, {plan.groups_m}, {plan.groups_n}, {plan.inst_n}"
    tb = "true" if op.transpose_B else "false"
    pb = address_of(B.buffer, B.begins)
    pc = address_of(tc.reg(C.buffer), (IntImm(0),))
    if plan.a_major == "regs":
        pa = address_of(tc.reg(A.buffer), (IntImm(0),))
        fn = f"tl::wgmma_gemm_rs<{grid}, {tb}, {b_t}, {flags}>"
    else:
        _check_tile_region(A, ad, op.span)
        a_t = _wgmma_smem_layout(tc, A.buffer, op.span)
        pa = address_of(A.buffer, A.begins)
        ta = "true" if op.transpose_A else "false"
        fn = f"tl::wgmma_gemm_ss<{grid}, {ta}, {tb}, {a_t}, {b_t}, {flags}>"
    out = [Evaluate(tl_call(fn, pa, pb, pc), op.span)]
    for buf in op.annotations.get("wgmma_fence_after", ()):  # defer_wgmma_wait: groups this wait retired
        reg = tc.reg(buf)
        n = const_int(reg.shape[0])
        out.append(Evaluate(tl_call(f"tl::warpgroup_fence_operands<{n}>", address_of(reg, (IntImm(0),))), op.span))
    return seq(*out)


def _wgmma_smem_layout(tc: ThreadCtx, buf: Buffer, span) -> str:
    t = smem_layout_type(tc.shared_layout(buf), buf, span)
    if t.endswith(", 0>"):
        raise UnsupportedError(
            f"T.gemm operand `{buf.name}` lost the swizzle its wgmma plan was made for ({t})",
            span,
            "do not re-annotate gemm operand tiles after the gemm, or set tl.disable_wgmma",
        )
    return t


# 32-bit registers per thread held by the kernel's other fragments above which a gemm
# uses the register-lean schedule of gemm.h (no double-buffered operand fragments)
LEAN_THRESHOLD = 96


def register_pressure(tc: ThreadCtx, exclude: Buffer | None = None) -> int:
    """32-bit registers per thread of every register tile of the kernel except `exclude`."""
    total = 0
    for b, lay in tc.layouts.items():
        if isinstance(lay, Fragment) and isinstance(b, Buffer) and b.scope in FRAGMENT_SCOPES and b is not exclude:
            total += -(-lay.locals_per_thread() * b.dtype.bytes // 4)
    return total


def _check_tile_region(r: BufferRegion, dims, span) -> None:
    for d in dims:
        g = r.region[d]
        if const_int(g.begin) != 0 or const_int(g.extent) != const_int(r.buffer.shape[d]):
            raise UnsupportedError(
                f"T.gemm operand `{r.buffer.name}` must be a whole 2-D shared tile, got {r!r}",
                span,
                "allocate the operand tile with exactly the gemm's shape",
            )


# --------------------------------------------------------------------------
# T.fill
# --------------------------------------------------------------------------


def fill_cuda(op: Fill, tc: ThreadCtx) -> Stmt:
    dst = op.dst
    b = dst.buffer
    value = tc.block_expr(op.value)
    if b.scope in FRAGMENT_SCOPES:
        if dst.is_whole():
            reg = tc.reg(b)
            return register_loop(
                tc, tc.fragment(b).locals_per_thread(), lambda c: BufferStore(reg, (c,), cast(value, b.dtype))
            )
        region = tuple((r.begin, r.extent) for r in dst.region)
        return fragment_nest(
            tc, b, region, lambda vs: BufferStore(b, tuple(vs), cast(value, b.dtype), op.span), op.span
        )
    if b.scope in ("local", "local.var"):
        return _per_thread(fill.lower_c(op, LowerContext("c", tc.func)))
    dims = nonunit_dims(dst)
    if not dims:
        return tc.block(BufferStore(b, dst.begins, cast(value, b.dtype), op.span))
    ext = _static(tuple(dst.region[d].extent for d in dims), "T.fill", op.span)

    def body(vs):
        idx = list(dst.begins)
        for d, v in zip(dims, vs):
            idx[d] = binary("add", idx[d], v)
        return BufferStore(b, tuple(idx), cast(value, b.dtype), op.span)

    return default_nest(tc, ext, body, op.span, max(1, 16 // b.dtype.bytes))


def _per_thread(s: Stmt) -> Stmt:
    class _P(Mutator):
        def visit_For(self, n: For) -> Any:
            from dataclasses import replace

            body = self.visit(n.body)
            return replace(n, body=body, kind="serial" if n.kind == "parallel" else n.kind)

    return _P().visit(s)


# --------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------

_OPS = {"sum": "tl::SumOp", "abssum": "tl::SumOp", "max": "tl::MaxOp", "absmax": "tl::MaxOp", "min": "tl::MinOp",
        "bitand": "tl::BitAndOp", "bitor": "tl::BitOrOp", "bitxor": "tl::BitXorOp"}  # fmt: skip


def rep_fields(F: Fragment) -> list | None:
    """[(coef, span)] of the replicate var's digits in the thread map (each is one
    `AllReduce<Op, span, coef>` group), or None if not digit form / not powers of two."""
    if F.replicate_size == 1:
        return []
    rep = F.get_rep_var()
    ext = {**{v: s for v, s in zip(F.get_forward_vars(), F.shape)}, rep: F.replicate_size}
    dg = parse_digits(F.thread, ext, atoms=False)
    if dg is None:
        return None
    out = []
    for f in normalize(dg).fields:
        if f.var is rep:
            span = f.span
            if span is None or not _pow2(span) or not _pow2(f.coef):
                return None
            out.append((f.coef, span))
    return out


def reduce_fields(F: Fragment, dims: tuple) -> list | None:
    """[(coef, span)] of the thread digits that come from the reduced `dims` of F: the
    groups of threads holding partials of one output (digits of F's own replication
    hold copies, which must not be combined again); None if not digit form."""
    fv = F.get_forward_vars()
    red = [fv[d] for d in dims]
    ext = {**{v: s for v, s in zip(fv, F.shape)}, F.get_rep_var(): F.replicate_size}
    dg = parse_digits(F.thread, ext, atoms=False)
    if dg is None:
        return None
    out = []
    for f in normalize(dg).fields:
        if any(f.var is v for v in red):
            if f.span is None or not _pow2(f.span) or not _pow2(f.coef):
                return None
            out.append((f.coef, f.span))
    return out


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


# `tl::AllReduce<op, threads, scale, thread offset, barrier threads, barrier id>::run(value[, scratch])`
# as a call with those six fields as its first arguments (StringImm op class, then IntImms), so
# that passes read and rewrite them (warp_specialize) and codegen alone spells the template.
ALL_REDUCE_OP = "tl.all_reduce"
BLOCK_BARRIER = (0, 0, 1)  # no thread offset, every thread of the block, __syncthreads()


def all_reduce_call(op_class: str, threads: int, scale: int, barrier: tuple, *values: PrimExpr) -> Call:
    fields = (StringImm(op_class), *(IntImm(x) for x in (threads, scale, *barrier)))
    return Call(ALL_REDUCE_OP, fields + values, values[0].dtype)


def all_reduce_fields(c: Call) -> tuple[str, int, int, tuple]:
    """(op class, threads, scale, (thread offset, barrier threads, barrier id)) of an all_reduce_call."""
    op, *nums = c.args[:6]
    threads, scale, *barrier = (int(x.value) for x in nums)
    return op.value, threads, scale, tuple(barrier)


def all_reduce(tc: ThreadCtx, kind: str, value: PrimExpr, fields: list) -> PrimExpr:
    for coef, span in fields:
        if span == 1:
            continue
        extra = ()
        if span * coef > tc.wave:  # the group spans warps (waves): partials through scratch
            extra = (address_of(tc.scratch("red_buf", (tc.threads,), value.dtype), (IntImm(0),)),)
        value = all_reduce_call(_OPS[kind], span, coef, all_reduce_barrier(tc), value, *extra)
    return value


def reduce_cuda(op: Reduce, tc: ThreadCtx) -> Stmt:
    nd = len(op.src.region)
    dim = op.dim % nd
    keep = len(op.dst.region) == nd
    fields = register_reduce_fields(op, tc.layouts)
    if fields is not None:
        Fs, Fd = tc.fragment(op.src.buffer), tc.fragment(op.dst.buffer)
        return _reduce_registers(op, tc, Fs, Fd, dim, keep, fields)
    return _reduce_generic(op, tc, dim, keep)


def register_reduce_fields(op: Reduce, layouts: dict) -> list | None:
    """The `tl::AllReduce` groups of a reduction that runs in registers — whole fragments whose
    reduced layout is the destination's: per-thread folds, then shuffles (and a scratch of one
    value per thread when a group spans warps) — or None (the generic form stages through
    shared memory)."""
    src, dst = op.src, op.dst
    sb, db = src.buffer, dst.buffer
    if not (sb.scope in FRAGMENT_SCOPES and db.scope in FRAGMENT_SCOPES and src.is_whole() and dst.is_whole()):
        return None
    Fs, Fd = layouts.get(sb), layouts.get(db)
    if not (isinstance(Fs, Fragment) and isinstance(Fd, Fragment)):
        return None
    nd = len(src.region)
    dim = op.dim % nd
    try:
        R = Fs.reduce_dims(dim, keepdims=len(dst.region) == nd)
    except (ValueError, TypeError):
        return None
    return reduce_fields(Fs, (dim,)) if _same_layout(R, Fd) else None


def _reduce_registers(op: Reduce, tc: ThreadCtx, Fs: Fragment, Fd: Fragment, dim: int, keep: bool, fields) -> Stmt:
    sb, db = op.src.buffer, op.dst.buffer
    dt = db.dtype
    rs, rd = tc.reg(sb), tc.reg(db)
    n_s, n_d = Fs.locals_per_thread(), Fd.locals_per_thread()
    tmp = Buffer(f"{db.name}_red", (IntImm(n_d),), dt, "local")
    T_s, _, iters, _, c = tc.inverse(Fs)
    ext = {tc.tx: T_s, c: n_s}
    if keep:
        didx = tuple(IntImm(0) if k == dim else e for k, e in enumerate(iters))
    else:
        didx = tuple(e for k, e in enumerate(iters) if k != dim)
    r = tc.reg_index(db, didx, ext)
    upd: Stmt = BufferStore(
        tmp, (r,), combine(op.kind, BufferLoad(tmp, (r,), dt), BufferLoad(rs, (c,), sb.dtype), op.nan_propagate)
    )
    shape = tuple(const_int(x) for x in sb.shape)
    guard = None
    for e, lim, full in zip(iters, shape, Fs.shape):
        if full > lim:
            g = compare("lt", e, lim)
            guard = g if guard is None else logical_and(guard, g)
    if guard is not None:
        upd = IfThenElse(guard, upd, None, op.span)
    init = register_loop(tc, n_d, lambda q: BufferStore(tmp, (q,), identity(op.kind, dt)))
    acc = For(c, IntImm(0), IntImm(n_s), "unrolled", upd) if n_s > 1 else _subst(upd, c, 0)
    cross_kind = "max" if op.kind == "absmax" else ("sum" if op.kind == "abssum" else op.kind)

    def fin(q):
        v = all_reduce(tc, cross_kind, BufferLoad(tmp, (q,), dt), fields)
        if op.clear:
            return BufferStore(rd, (q,), v)
        return BufferStore(rd, (q,), combine(cross_kind, BufferLoad(rd, (q,), dt), v, op.nan_propagate))

    return seq(Allocate(tmp), init, acc, register_loop(tc, n_d, fin))


def _subst(s: Stmt, v: Var, x: int) -> Stmt:
    from ...ir.visitor import substitute

    return substitute(s, {v: IntImm(x)})


def _reduce_generic(op: Reduce, tc: ThreadCtx, dim: int, keep: bool) -> Stmt:
    """Each output element computed by its owner (serial loop over `dim`); fragment
    inputs are read through shared memory by the nest lowering."""
    src, dst = op.src, op.dst
    sb, db = src.buffer, dst.buffer
    dt = db.dtype
    red = _static((src.region[dim].extent,), "T.reduce", op.span)[0]
    from ...tileop.reduce import output_dims

    pairs = output_dims(op)  # (src dim, dst dim) of each dim the reduction keeps

    def body(vs):
        # vs index the whole dst region
        didx = tuple(vs)
        sidx = list(src.begins)
        for s_d, d_d in pairs:
            sidx[s_d] = binary("add", sidx[s_d], binary("sub", vs[d_d], dst.region[d_d].begin))
        k = Var("rk", int32)
        sidx[dim] = binary("add", sidx[dim], k)
        accb = Buffer("acc", (IntImm(1),), dt, "local.var")
        z = (IntImm(0),)
        init = identity(op.kind, dt) if op.clear else BufferLoad(db, didx, dt)
        upd = BufferStore(
            accb, z, combine(op.kind, BufferLoad(accb, z, dt), BufferLoad(sb, tuple(sidx), sb.dtype), op.nan_propagate)
        )
        return seq(
            Allocate(accb, init),
            For(k, IntImm(0), IntImm(red), "serial", upd),
            BufferStore(db, didx, BufferLoad(accb, z, dt)),
        )

    if db.scope in FRAGMENT_SCOPES:
        region = tuple((r.begin, r.extent) for r in dst.region)
        return fragment_nest(tc, db, region, body, op.span)
    ext = _static(tuple(r.extent for r in dst.region), "T.reduce", op.span)

    def body2(vs):
        full = tuple(binary("add", r.begin, v) for r, v in zip(dst.region, vs))
        return body(full)

    return default_nest(tc, ext, body2, op.span, 1)


# --------------------------------------------------------------------------
# T.cumsum
# --------------------------------------------------------------------------


def cumsum_cuda(op: CumSum, tc: ThreadCtx) -> Stmt:
    """Scan in shared or global memory: rows over the threads, each a serial scan. A register
    fragment (source or destination) is staged through a shared copy of itself: every thread
    writes the elements it holds, barrier, scan there, barrier, every thread reads back
    the elements it holds (all replicas), barrier (the copy's storage may be reused)."""
    from dataclasses import replace

    from .lower_threads import sync_stmt

    for r in (op.src, op.dst):
        if r.buffer.scope not in SHARED_SCOPES + FRAGMENT_SCOPES + ("global",):
            raise UnsupportedError(
                f"T.cumsum on `{r.buffer.name}` ({r.buffer.scope}) is not supported on CUDA",
                op.span,
                "scan a shared, register-fragment or global buffer (copy the data into one first)",
            )
    staged: dict = {}
    for r in (op.src, op.dst):  # the destination too: elements outside its region must survive
        if r.buffer.scope in FRAGMENT_SCOPES and r.buffer not in staged:
            staged[r.buffer] = tc.new_stage_buffer(r.buffer)
    if staged:
        op = replace(
            op,
            src=replace(op.src, buffer=staged.get(op.src.buffer, op.src.buffer)),
            dst=replace(op.dst, buffer=staged.get(op.dst.buffer, op.dst.buffer)),
        )
    scan = _parallel_rows(cumsum.lower_c(op, LowerContext("c", tc.func)), tc, op.span)
    if not staged:
        return scan
    outs = [tc.stage_out(frag, sb) for frag, sb in staged.items()]
    back = [_stage_in(tc, frag, sb) for frag, sb in staged.items() if sb is op.dst.buffer]
    return seq(*outs, sync_stmt(), scan, sync_stmt(), *back, sync_stmt())


def _stage_in(tc: ThreadCtx, frag: Buffer, sb: Buffer) -> Stmt:
    """Every thread (every replica) loads the fragment elements it holds from the shared copy `sb`."""
    F = tc.fragment(frag)
    T_L, n, iters, _rep, c = tc.inverse(F)
    reg = tc.reg(frag)
    st: Stmt = BufferStore(reg, (c,), BufferLoad(sb, iters, frag.dtype))
    guard = None
    for e, lim, full in zip(iters, tuple(const_int(d) for d in frag.shape), F.shape):
        if full > lim:  # padding of the layout
            g = compare("lt", e, lim)
            guard = g if guard is None else logical_and(guard, g)
    if guard is not None:
        st = IfThenElse(guard, st, None)
    loop: Stmt = For(c, IntImm(0), IntImm(n), "unrolled", st)
    if T_L < tc.threads:
        loop = IfThenElse(compare("lt", tc.tx, T_L), loop, None)
    return loop


def _parallel_rows(ref: Stmt, tc: ThreadCtx, span) -> Stmt:
    """A reference lowering (parallel loops over independent rows, serial work
    inside): rows over the block's threads; without parallel loops, thread 0."""
    from ...transform.infer_layout import perfect_nest

    if isinstance(ref, For) and ref.kind == "parallel":
        loops, body = perfect_nest(ref)
        ext = _static(tuple(x.extent for x in loops), "T.cumsum", span)
        L = default_loop_layout(ext, tc.threads, 1)
        return tc.lower_nest(tuple(x.var for x in loops), ext, _per_thread(body), L, span)
    return tc.only_thread0(_per_thread(ref))


# --------------------------------------------------------------------------
# Atomics
# --------------------------------------------------------------------------

_ORDERS = {None: 0, "relaxed": 0, "consume": 1, "acquire": 2, "release": 3, "acq_rel": 4, "seq_cst": 5}


def _atomic_call(op: Atomic, dst: Buffer, idx: tuple, value: PrimExpr) -> Stmt:
    dt = dst.dtype
    v = value if value.dtype is dt else cast(value, dt)
    order = _ORDERS.get(op.memory_order, 0)
    return Evaluate(Call(f"tl.atomic_{op.kind}", (address_of(dst, idx), v, IntImm(order)), dt), op.span)


def atomic_elementwise(op: Atomic, tc: ThreadCtx) -> Stmt:
    dst = op.dst
    if not all(const_int(r.extent) == 1 for r in dst.region):
        raise UnsupportedError("a region atomic inside T.Parallel is not supported", op.span, "use the element form")
    if isinstance(op.value, BufferRegion):
        value = BufferLoad(op.value.buffer, op.value.begins, op.value.buffer.dtype)
    else:
        value = op.value
    if dst.buffer.scope not in ("global",) + SHARED_SCOPES:
        return BufferStore(
            dst.buffer, dst.begins, combine(op.kind, BufferLoad(dst.buffer, dst.begins, dst.buffer.dtype), value)
        )
    return _atomic_call(op, dst.buffer, dst.begins, value)


def atomic_cuda(op: Atomic, tc: ThreadCtx) -> Stmt:
    dst = op.dst
    db = dst.buffer
    if db.scope not in ("global",) + SHARED_SCOPES:
        raise UnsupportedError(f"atomics need global or shared memory, `{db.name}` is {db.scope}", op.span)
    if isinstance(op.value, BufferRegion):
        vr = op.value
        vd, dd, ext = matched_dims(vr, dst, op.span, f"T.atomic_{op.kind}")

        def body_frag(vs):
            di = list(dst.begins)
            for d_v, d_d in zip(vd, dd):
                di[d_d] = binary("add", di[d_d], binary("sub", vs[d_v], vr.region[d_v].begin))
            return _atomic_call(op, db, tuple(di), BufferLoad(vr.buffer, tuple(vs), vr.buffer.dtype))

        if vr.buffer.scope in FRAGMENT_SCOPES:
            region = tuple((r.begin, r.extent) for r in vr.region)
            return fragment_nest(tc, vr.buffer, region, body_frag, op.span)
        exts = _static(tuple(ext), "T.atomic", op.span)

        def body(vs):
            vi, di = list(vr.begins), list(dst.begins)
            for d, v in zip(vd, vs):
                vi[d] = binary("add", vi[d], v)
            for d, v in zip(dd, vs):
                di[d] = binary("add", di[d], v)
            return _atomic_call(op, db, tuple(di), BufferLoad(vr.buffer, tuple(vi), vr.buffer.dtype))

        if not exts:
            return tc.only_thread0(body(()))
        return default_nest(tc, exts, body, op.span, _atomic_vector_width(op, db))
    dims = nonunit_dims(dst)
    value = tc.block_expr(op.value)
    if not dims:
        return tc.only_thread0(_atomic_call(op, db, dst.begins, value))
    exts = _static(tuple(dst.region[d].extent for d in dims), "T.atomic", op.span)

    def body_s(vs):
        di = list(dst.begins)
        for d, v in zip(dims, vs):
            di[d] = binary("add", di[d], v)
        return _atomic_call(op, db, tuple(di), value)

    return default_nest(tc, exts, body_s, op.span, _atomic_vector_width(op, db))


def _atomic_vector_width(op: Atomic, dst: Buffer) -> int:
    """Elements per thread along the last dim of a region atomic: runs that the vectorize
    pass can turn into vector atomic adds (float16/bfloat16 pairs; float32 ×4, global only),
    16 bytes wide so that the value's loads vectorize too. 1 for everything else."""
    if op.kind != "add":
        return 1
    if dst.dtype.base in ("float16", "bfloat16") or (dst.dtype.base == "float32" and dst.scope == "global"):
        return 16 // dst.dtype.bytes
    return 1


# --------------------------------------------------------------------------
# Reducers
# --------------------------------------------------------------------------


def reducer_init_cuda(op: ReducerInit, tc: ThreadCtx) -> Stmt:
    b = op.reducer
    reg = tc.reg(b)
    v = identity(tc.reducer_op(b), b.dtype)
    return register_loop(tc, tc.fragment(b).locals_per_thread(), lambda c: BufferStore(reg, (c,), v))


def reducer_update_cuda(op: ReducerUpdate, tc: ThreadCtx) -> Stmt:
    if tc.tl is not None:  # thread-level code: each thread updates its own replica (thread_level.py)
        from .thread_level import reducer_update_in_thread

        out = reducer_update_in_thread(op, tc)
        if out is not None:
            return out
    raise UnsupportedError(
        "T.reducer_update outside a T.Parallel loop is not supported on CUDA",
        op.span,
        "update the reducer inside T.Parallel",
    )


def finalize_cuda(op: FinalizeReducer, tc: ThreadCtx) -> Stmt:
    b, d = op.reducer, op.dst
    Fr = tc.fragment(b)
    fields = rep_fields(Fr)
    if fields is None:
        raise UnsupportedError(
            f"cannot combine the replicas of reducer `{b.name}`: its layout is not digit-form", op.span
        )
    kind = tc.reducer_op(b)
    rr = tc.reg(b)
    n = Fr.locals_per_thread()
    out = [
        register_loop(
            tc, n, lambda c: BufferStore(rr, (c,), all_reduce(tc, kind, BufferLoad(rr, (c,), b.dtype), fields))
        )
    ]
    if d is b:
        return seq(*out)
    if d.scope in FRAGMENT_SCOPES and _same_layout(Fr, tc.fragment(d)):
        rd = tc.reg(d)
        out.append(register_loop(tc, n, lambda c: BufferStore(rd, (c,), cast(BufferLoad(rr, (c,), b.dtype), d.dtype))))
        return seq(*out)
    out.append(copy_cuda(Copy(b.full_region(), d.full_region(), span=op.span), tc))
    return seq(*out)


# --------------------------------------------------------------------------
# T.print / T.device_assert
# --------------------------------------------------------------------------


def _print_call(prefix: str, idx: tuple, value: PrimExpr | None) -> Evaluate:
    args = (StringImm(prefix),) + tuple(idx) + ((value,) if value is not None else ())
    return Evaluate(Call("tl.print", args, int32))


def print_cuda(op: Print, tc: ThreadCtx) -> Stmt:
    msg = op.msg
    if op.obj is None:
        return tc.only_thread0(_print_call(msg, (), None))
    if isinstance(op.obj, Buffer):
        b = op.obj
        prefix = f"{msg}{': ' if msg else ''}{b.name}"
        if b.scope in FRAGMENT_SCOPES:
            shape = tuple(const_int(x) for x in b.shape)
            region = tuple((IntImm(0), IntImm(s)) for s in shape)
            return fragment_nest(
                tc, b, region, lambda vs: _print_call(prefix, tuple(vs), BufferLoad(b, tuple(vs), b.dtype)), op.span
            )
        if b.scope == "local.var":
            return _print_call(prefix, (), BufferLoad(b, (IntImm(0),), b.dtype))
        ref = print_ops.lower(op, LowerContext("c", tc.func))
        if b.scope == "local":
            return _per_thread(ref)
        return tc.only_thread0(_per_thread(ref))
    return tc.only_thread0(_print_call(msg, (), tc.block_expr(op.obj)))


def assert_cuda(op: DeviceAssert, tc: ThreadCtx) -> Stmt:
    return _assert(op, tc.block_expr(op.cond))


def _assert(op: DeviceAssert, cond: PrimExpr) -> Stmt:
    f = op.span.file.rsplit("/", 1)[-1] if op.span.line else "<unknown>"
    call = tl_call("tl::device_assert_fail", StringImm(op.msg or "device_assert"), StringImm(f), IntImm(op.span.line))
    return IfThenElse(logical_not(cond), Evaluate(call, op.span), None, op.span)


def debug_in_thread(op: Any, tc: ThreadCtx) -> Stmt:
    if isinstance(op, DeviceAssert):
        return _assert(op, op.cond)
    if op.obj is None or isinstance(op.obj, PrimExpr):
        return _print_call(op.msg, (), op.obj)
    raise UnsupportedError("T.print of a buffer inside T.Parallel is not supported", op.span, "print an element")


def _drop(op: Any, tc: Any) -> Stmt:
    return seq()


# --------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------

copy.RULES["cuda"] = copy_cuda
gemm.RULES["cuda"] = gemm_cuda
fill.RULES["cuda"] = fill_cuda
reduce.RULES["cuda"] = reduce_cuda
cumsum.RULES["cuda"] = cumsum_cuda
atomic.RULES["cuda"] = atomic_cuda
reducer.RULES_INIT["cuda"] = reducer_init_cuda
reducer.RULES_UPDATE["cuda"] = reducer_update_cuda
reducer.RULES_FINALIZE["cuda"] = finalize_cuda
print_ops.RULES_PRINT["cuda"] = print_cuda
print_ops.RULES_ASSERT["cuda"] = assert_cuda
annotate.RULES["cuda"] = _drop

_ = (prod, free_vars_of)

from . import im2col as _im2col  # noqa: E402 - registers T.im2col's CUDA rule (it builds on the helpers above)

_ = _im2col
