"""AMD MFMA 16x16 instructions as wave-level operations, from AMD's published register tables
(CDNA2 / CDNA3 ISA "Matrix fused multiply-add", and AMD's matrix instruction calculator
`--register-layout` output), restated here independently of `tilelang.layout.mfma`.

One instruction computes D = A x B + C for one wave of 64 lanes, A 16 x K, B K x 16, C and D
16 x 16. Each lane holds P = K / 4 elements of A and of B (its source registers, packed low half
first) and 4 of C / D (its accumulator registers):

    A[i][k]   lane i + 16 (k // P), element k % P     (calculator: A[0][1] -> v0{0}.[31:16],
    B[k][j]   lane j + 16 (k // P), element k % P      A[0][4] -> v0{16}.[15:0] for 16x16x16f16)
    C[i][j]   lane j + 16 (i // 4), element i % 4

The products are exact and summed in float64, then rounded once to float32 (int8 forms: exact
in integers, wrapped to int32); the hardware's order of the float32 additions is not modelled,
which the tests' tolerances absorb.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from .core import SimError, _round

WAVE = 64
BLOCK = 16


@dataclass(frozen=True)
class Mfma:
    name: str  # as in the `hip.mfma` call of the lowered IR and tl_hip/mfma.h
    k: int
    operand: str  # dtype of A and B
    accumulator: str  # dtype of C and D

    @property
    def per_lane(self) -> int:
        return self.k // 4


INSTRUCTIONS = {
    m.name: m
    for m in (
        Mfma("f32_16x16x16f16", 16, "float16", "float32"),  # v_mfma_f32_16x16x16f16 (gfx90a), _16x16x16_f16 (gfx940)
        Mfma("f32_16x16x16bf16_1k", 16, "bfloat16", "float32"),  # v_mfma_f32_16x16x16bf16_1k
        Mfma("f32_16x16x4f32", 4, "float32", "float32"),  # v_mfma_f32_16x16x4f32
        Mfma("i32_16x16x16i8", 16, "int8", "int32"),  # v_mfma_i32_16x16x16i8 (gfx90a only)
        Mfma("i32_16x16x32_i8", 32, "int8", "int32"),  # v_mfma_i32_16x16x32_i8 (gfx940 / gfx942)
    )
}


def a_slot(ins: Mfma, i: int, k: int) -> tuple:
    """(lane, element) of A[i][k]."""
    return i + BLOCK * (k // ins.per_lane), k % ins.per_lane


def b_slot(ins: Mfma, k: int, j: int) -> tuple:
    """(lane, element) of B[k][j]."""
    return j + BLOCK * (k // ins.per_lane), k % ins.per_lane


def c_slot(i: int, j: int) -> tuple:
    """(lane, element) of C[i][j] and D[i][j]."""
    return j + BLOCK * (i // 4), i % 4


@functools.cache
def _tables(ins: Mfma) -> tuple:
    """(lane, element) of every A[i][k], B[k][j], C[i][j], as row-major nested tuples."""
    ta = tuple(tuple(a_slot(ins, i, k) for k in range(ins.k)) for i in range(BLOCK))
    tb = tuple(tuple(b_slot(ins, k, j) for j in range(BLOCK)) for k in range(ins.k))
    tc = tuple(tuple(c_slot(i, j) for j in range(BLOCK)) for i in range(BLOCK))
    return ta, tb, tc


def instruction(name: str) -> Mfma:
    try:
        return INSTRUCTIONS[name]
    except KeyError:
        raise SimError(f"no MFMA instruction {name} in the simulator ({', '.join(INSTRUCTIONS)})") from None


def mfma(name: str, a: list, b: list, c: list) -> list:
    """One instruction over a wave: a[lane], b[lane] the P source elements, c[lane] the 4
    accumulator elements of each of the 64 lanes; returns d[lane] (4 elements each)."""
    ins = instruction(name)
    if not len(a) == len(b) == len(c) == WAVE:
        raise SimError(f"MFMA {name}: a wave has {WAVE} lanes, got {len(a)}, {len(b)}, {len(c)}")
    for what, regs in (("A", a), ("B", b), ("C", c)):
        for lane, vals in enumerate(regs):
            if None in vals:
                raise SimError(f"MFMA {name} reads an unwritten {what} register of lane {lane}")
    ta, tb, tc = _tables(ins)
    A = [[a[lane][e] for lane, e in row] for row in ta]
    B = [[b[lane][e] for lane, e in row] for row in tb]
    C = [[c[lane][e] for lane, e in row] for row in tc]
    # exact for integers below 2^53, which the int8 forms' sums are
    f64 = torch.float64
    D = (torch.tensor(A, dtype=f64) @ torch.tensor(B, dtype=f64) + torch.tensor(C, dtype=f64)).tolist()
    rnd = _round(ins.accumulator)
    to_int = ins.accumulator == "int32"
    d = [[None] * 4 for _ in range(WAVE)]
    for drow, row in zip(D, tc):
        for v, (lane, e) in zip(drow, row):
            d[lane][e] = rnd(int(v) if to_int else v)
    return d


def wave_rendezvous(events: list, threads: int) -> list:
    """Every thread of the block at one `hip.mfma` (acc, src0, src1): one instruction per wave."""
    if threads % WAVE:
        raise SimError(f"MFMA in a block of {threads} threads: not whole waves of {WAVE}")
    names = {e[1] for e in events}
    if len(names) != 1:
        raise SimError(f"the threads of a block issue different MFMA instructions: {sorted(names)}")
    ins = instruction(events[0][1])
    P = ins.per_lane
    for w in range(threads // WAVE):
        lanes = events[w * WAVE : (w + 1) * WAVE]
        a = [lst[i : i + P] for (_, _, _, (lst, i), _) in lanes]
        b = [lst[i : i + P] for (_, _, _, _, (lst, i)) in lanes]
        c = [lst[i : i + 4] for (_, _, (lst, i), _, _) in lanes]
        d = mfma(ins.name, a, b, c)
        for (_, _, (lst, i), _, _), vals in zip(lanes, d):
            lst[i : i + 4] = vals
    return [None] * threads
