"""`T.gemm` on Metal: 8×8 `simdgroup_matrix` multiply-accumulate, one SIMD-group per C block.

Design (and why). Apple documents what `simdgroup_matrix` computes but not which thread holds
which element of one, so no register layout of a kernel's accumulator can honestly be "the
instruction's". The accumulator therefore keeps the register fragment layout inference gives
it (the warp-tiled accumulator fragment, reported as such in the editor: it is where the
elements really live between gemms — `T.Parallel` epilogues, reductions, copies read it), and
each `T.gemm` is:

1. every thread stores the C elements it holds into a threadgroup staging tile `gemm_C`
   (M×N of C's dtype; skipped with `clear_accum`, which starts from zero matrices);
   a register A operand (FlashAttention's P) is staged the same way into `gemm_A`;
2. threadgroup barrier; SIMD-group `s` takes the 8×8 C blocks `s, s + S, s + 2S, ...`
   (S = threads / 32 SIMD-groups; the loop bound is uniform within a SIMD-group, as
   simdgroup_matrix functions require): `simdgroup_load` the block, then per K step of 8 its
   32 lanes copy the 8×8 A and B blocks (2 elements per lane, converted to C's dtype, through
   the operand tiles' own layouts — swizzles and transposes included) into a per-SIMD-group
   staging pair `gemm_a8` / `gemm_b8`, `simdgroup_barrier`, `simdgroup_load` both,
   `simdgroup_multiply_accumulate`, `simdgroup_barrier`; `simdgroup_store` the block back;
3. threadgroup barrier; every thread (every replica) reloads its C registers from `gemm_C`.

Cost: `gemm_C` (M·N·sizeof(C) bytes: 16 KiB for a 64×64 float accumulator) counts against the
32 KiB of threadgroup memory, plus 2·64·sizeof(C) bytes per SIMD-group for the operand blocks;
the C tile makes one round trip through threadgroup memory per `T.gemm` and each K step two
SIMD-group barriers. All three matrices of an instruction have C's element type (the form the
MSL specification gives `simdgroup_multiply_accumulate`), so fp16 operands with a float32
accumulator multiply in float32 — exact for fp16 products, as on tensor cores.

`gemm_decision` is the `GemmDecision` the pass records (family "simdgroup_matrix",
instruction "8x8x8", the SIMD-group count as the grid)."""

from __future__ import annotations

from ...errors import UnsupportedError
from ...ir.buffer import Buffer
from ...ir.decisions import GemmDecision
from ...ir.dtype import int32
from ...ir.expr import BufferLoad, Call, IntImm, Var, binary, cast, compare, const_int
from ...ir.node import FrozenDict
from ...ir.stmt import Allocate, BufferStore, Evaluate, For, Gemm, IfThenElse, Stmt, seq
from ...tileop.gemm import matrix_dims
from ..cuda.lower_threads import FRAGMENT_SCOPES, SHARED_SCOPES, ThreadCtx, address_of, sync_stmt
from ..cuda.ops import _stage_in, fragment_nest

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


def _shape(op: Gemm) -> tuple:
    A, C = op.A, op.C
    ad = matrix_dims(A, op.span, "A")
    M, N = (const_int(x) for x in C.buffer.shape[-2:])
    K = const_int(A.region[ad[0] if op.transpose_A else ad[1]].extent)
    return M, N, K


def gemm_decision(op: Gemm, threads: int) -> GemmDecision:
    return GemmDecision(op.span, "simdgroup_matrix", "8x8x8", BLOCK, (threads // SIMD, 1), "simdgroups",
                        op.A.buffer.scope in FRAGMENT_SCOPES)  # fmt: skip


def gemm_metal(op: Gemm, tc: ThreadCtx) -> Stmt:
    A, B, C = op.A, op.B, op.C
    cb = C.buffer
    if cb.scope not in FRAGMENT_SCOPES or len(cb.shape) != 2 or not C.is_whole():
        raise UnsupportedError("T.gemm on Metal accumulates into a whole 2-D T.alloc_fragment tile", op.span)
    M, N, K = _shape(op)
    if None in (M, N, K) or M % BLOCK or N % BLOCK or K % BLOCK:
        raise UnsupportedError(
            f"T.gemm {M}×{N}×{K} on Metal: simdgroup_matrix blocks are 8×8×8, so M, N and K must be multiples of 8",
            op.span,
            "use tile sizes that are multiples of 8",
        )
    if tc.threads % SIMD:
        raise UnsupportedError(f"T.gemm on Metal needs whole SIMD-groups (threads a multiple of 32), got {tc.threads}",
                               op.span)  # fmt: skip
    if B.buffer.scope not in SHARED_SCOPES:
        raise UnsupportedError("T.gemm operand B must be in shared (threadgroup) memory", op.span)
    acc = cb.dtype
    groups = tc.threads // SIMD
    tx = tc.tx
    sg, lane = binary("floordiv", tx, SIMD), binary("floormod", tx, SIMD)
    whole_c = tuple((IntImm(0), d) for d in cb.shape)
    cs = tc.scratch("gemm_C", (M, N), acc)
    out: list = [sync_stmt()]  # the previous gemm's reload of gemm_C (or other readers) is done
    if not op.clear_accum:
        out.append(fragment_nest(tc, cb, whole_c, lambda vs: BufferStore(cs, vs, BufferLoad(cb, vs, acc)), op.span))
    a_src = A
    if A.buffer.scope in FRAGMENT_SCOPES:  # a register A operand: staged like C
        ab = A.buffer
        a_stage = tc.scratch("gemm_A", tuple(const_int(d) for d in ab.shape), ab.dtype)
        out.append(fragment_nest(tc, ab, tuple((IntImm(0), d) for d in ab.shape),
                                 lambda vs: BufferStore(a_stage, vs, BufferLoad(ab, vs, ab.dtype)), op.span))  # fmt: skip
        a_src = a_stage
    elif A.buffer.scope not in SHARED_SCOPES:
        raise UnsupportedError("T.gemm operand A must be in shared memory or a fragment", op.span)
    out.append(sync_stmt())
    a8 = tc.scratch("gemm_a8", (groups, BLOCK, BLOCK), acc)
    b8 = tc.scratch("gemm_b8", (groups, BLOCK, BLOCK), acc)
    mats = [Buffer(n, (IntImm(1),), acc, "local") for n in ("mat_c", "mat_a", "mat_b")]
    mc, ma, mb = (BufferLoad(m, (IntImm(0),), acc) for m in mats)
    nb = N // BLOCK
    tiles = (M // BLOCK) * nb
    rnd = Var("blk_round", int32)
    t = binary("add", binary("mul", rnd, groups), sg)
    tm, tn = binary("floordiv", t, nb), binary("floormod", t, nb)
    r0, c0 = binary("mul", tm, BLOCK), binary("mul", tn, BLOCK)
    c_addr = address_of(cs, (r0, c0))
    kk = Var("k8", int32)
    e = Var("e", int32)
    idx = binary("add", binary("mul", lane, 2), e)
    rr, cc = binary("floordiv", idx, BLOCK), binary("floormod", idx, BLOCK)
    k0 = binary("mul", kk, BLOCK)
    stage = seq(
        BufferStore(a8, (sg, rr, cc), cast(_operand(a_src, A, op, "A", binary("add", r0, rr), binary("add", k0, cc)), acc)),
        BufferStore(b8, (sg, rr, cc), cast(_operand(B, B, op, "B", binary("add", k0, rr), binary("add", c0, cc)), acc)),
    )  # fmt: skip
    k_body = seq(
        For(e, IntImm(0), IntImm(BLOCK * BLOCK // SIMD), "unrolled", stage),
        _call(SG_BARRIER),
        _call(SG_LOAD, ma, address_of(a8, (sg, IntImm(0), IntImm(0))), IntImm(BLOCK)),
        _call(SG_LOAD, mb, address_of(b8, (sg, IntImm(0), IntImm(0))), IntImm(BLOCK)),
        _call(SG_MMA, mc, ma, mb, mc),
        _call(SG_BARRIER),
    )
    start = _call(SG_FILL, mc, cast(IntImm(0), acc)) if op.clear_accum else _call(SG_LOAD, mc, c_addr, IntImm(N))
    block = seq(*[Allocate(m, None, FrozenDict({SIMDGROUP_MATRIX: True})) for m in mats], start,
                For(kk, IntImm(0), IntImm(K // BLOCK), "serial", k_body), _call(SG_STORE, mc, c_addr, IntImm(N)))  # fmt: skip
    if tiles % groups:
        block = IfThenElse(compare("lt", t, tiles), block, None, op.span)
    rounds = -(-tiles // groups)
    out.append(For(rnd, IntImm(0), IntImm(rounds), "serial", block) if rounds > 1 else _subst(block, rnd))
    out.append(sync_stmt())
    out.append(_stage_in(tc, cb, cs))
    return seq(*out)


def _subst(s: Stmt, v: Var) -> Stmt:
    from ...ir.visitor import substitute

    return substitute(s, {v: IntImm(0)})


def _operand(src, region, op: Gemm, which: str, row, col):
    """Element (row, col) of op(A) (M×K) or op(B) (K×N), read from `src`: the operand's region,
    or its whole staged copy (a Buffer) for a register A."""
    transpose = op.transpose_A if which == "A" else op.transpose_B
    i, j = (col, row) if transpose else (row, col)
    if isinstance(src, Buffer):
        return BufferLoad(src, (i, j), src.dtype)
    d0, d1 = matrix_dims(region, op.span, which)
    idx = list(region.begins)
    idx[d0] = binary("add", idx[d0], i)
    idx[d1] = binary("add", idx[d1], j)
    return BufferLoad(region.buffer, tuple(idx), region.buffer.dtype)
