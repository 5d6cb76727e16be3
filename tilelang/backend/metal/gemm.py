"""`T.gemm` on Metal: 8×8×8 `simdgroup_matrix` multiply-accumulate, each SIMD-group on its own
8×8 blocks of C.

Design (and why). Apple documents what `simdgroup_matrix` computes but not which lane holds
which element of one, so the accumulator's register layout cannot honestly be "the
instruction's". Layout inference gives the accumulator (and a register A operand) the
layouts of `layout/simdgroup.py`: 8×8 blocks shared out over a grid of SIMD-groups, 2 elements
per lane per block — where the elements really live between gemms, so the editor's layout
view is true and `T.Parallel` epilogues, reductions and copies on the accumulator work as on
any fragment. Each `T.gemm` then runs, in every SIMD-group, over the blocks it owns:

1. its 32 lanes store their 2 elements of the C block into the SIMD-group's 8×8 staging tile
   `gemm_c8` (threadgroup memory), `simdgroup_barrier`, `simdgroup_load` (with `clear_accum`:
   `make_filled_simdgroup_matrix(0)` instead);
2. per K step of 8: the lanes copy the 8×8 A and B blocks (2 elements each, converted to C's
   dtype, read through the operand tiles' own layouts — swizzles and transposes included; a
   register A from the lane's own registers) into `gemm_a8` / `gemm_b8`, `simdgroup_barrier`,
   `simdgroup_load` both, `simdgroup_multiply_accumulate`, `simdgroup_barrier`;
3. `simdgroup_store` into `gemm_c8`, `simdgroup_barrier`, the lanes reload their registers.

Cost: 3 staging tiles of 8×8 C elements per SIMD-group (768 bytes per SIMD-group for float) of
the 32 KiB of threadgroup memory; per block one round trip of C through threadgroup memory and
per K step two SIMD-group barriers and 2 staged elements per lane and operand. No threadgroup
barrier: every block is staged by the SIMD-group that owns it. All three matrices of an
instruction have C's element type (the form the MSL specification gives
`simdgroup_multiply_accumulate`), so fp16 operands with a float32 accumulator multiply in
float32 — exact for fp16 products, as on tensor cores."""

from __future__ import annotations

from ...errors import UnsupportedError
from ...ir.buffer import Buffer
from ...ir.dtype import int32
from ...ir.expr import BufferLoad, Call, IntImm, Var, binary, cast
from ...ir.node import FrozenDict
from ...ir.stmt import Allocate, BufferStore, Evaluate, For, Gemm, Stmt, seq
from ...layout.simdgroup import simdgroup_grid_of
from ...tileop.gemm import operand_element, tile_mnk
from ..cuda.lower_threads import FRAGMENT_SCOPES, SHARED_SCOPES, ThreadCtx, address_of

SIMD = 32
BLOCK = 8
SIMDGROUP_MATRIX = "metal.simdgroup_matrix"  # Allocate annotation: a simdgroup_matrix<T, 8, 8> value
SG_LOAD, SG_STORE, SG_MMA, SG_FILL = (
    "metal.simdgroup_load",
    "metal.simdgroup_store",
    "metal.simdgroup_mma",
    "metal.simdgroup_fill",
)
SG_BARRIER = "metal.simdgroup_barrier"


def _call(op: str, *args) -> Evaluate:
    return Evaluate(Call(op, tuple(args), int32))


def gemm_metal(op: Gemm, tc: ThreadCtx) -> Stmt:
    A, B, C = op.A, op.B, op.C
    cb = C.buffer
    M, N, K = tile_mnk(op)
    F = tc.fragment(cb)
    grid = simdgroup_grid_of(F)
    if grid is None:
        raise UnsupportedError(
            f"T.gemm accumulator `{cb.name}` has a layout other than the simdgroup_matrix one ({F.meta.get('origin')})",
            op.span,
            "do not T.annotate_layout a gemm accumulator on Metal",
        )
    if K is None or K % BLOCK:
        raise UnsupportedError(f"T.gemm K={K} on Metal: simdgroup_matrix steps K by 8", op.span, "use block_K % 8 == 0")
    if B.buffer.scope not in SHARED_SCOPES:
        raise UnsupportedError("T.gemm operand B must be in shared (threadgroup) memory", op.span)
    a_regs = A.buffer.scope in FRAGMENT_SCOPES
    if not a_regs and A.buffer.scope not in SHARED_SCOPES:
        raise UnsupportedError("T.gemm operand A must be in shared memory or a fragment", op.span)
    if a_regs and simdgroup_grid_of(tc.fragment(A.buffer)) != (grid[0], 1):
        raise UnsupportedError(f"T.gemm register A operand `{A.buffer.name}` needs the simdgroup_matrix layout",
                               op.span, "do not T.annotate_layout it")  # fmt: skip
    acc = cb.dtype
    gm, gn = grid
    groups = gm * gn
    R, Cb, Kb = M // BLOCK // gm, N // BLOCK // gn, K // BLOCK
    tx = tc.tx
    sg, lane = binary("floordiv", tx, SIMD), binary("floormod", tx, SIMD)
    sm, sn = binary("floordiv", sg, gn), binary("floormod", sg, gn)
    c8 = tc.scratch("gemm_c8", (groups, BLOCK, BLOCK), acc)
    a8 = tc.scratch("gemm_a8", (groups, BLOCK, BLOCK), acc)
    b8 = tc.scratch("gemm_b8", (groups, BLOCK, BLOCK), acc)
    creg = tc.reg(cb)
    areg = tc.reg(A.buffer) if a_regs else None
    mats = [Buffer(n, (IntImm(1),), acc, "local") for n in ("mat_c", "mat_a", "mat_b")]
    mc, ma, mb = (BufferLoad(m, (IntImm(0),), acc) for m in mats)
    bi, kk, e = Var("blk", int32), Var("k8", int32), Var("e", int32)
    tm_l, tn_l = binary("floordiv", bi, Cb), binary("floormod", bi, Cb)
    r0 = binary("mul", binary("add", binary("mul", sm, R), tm_l), BLOCK)
    c0 = binary("mul", binary("add", binary("mul", sn, Cb), tn_l), BLOCK)
    idx = binary("add", binary("mul", lane, 2), e)
    rr, cc = binary("floordiv", idx, BLOCK), binary("floormod", idx, BLOCK)
    k0 = binary("mul", kk, BLOCK)
    own = (sg, rr, cc)  # the lane's 2 slots of its SIMD-group's staging tiles
    c_reg = (binary("add", binary("mul", bi, 2), e),)

    def per_lane(stmt: Stmt) -> Stmt:
        return For(e, IntImm(0), IntImm(2), "unrolled", stmt)

    if a_regs:
        a_val = BufferLoad(areg, (binary("add", binary("mul", binary("add", binary("mul", tm_l, Kb), kk), 2), e),),
                           A.buffer.dtype)  # fmt: skip
    else:
        a_val = operand_element(A, op, "A", binary("add", r0, rr), binary("add", k0, cc))
    b_val = operand_element(B, op, "B", binary("add", k0, rr), binary("add", c0, cc))
    k_body = seq(
        per_lane(seq(BufferStore(a8, own, cast(a_val, acc)), BufferStore(b8, own, cast(b_val, acc)))),
        _call(SG_BARRIER),
        _call(SG_LOAD, ma, address_of(a8, (sg, IntImm(0), IntImm(0))), IntImm(BLOCK)),
        _call(SG_LOAD, mb, address_of(b8, (sg, IntImm(0), IntImm(0))), IntImm(BLOCK)),
        _call(SG_MMA, mc, ma, mb, mc),
        _call(SG_BARRIER),
    )
    c_tile = address_of(c8, (sg, IntImm(0), IntImm(0)))
    if op.clear_accum:
        start = _call(SG_FILL, mc, cast(IntImm(0), acc))
    else:
        start = seq(per_lane(BufferStore(c8, own, BufferLoad(creg, c_reg, acc))), _call(SG_BARRIER),
                    _call(SG_LOAD, mc, c_tile, IntImm(BLOCK)))  # fmt: skip
    block = seq(
        start,
        For(kk, IntImm(0), IntImm(Kb), "serial", k_body),
        _call(SG_STORE, mc, c_tile, IntImm(BLOCK)),
        _call(SG_BARRIER),
        per_lane(BufferStore(creg, c_reg, BufferLoad(c8, own, acc))),
        _call(SG_BARRIER),
    )
    decl = [Allocate(m, None, FrozenDict({SIMDGROUP_MATRIX: True})) for m in mats]
    loop = For(bi, IntImm(0), IntImm(R * Cb), "unrolled", block) if R * Cb > 1 else _subst(block, bi)
    return seq(*decl, loop)


def _subst(s: Stmt, v: Var) -> Stmt:
    from ...ir.visitor import substitute

    return substitute(s, {v: IntImm(0)})
