"""`T.gemm` on AMD MFMA: 16x16 blocks of C per wave, A and B read from LDS (or A from the
wave's own registers), one `hip.mfma` call per block and K step.

Layouts (`layout/mfma.py`): layout inference gives the accumulator — and a register A operand —
the MFMA map, so the registers hold exactly what the instruction reads and writes (no staging).
Per gemm, in every wave (wm, wn) of the grid, per K step of K_i:

1. the lane loads its P elements of A_i = B^T for each of its Cb block columns and of
   B_i = A^T for each of its R block rows from LDS, through the operand tiles' own layouts
   (swizzles and transposes included) — or, register A, takes them from its registers;
2. per block (r, c): `hip.mfma(<instruction>, &C[4 (r Cb + c)], &b_frag[c P], &a_frag[r P])`
   (a float16 accumulator: its 4 registers widened into `mfma_acc`, the instruction on that,
   rounded back — each instruction accumulates in float32, as mma.sync's f16 form rounds per
   instruction).

`hip.mfma(name, acc, src0, src1)` is the IR form of one instruction: `acc` (4 elements of the
lane) = src0-matrix x src1-matrix + acc, operands in the lane layouts of `layout/mfma.py`'s
docstring; codegen spells it `tl::mfma_<name>(acc, src0, src1)` (tl_hip/mfma.h, a clang
`__builtin_amdgcn_mfma_*`), and a SIMT simulator can execute it from the same description.

What is refused (`unsupported on HIP`, at the gemm's line): 32x32 forms and fp8 (not
implemented), K not a multiple of K_i, a register A operand other than float16 / bfloat16
(the f32 and int8 forms read A_i in another lane map), B in registers, tiles that cannot be
cut into 16x16 blocks per wave, fewer than 64 threads."""

from __future__ import annotations

from ...errors import UnsupportedError
from ...ir.buffer import Buffer
from ...ir.dtype import DataType, int32
from ...ir.expr import BufferLoad, Call, IntImm, StringImm, Var, binary, cast
from ...ir.stmt import Allocate, BufferStore, Evaluate, For, Gemm, Stmt, seq
from ...layout.mfma import BLOCK, WAVE, mfma_grid_of, mfma_instruction
from ...tileop.gemm import operand_element, tile_mnk
from ..cuda.lower_threads import FRAGMENT_SCOPES, SHARED_SCOPES, ThreadCtx, address_of

MFMA_OP = "hip.mfma"  # hip.mfma(StringImm name, acc address, src0 address, src1 address)


class _HipGemmError(UnsupportedError):
    kind = "unsupported on HIP"


def mfma_function(call: Call) -> str:
    """The tl_hip/mfma.h function of a `hip.mfma` call."""
    return "tl::mfma_" + call.args[0].value


def gemm_hip(op: Gemm, tc: ThreadCtx) -> Stmt:
    A, B, C = op.A, op.B, op.C
    cb = C.buffer
    M, N, K = tile_mnk(op)
    F = tc.fragment(cb)
    grid = mfma_grid_of(F)
    if grid is None:
        raise _HipGemmError(f"T.gemm accumulator `{cb.name}` with a layout other than the MFMA one "
                            f"({F.meta.get('origin')})", op.span, "do not T.annotate_layout a gemm accumulator")  # fmt: skip
    arch = getattr(tc.target, "arch", "gfx90a")
    ins = mfma_instruction(A.buffer.dtype, "gfx90a" if arch == "gfx90a" else "gfx940")
    P = ins.per_lane
    if K is None or K % ins.k:
        raise _HipGemmError(f"T.gemm K={K} with MFMA {ins.shape}: K must be a multiple of {ins.k}", op.span,
                            f"use block_K % {ins.k} == 0")  # fmt: skip
    if B.buffer.scope not in SHARED_SCOPES:
        raise _HipGemmError("T.gemm operand B in registers", op.span, "stage B through shared memory")
    a_regs = A.buffer.scope in FRAGMENT_SCOPES
    if not a_regs and A.buffer.scope not in SHARED_SCOPES:
        raise _HipGemmError("T.gemm operand A must be in shared memory or a fragment", op.span)
    if a_regs and (ins.k != BLOCK or mfma_grid_of(tc.fragment(A.buffer)) != (grid[0], 1)):
        raise _HipGemmError(f"T.gemm register A operand `{A.buffer.name}` of {A.buffer.dtype}: only float16 / "
                            "bfloat16 A in the MFMA accumulator layout", op.span, "stage A through shared memory")  # fmt: skip
    gm, gn = grid
    R, Cb, Ks = M // BLOCK // gm, N // BLOCK // gn, K // ins.k
    tx = tc.tx
    wave, lane = binary("floordiv", tx, WAVE), binary("floormod", tx, WAVE)
    wm, wn = binary("floordiv", wave, gn), binary("floormod", wave, gn)
    row16, kgrp = binary("floormod", lane, BLOCK), binary("mul", binary("floordiv", lane, BLOCK), P)
    creg = tc.reg(cb)
    a_frag = Buffer("mfma_a", (IntImm(R * P),), A.buffer.dtype, "local")
    b_frag = Buffer("mfma_b", (IntImm(Cb * P),), B.buffer.dtype, "local")
    kk, r, c, e = Var("mk", int32), Var("mr", int32), Var("mc", int32), Var("me", int32)
    k_of = binary("add", binary("add", binary("mul", kk, ins.k), kgrp), e)  # this lane's k of element e

    def lanes(stmt: Stmt) -> Stmt:
        return For(e, IntImm(0), IntImm(P), "unrolled", stmt)

    def over(v: Var, n: int, stmt: Stmt) -> Stmt:
        return For(v, IntImm(0), IntImm(n), "unrolled", stmt)

    m_of = binary("add", binary("mul", binary("add", binary("mul", wm, R), r), BLOCK), row16)
    n_of = binary("add", binary("mul", binary("add", binary("mul", wn, Cb), c), BLOCK), row16)
    if a_regs:  # the accumulator map over (M, K): register (r Ks + kk) * 4 + e
        areg = tc.reg(A.buffer)
        a_val = BufferLoad(areg, (binary("add", binary("mul", binary("add", binary("mul", r, Ks), kk), 4), e),),
                           A.buffer.dtype)  # fmt: skip
    else:
        a_val = operand_element(A, op, "A", m_of, k_of)
    b_val = operand_element(B, op, "B", k_of, n_of)
    slot_a = (binary("add", binary("mul", r, P), e),)
    slot_b = (binary("add", binary("mul", c, P), e),)
    c_off = binary("mul", binary("add", binary("mul", r, Cb), c), 4)
    narrow = cb.dtype.element_of().base == "float16"  # float16 C: each instruction accumulates in float32
    acc = Buffer("mfma_acc", (IntImm(4),), DataType("float32"), "local") if narrow else creg
    mfma = Evaluate(Call(MFMA_OP, (StringImm(ins.name), address_of(acc, (IntImm(0) if narrow else c_off,)),
                                   address_of(b_frag, (binary("mul", c, P),)),
                                   address_of(a_frag, (binary("mul", r, P),))), int32))  # fmt: skip
    if narrow:  # C widened before and rounded after every instruction (as mma.sync's f16 accumulate)
        q = Var("mq", int32)
        at = (binary("add", c_off, q),)
        mfma = seq(
            For(
                q,
                IntImm(0),
                IntImm(4),
                "unrolled",
                BufferStore(acc, (q,), cast(BufferLoad(creg, at, cb.dtype), acc.dtype)),
            ),
            mfma,
            For(
                q,
                IntImm(0),
                IntImm(4),
                "unrolled",
                BufferStore(creg, at, cast(BufferLoad(acc, (q,), acc.dtype), cb.dtype)),
            ),
        )
    k_body = seq(
        over(r, R, lanes(BufferStore(a_frag, slot_a, a_val))),
        over(c, Cb, lanes(BufferStore(b_frag, slot_b, b_val))),
        over(r, R, over(c, Cb, mfma)),
    )
    stmts = [Allocate(a_frag), Allocate(b_frag)] + ([Allocate(acc)] if narrow else [])
    if op.clear_accum:
        z = Var("mz", int32)
        stmts.append(For(z, IntImm(0), IntImm(R * Cb * 4), "unrolled", BufferStore(creg, (z,), _zero(cb.dtype))))
    stmts.append(For(kk, IntImm(0), IntImm(Ks), "serial" if Ks > 8 else "unrolled", k_body))
    return seq(*stmts)


def _zero(dt):
    return cast(IntImm(0), dt)
