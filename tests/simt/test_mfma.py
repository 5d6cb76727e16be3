"""The MFMA wave operations of the simulator against torch: random A, B, C scattered into the 64
lanes' registers by AMD's tables, one instruction, D gathered back and compared with A @ B + C."""

from __future__ import annotations

import pytest
import torch

from simt.core import SimError
from simt.mfma import BLOCK, INSTRUCTIONS, WAVE, a_slot, b_slot, c_slot, mfma

torch.manual_seed(0)


def _operands(ins, gen):
    if ins.operand == "int8":
        A = torch.randint(-128, 128, (BLOCK, ins.k), generator=gen)
        B = torch.randint(-128, 128, (ins.k, BLOCK), generator=gen)
        C = torch.randint(-(2**20), 2**20, (BLOCK, BLOCK), generator=gen)
        return A.long(), B.long(), C.long()
    dt = getattr(torch, ins.operand)
    A = torch.randn(BLOCK, ins.k, generator=gen).to(dt).double()
    B = torch.randn(ins.k, BLOCK, generator=gen).to(dt).double()
    C = torch.randn(BLOCK, BLOCK, generator=gen).float().double()
    return A, B, C


def _scatter(ins, A, B, C):
    P = ins.per_lane
    a = [[None] * P for _ in range(WAVE)]
    b = [[None] * P for _ in range(WAVE)]
    c = [[None] * 4 for _ in range(WAVE)]
    for i in range(BLOCK):
        for k in range(ins.k):
            lane, e = a_slot(ins, i, k)
            a[lane][e] = A[i, k].item()
            lane, e = b_slot(ins, k, i)
            b[lane][e] = B[k, i].item()
        for j in range(BLOCK):
            lane, e = c_slot(i, j)
            c[lane][e] = C[i, j].item()
    return a, b, c


@pytest.mark.parametrize("name", sorted(INSTRUCTIONS))
def test_one_instruction_matches_torch(name):
    ins = INSTRUCTIONS[name]
    gen = torch.Generator().manual_seed(len(name))
    A, B, C = _operands(ins, gen)
    d = mfma(name, *_scatter(ins, A, B, C))
    D = torch.empty(BLOCK, BLOCK, dtype=torch.float64)
    for i in range(BLOCK):
        for j in range(BLOCK):
            lane, e = c_slot(i, j)
            D[i, j] = d[lane][e]
    if ins.accumulator == "int32":
        assert torch.equal(D.long(), A @ B + C)
    else:
        torch.testing.assert_close(D, (A @ B + C).float().double(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", sorted(INSTRUCTIONS))
def test_every_register_holds_one_element(name):
    """The tables are bijections: 64 lanes x P source elements per operand, 64 x 4 results."""
    ins = INSTRUCTIONS[name]
    a = {a_slot(ins, i, k) for i in range(BLOCK) for k in range(ins.k)}
    b = {b_slot(ins, k, j) for k in range(ins.k) for j in range(BLOCK)}
    c = {c_slot(i, j) for i in range(BLOCK) for j in range(BLOCK)}
    regs = {(lane, e) for lane in range(WAVE) for e in range(ins.per_lane)}
    assert a == regs and b == regs
    assert c == {(lane, e) for lane in range(WAVE) for e in range(4)}


def test_entries_of_the_published_tables():
    """Entries AMD's matrix instruction calculator prints (`--get-register`)."""
    f16 = INSTRUCTIONS["f32_16x16x16f16"]
    assert a_slot(f16, 0, 1) == (0, 1)  # A[0][1]: v0{0}.[31:16]
    assert a_slot(f16, 0, 2) == (0, 2)  # A[0][2]: v1{0}.[15:0]
    assert a_slot(f16, 0, 4) == (16, 0)  # A[0][4]: v0{16}.[15:0]
    assert a_slot(f16, 5, 15) == (53, 3)  # A[5][15]: v1{53}.[31:16]
    assert b_slot(f16, 9, 3) == (35, 1)  # B[9][3]: v0{35}.[31:16]
    assert c_slot(6, 2) == (18, 2)  # D[6][2]: v2{18}
    f32 = INSTRUCTIONS["f32_16x16x4f32"]
    assert a_slot(f32, 7, 3) == (55, 0)  # A[7][3]: v0{55}
    i8 = INSTRUCTIONS["i32_16x16x32_i8"]
    assert a_slot(i8, 1, 9) == (17, 1)  # A[1][9]: v0{17}.[15:8]


def test_an_unwritten_register_is_an_error():
    ins = INSTRUCTIONS["f32_16x16x16f16"]
    a, b, c = _scatter(ins, *_operands(ins, torch.Generator().manual_seed(1)))
    b[40][2] = None
    with pytest.raises(SimError, match="unwritten B register of lane 40"):
        mfma(ins.name, a, b, c)
