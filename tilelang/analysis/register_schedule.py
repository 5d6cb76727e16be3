"""What ptxas schedules across a K loop nvcc fully unrolls, for the register model
(`register_model.py`): values of later code it computes or loads ahead, through the gemms.

Requires: the points of `register_model._Scan` (its `unrolled_k_loops`: for every serial loop
with a gemm and at most `NVCC_FULL_UNROLL_TRIPS` iterations, its last point, its 16/8-bit
mma.sync points, its wgmma points and the words its copies stage through registers) and its
`guarded_stores`. Guarantees: each term is added to the transient values of the gemm points it
overlaps, and is a property of the IR (the loop's trip count, its copies, the epilogue's
guards) measured with nvcc 13 by varying one generated source.
"""

from __future__ import annotations

from typing import Any

from ..ir.expr import BufferLoad, Call, StringImm, StructuralKey, Var, const_int
from ..ir.node import Node, child_fields
from ..ir.stmt import BufferStore, Evaluate, For, Stmt, While
from .register_templates import pointer_buffer, staged_words

# memory words a straight-line run keeps in flight at most (register_model.LOAD_BATCH)
STAGED_IN_FLIGHT = 20
# a global access with a run-time stride inside a rolled loop, per unrolled instance, kept in
# registers from before the loop (`wide_address_words`): its 64-bit loop-invariant address (2) and
# its row bound's predicate (1) ...
WIDE_ADDRESS_WORDS = 3
# ... and where its row (the index the run-time stride multiplies) does not change with the loop,
# only its column does, ptxas also keeps a 64-bit pointer per instance that it advances each
# iteration (2) beside the row's base. Measured (nvcc 13, sm_80, seed.matmul_dynamic with only one
# of its in-loop fallback copies left in its generated source, the other's vector path forced):
# 16 instances of A[row(c), k_1 * 32 + col] add 91 registers, 16 of B[k_1 * 32 + row(c), col] 52
INVARIANT_ROW_ADDRESS_WORDS = 5


def staged_copy_words(body: Any, reg_arrays: dict) -> int:
    """Words one iteration of a loop body stages through registers: its copy templates from
    global to shared memory that are not cp.async (`tl::copy_vec_pred<16>`: 4 words), times the
    constant trip counts of the loops around them inside the body."""
    total = 0

    def walk(s: Any, mult: int) -> None:
        nonlocal total
        if isinstance(s, For):
            ext = const_int(s.extent)
            if ext is not None:
                walk(s.body, mult * ext)
            return  # a run-time trip count: nothing is issued ahead of it
        if isinstance(s, Evaluate) and isinstance(s.value, Call):
            c = s.value
            if c.args and isinstance(c.args[0], StringImm) and len(c.args) > 2:
                n = staged_words(c.args[0].value)
                if n and pointer_buffer(c.args[1]) not in reg_arrays and pointer_buffer(c.args[2]) not in reg_arrays:
                    total += n * mult
            return
        if isinstance(s, Node):
            for name in child_fields(type(s)):
                v = getattr(s, name)
                for x in v if isinstance(v, (tuple, list)) else (v,):
                    if isinstance(x, Node):
                        walk(x, mult)

    walk(body, 1)
    return total


def hoist_into_unrolled_k_loops(scan: Any) -> None:
    """Two terms for a K loop nvcc fully unrolls (it is straight-line code up to the epilogue):

    - the epilogue's bounds guards: ptxas computes them early — they depend on the block and
      thread indices only — keeping one register per guarded store live through the 16/8-bit
      mma.sync gemms (the operand loads of the next K-step are what it schedules them between).
      Measured (nvcc 13, sm_80): seed.matmul holds 101 registers with its 32 guarded stores, 64
      without the guards, 70 with `#pragma unroll 1` on the K loop, guards or not. tf32 gemms
      (whose scalar operand loads already peak above it) and wgmma do not (for seed.matmul_splitk
      at sm_90a removing its 32 guards changes nothing: 74 registers either way);
    - at a wgmma, the next iteration's copies staged through registers (`tl::copy_vec_pred`, not
      cp.async): their global loads are issued ahead, over the barrier, under the current
      iteration's gemm, whose operands are read from shared memory by the tensor cores and hold
      no registers. Measured (nvcc 13): seed.matmul_splitk's two-iteration K loop with 16 staged
      words per iteration holds 74 registers at sm_90a (wgmma), 58 with `#pragma unroll 1`; at
      sm_80 (mma.sync) 67, 72 with `#pragma unroll 1`: there the next K-step's operand fragments,
      counted by the gemm template's double buffer, are what ptxas schedules under the mmas."""
    for last, mma_points, wgmma_points, staged in scan.unrolled_k_loops:
        guards = sum(1 for i in scan.guarded_stores if i > last)
        for i in mma_points:
            scan.points[i].transient += guards
        for i in wgmma_points:
            scan.points[i].transient += min(STAGED_IN_FLIGHT, staged)


def wide_address_words(body: Any, loop_var: Var | None) -> int:
    """Registers of the 64-bit addresses a rolled loop's body (over `loop_var`) keeps from one
    iteration to the next: every global access with a 64-bit index (a dynamic stride:
    `(int64_t)row * k`) in an unrolled nest is a distinct address per instance; its
    loop-invariant part (the row times the stride, the tensor base) is computed once before the
    loop and held through it (WIDE_ADDRESS_WORDS; INVARIANT_ROW_ADDRESS_WORDS when the row does
    not depend on `loop_var`). 32-bit indices with constant strides fold into the instruction's
    immediate offset instead."""
    from ..ir.visitor import collect
    from .register_model import _unrolled

    def wide(ld: BufferLoad) -> bool:
        # a stride read at run time: the code generator computes the index in 64 bits
        return ld.buffer.scope == "global" and any(const_int(d) is None for d in ld.buffer.shape[1:])

    def row_moves(ld: BufferLoad) -> bool:
        return loop_var is None or any(collect(i, lambda n: n is loop_var) for i in ld.indices[:-1])

    total = 0

    def walk(s: Any, mult: int) -> None:
        nonlocal total
        if isinstance(s, For) and _unrolled(s):
            walk(s.body, mult * const_int(s.extent))
        elif isinstance(s, (For, While)):
            return  # an inner rolled loop keeps its own
        elif isinstance(s, (BufferStore, Evaluate)):
            loads = {StructuralKey(ld): ld for ld in collect(s, lambda n: isinstance(n, BufferLoad) and wide(n))}
            for ld in loads.values():
                total += mult * (WIDE_ADDRESS_WORDS if row_moves(ld) else INVARIANT_ROW_ADDRESS_WORDS)
        elif isinstance(s, Node):
            for name in child_fields(type(s)):
                v = getattr(s, name)
                for x in v if isinstance(v, (tuple, list)) else (v,):
                    if isinstance(x, Stmt):
                        walk(x, mult)

    walk(body, 1)
    return total
