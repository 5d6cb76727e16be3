"""Register layouts of `T.gemm` tiles on AMD MFMA 16x16 instructions (backend/hip/gemm.py).

The instructions (AMD CDNA2 / CDNA3 ISA, "matrix fused multiply-add", and AMD's matrix
instruction calculator) compute D = A_i x B_i + C for one wave of 64 lanes, A_i 16 x K_i,
B_i K_i x 16, with P = K_i / 4 elements of A_i and of B_i per lane and 4 of D:

    A_i[i][k]  in lane i + 16 * (k // P), element k % P
    B_i[k][j]  in lane j + 16 * (k // P), element k % P
    D[i][j]    in lane j + 16 * (i // 4), element i % 4

The gemm issues every instruction transposed — A_i = B^T, B_i = A^T, so D = C^T — because then
the accumulator and a register A operand (FlashAttention's P) have the same map:

    C[m][n]  in lane m % 16 + 16 * ((n % 16) // 4), element n % 4
    A[m][k]  in lane m % 16 + 16 * ((k % 16) // 4), element k % 4   (K_i = 16 forms)

and one gemm's accumulator, converted element by element, is the next gemm's A operand.

The tile is cut into 16x16 blocks; wave (wm, wn) of a gm x gn grid owns block rows
[wm R, (wm + 1) R) and block columns [wn Cb, (wn + 1) Cb) (R = M/16/gm, Cb = N/16/gn); a lane's
4 elements of block (r, c) of its wave are its registers 4 (r Cb + c) .. 4 (r Cb + c) + 3."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..ir.dtype import DataType
from ..ir.expr import Var, binary
from .fragment import Fragment
from .gemm import gemm_warp_partition

WAVE = 64
BLOCK = 16


@dataclass(frozen=True)
class MfmaInstruction:
    name: str  # as `tl::mfma_<name>` of tl_hip/mfma.h and the `hip.mfma` call names it
    builtin: str  # the clang builtin the header calls
    k: int  # K_i
    per_lane: int  # P: elements of A_i / B_i per lane

    @property
    def shape(self) -> str:
        return f"16x16x{self.k}"


_F16 = MfmaInstruction("f32_16x16x16f16", "__builtin_amdgcn_mfma_f32_16x16x16f16", 16, 4)
_BF16 = MfmaInstruction("f32_16x16x16bf16_1k", "__builtin_amdgcn_mfma_f32_16x16x16bf16_1k", 16, 4)
_F32 = MfmaInstruction("f32_16x16x4f32", "__builtin_amdgcn_mfma_f32_16x16x4f32", 4, 1)
_I8_CDNA2 = MfmaInstruction("i32_16x16x16i8", "__builtin_amdgcn_mfma_i32_16x16x16i8", 16, 4)
_I8_CDNA3 = MfmaInstruction("i32_16x16x32_i8", "__builtin_amdgcn_mfma_i32_16x16x32_i8", 32, 8)
INSTRUCTIONS = (_F16, _BF16, _F32, _I8_CDNA2, _I8_CDNA3)


def mfma_instruction(dtype: Any, arch: str) -> MfmaInstruction:
    """The 16x16 MFMA for operands of `dtype` on `arch` (gfx90a / gfx94x); ValueError otherwise."""
    base = DataType(dtype).element_of().base
    if base == "float16":
        return _F16
    if base == "bfloat16":
        return _BF16
    if base == "float32":
        return _F32
    if base == "int8":
        return _I8_CDNA2 if arch == "gfx90a" else _I8_CDNA3
    raise ValueError(f"no 16x16 MFMA form for {base} operands here (float16, bfloat16, float32, int8)")


def mfma_grid(block_m: int, block_n: int, waves: int, policy: Any = "Square", rows_only: bool = False) -> tuple:
    """(gm, gn) waves over an M x N tile of 16x16 blocks, by the gemm's warp policy (the CUDA
    path's policies, over waves of 64). `rows_only`: a register A operand, whose rows a wave
    must hold whole (gn = 1). ValueError when the blocks cannot be shared out evenly."""
    gm, gn = gemm_warp_partition(block_m, block_n, waves, "FullRow" if rows_only else policy, BLOCK, BLOCK,
                                 unit="wave")  # fmt: skip
    if rows_only and gn != 1:
        raise ValueError(f"a register A operand needs every wave on whole rows; {waves} waves cannot split "
                         f"the {block_m} rows of the tile in 16-row blocks")  # fmt: skip
    return gm, gn


def make_mfma_fragment(rows: int, cols: int, grid: tuple, dtype: Any = "float32", what: str = "accumulator",
                       instruction: str = "") -> Fragment:  # fmt: skip
    """The `rows` x `cols` tile over wave grid `grid` = (gm, gn) (module doc)."""
    DataType(dtype)
    gm, gn = grid
    R, Cb = rows // BLOCK // gm, cols // BLOCK // gn
    i, j = Var("i"), Var("j")
    tm, tn = binary("floordiv", i, BLOCK), binary("floordiv", j, BLOCK)
    lane = binary("add", binary("floormod", i, BLOCK),
                  binary("mul", binary("floordiv", binary("floormod", j, BLOCK), 4), BLOCK))  # fmt: skip
    wave = binary("add", binary("mul", binary("floordiv", tm, R), gn), binary("floordiv", tn, Cb))
    thread = binary("add", binary("mul", wave, WAVE), lane)
    block = binary("add", binary("mul", binary("floormod", tm, R), Cb), binary("floormod", tn, Cb))
    local = binary("add", binary("mul", block, 4), binary("floormod", j, 4))
    meta = {"origin": f"mfma 16x16 {what}", "mfma_grid": (gm, gn), "mfma": instruction}
    return Fragment.from_exprs((rows, cols), (i, j), thread, (local,), meta=meta)


def mfma_grid_of(layout: Any) -> tuple | None:
    """The wave grid recorded on an MFMA fragment (None: another layout)."""
    meta = getattr(layout, "meta", None) or {}
    return meta.get("mfma_grid")


def operand_slot(lane: int, e: int, per_lane: int) -> tuple:
    """(row, k) of instruction operand A_i held by `lane` at element `e` (B_i: (k, col) = (k, row))."""
    return lane % BLOCK, per_lane * (lane // BLOCK) + e


def result_slot(lane: int, e: int) -> tuple:
    """(row, col) of instruction result D held by `lane` at element `e`."""
    return 4 * (lane // BLOCK) + e, lane % BLOCK


def mfma_gemm_layouts(g: Any, M: int, N: int, K: int | None, threads: int) -> list:
    """(buffer, layout, why) for the accumulator of gemm `g` — and its A operand when A is a
    fragment — on MFMA with `threads` threads (infer_layout for HIP). A tile the waves cannot
    share out is a `LayoutError` at the gemm."""
    from ..errors import LayoutError

    a_regs = g.A.buffer.scope in ("local.fragment", "local.reducer")
    try:
        if threads % WAVE:
            raise ValueError(f"T.gemm on MFMA needs whole waves of {WAVE} threads: the kernel has {threads}")
        grid = mfma_grid(M, N, threads // WAVE, g.policy, rows_only=a_regs)
        if a_regs and (K is None or K % BLOCK):
            raise ValueError(f"a register A operand needs K a multiple of {BLOCK}, got {K}")
    except ValueError as err:
        raise LayoutError(str(err), g.span) from None
    out = [(g.C.buffer, make_mfma_fragment(M, N, grid, g.C.buffer.dtype),
            f"T.gemm accumulator (MFMA 16x16 blocks, {g.policy})")]  # fmt: skip
    if a_regs:
        out.append((g.A.buffer, make_mfma_fragment(M, K, grid, g.A.buffer.dtype, "operand A"),
                    "T.gemm register operand A (MFMA 16x16 blocks)"))  # fmt: skip
    return out
