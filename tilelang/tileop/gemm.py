"""`T.gemm(A, B, C, transpose_A, transpose_B, policy, clear_accum)`:
`C += op(A) @ op(B)` where op transposes when asked (C is zeroed first with
`clear_accum`). Operands are 2-D tiles (leading unit dims allowed): A is
(M, K) or (K, M), B is (K, N) or (N, K), C is (M, N). `policy` and `k_pack`
only choose a warp arrangement on GPUs; they do not change the result.

Reference ("c") lowering:
- floating-point C: operands are brought to the accumulation type (float32,
  or float64 for a float64 C) — directly when they already are, through a
  converted temporary tile otherwise (fp16·fp16 products are exact in
  float32, so this is what tensor cores compute) — and the tile product is one
  call of the register-blocked micro-kernel `tl_gemm_f32`/`tl_gemm_f64`
  from `tl_cpu.h`. A float16/bfloat16 C is accumulated in float32 and
  rounded back once per T.gemm.
- integer C: a plain loop nest that multiplies and adds in C's dtype.
"""

from __future__ import annotations

from ..errors import VerifyError
from ..ir.buffer import Buffer, BufferRegion
from ..ir.dtype import DataType, float32, float64, int32
from ..ir.expr import BufferLoad, Call, IntImm, Var, as_expr, binary, cast, const_int
from ..ir.stmt import Evaluate, For, Gemm, Stmt, seq
from .base import (
    LowerContext,
    address_of,
    dispatch,
    load,
    loop_nest,
    scalar_var,
    store,
    temp_buffer,
)

# input dtype (kind, bits) -> the accumulator dtypes a T.gemm may use, on every target (a
# backend may support fewer: CUDA has no float64 tensor-core path and says so)
ACCUMULATORS = {
    ("float", 16): ("float32", "float16"),
    ("float", 32): ("float32",),
    ("float", 64): ("float64",),
    ("int", 8): ("int32",),
    ("uint", 8): ("int32",),
    ("float", 8): ("float32",),
    ("int", 4): ("int32",),  # packed int4 / uint4 (mma.sync m16n8k64 s4/u4 on CUDA)
    ("uint", 4): ("int32",),
}


def gemm_dtype_problem(a: DataType, b: DataType, c: DataType) -> tuple[str, str] | None:
    """(what is wrong, how to fix it) for operand dtypes no target computes, else None.
    One rule for every backend, so the CPU rejects exactly what the GPUs reject."""
    if a is not b and not (
        a.bits == 8 and b.bits == 8 or a.bits == 4 and b.bits == 4 and a.is_integer and b.is_integer
    ):
        return f"T.gemm operands must have the same dtype, got {a} and {b}", "cast one operand's tile first"
    ok = ACCUMULATORS.get((a.kind, a.bits), ())
    if not ok:
        return (
            f"T.gemm has no form for {a} inputs",
            "dequantize the tile into a float16 / bfloat16 tile first (a T.Parallel cast), then T.gemm it",
        )
    if str(c) not in ok:
        return (
            f"T.gemm with {a} inputs cannot accumulate in {c}",
            f"use an accumulator of {' or '.join(ok) or 'another dtype'}",
        )
    if str(c) == "float16" and a.base != "float16":
        return "a float16 accumulator needs float16 inputs", "accumulate in float32"
    return None


def matrix_dims(region: BufferRegion, span, what: str) -> tuple[int, int]:
    """The two dims of `region` that form the matrix (its last two; the others
    must have extent 1)."""
    nd = len(region.region)
    if nd < 2 or any(const_int(r.extent) != 1 for r in region.region[: nd - 2]):
        raise VerifyError(
            f"T.gemm operand {what} (`{region.buffer.name}`) must be a 2-D tile, got region {region!r}",
            span,
            "slice a 2-D tile (leading dimensions of extent 1 are allowed)",
        )
    return nd - 2, nd - 1


def tile_mnk(op: Gemm) -> tuple:
    """(M, N, K) of a gemm over tiles: C's last two extents and A's K extent (ints where static)."""
    ad = matrix_dims(op.A, op.span, "A")
    M, N = (const_int(x) for x in op.C.buffer.shape[-2:])
    K = const_int(op.A.region[ad[0] if op.transpose_A else ad[1]].extent)
    return M, N, K


def operand_element(region: BufferRegion, op: Gemm, which: str, row, col) -> BufferLoad:
    """Element (row, col) of op(A) (M×K) or op(B) (K×N), read from the operand's tile region
    (`which` is "A" or "B"; a transposed operand is read at (col, row))."""
    transpose = op.transpose_A if which == "A" else op.transpose_B
    i, j = (col, row) if transpose else (row, col)
    d0, d1 = matrix_dims(region, op.span, which)
    idx = list(region.begins)
    idx[d0] = binary("add", idx[d0], i)
    idx[d1] = binary("add", idx[d1], j)
    return BufferLoad(region.buffer, tuple(idx), region.buffer.dtype)


def row_stride(buf: Buffer):
    """Elements between consecutive rows of the buffer's last two dims, or None
    when the last dim is not contiguous."""
    if buf.strides is not None:
        if const_int(buf.strides[-1]) != 1:
            return None
        return buf.strides[-2]
    return buf.shape[-1]


def _extents(region: BufferRegion, dims: tuple[int, int]) -> tuple:
    return region.region[dims[0]].extent, region.region[dims[1]].extent


def _operand(region: BufferRegion, dims, kdt: DataType, name: str, stmts: list) -> tuple:
    """(pointer, leading dim) of the operand as a `kdt` row-major tile, adding a
    converted temporary to `stmts` when the operand is not already one."""
    buf = region.buffer
    ld = row_stride(buf)
    if buf.dtype is kdt and ld is not None:
        return address_of(buf, region.begins), ld
    rows, cols = _extents(region, dims)
    tmp, alloc = temp_buffer(f"{buf.name}_{kdt}", (rows, cols), kdt, "local")

    def body(iv):
        idx = list(region.begins)
        idx[dims[0]] = binary("add", idx[dims[0]], iv[0])
        idx[dims[1]] = binary("add", idx[dims[1]], iv[1])
        return store(tmp, (iv[0], iv[1]), cast(load(buf, tuple(idx)), kdt))

    stmts.append(alloc)
    stmts.append(loop_nest([rows, cols], body, "parallel"))
    return address_of(tmp, (IntImm(0), IntImm(0))), cols


def _as_i32(e) -> object:
    e = as_expr(e)
    return e if e.dtype is int32 else cast(e, int32)


def lower_c(op: Gemm, lctx: LowerContext) -> Stmt:
    A, B, C = op.A, op.B, op.C
    ad, bd, cd = matrix_dims(A, op.span, "A"), matrix_dims(B, op.span, "B"), matrix_dims(C, op.span, "C")
    a0, a1 = _extents(A, ad)
    b0, b1 = _extents(B, bd)
    M, K = (a1, a0) if op.transpose_A else (a0, a1)
    N = b0 if op.transpose_B else b1
    cdt = C.buffer.dtype
    stmts: list[Stmt] = []
    if op.clear_accum:
        stmts.append(_zero(C, cd))
    if not cdt.is_float:
        stmts.append(_int_loop_nest(op, ad, bd, cd, M, N, K))
        return seq(*stmts)

    kdt = float64 if cdt is float64 else float32
    pa, lda = _operand(A, ad, kdt, "A", stmts)
    pb, ldb = _operand(B, bd, kdt, "B", stmts)
    back: Stmt | None = None
    if cdt is kdt and row_stride(C.buffer) is not None:
        pc, ldc = address_of(C.buffer, C.begins), row_stride(C.buffer)
    else:  # e.g. a float16 accumulator: accumulate in float32, round back once
        pc, ldc = _operand(C, cd, kdt, "C", stmts)
        tmp = pc.args[0].buffer
        rows, cols = _extents(C, cd)

        def back_body(iv):
            idx = list(C.begins)
            idx[cd[0]] = binary("add", idx[cd[0]], iv[0])
            idx[cd[1]] = binary("add", idx[cd[1]], iv[1])
            return store(C.buffer, tuple(idx), cast(load(tmp, (iv[0], iv[1])), cdt))

        back = loop_nest([rows, cols], back_body, "parallel")
    fn = "tl.gemm_f64" if kdt is float64 else "tl.gemm_f32"
    args = (
        _as_i32(M), _as_i32(N), _as_i32(K),
        pa, _as_i32(lda), IntImm(int(op.transpose_A)),
        pb, _as_i32(ldb), IntImm(int(op.transpose_B)),
        pc, _as_i32(ldc),
    )  # fmt: skip
    stmts.append(Evaluate(Call(fn, args, int32)))
    if back is not None:
        stmts.append(back)
    return seq(*stmts)


def _zero(C: BufferRegion, cd) -> Stmt:
    rows, cols = _extents(C, cd)

    def body(iv):
        idx = list(C.begins)
        idx[cd[0]] = binary("add", idx[cd[0]], iv[0])
        idx[cd[1]] = binary("add", idx[cd[1]], iv[1])
        return store(C.buffer, tuple(idx), 0)

    return loop_nest([rows, cols], body, "parallel")


def _int_loop_nest(op: Gemm, ad, bd, cd, M, N, K) -> Stmt:
    A, B, C = op.A, op.B, op.C
    cdt = C.buffer.dtype

    def elem(region: BufferRegion, dims, r, c):
        idx = list(region.begins)
        idx[dims[0]] = binary("add", idx[dims[0]], r)
        idx[dims[1]] = binary("add", idx[dims[1]], c)
        return load(region.buffer, tuple(idx))

    def body(iv):
        i, j = iv
        cidx = list(C.begins)
        cidx[cd[0]] = binary("add", cidx[cd[0]], i)
        cidx[cd[1]] = binary("add", cidx[cd[1]], j)
        acc, alloc = scalar_var("acc", cdt, load(C.buffer, tuple(cidx)))
        k = Var("k", K.dtype if K.dtype.is_integer else int32)
        a = elem(A, ad, k, i) if op.transpose_A else elem(A, ad, i, k)
        b = elem(B, bd, j, k) if op.transpose_B else elem(B, bd, k, j)
        upd = store(
            acc, (IntImm(0),), binary("add", load(acc, (IntImm(0),)), binary("mul", cast(a, cdt), cast(b, cdt)))
        )
        inner = For(k, IntImm(0, k.dtype), K, "serial", upd)
        return seq(alloc, inner, store(C.buffer, tuple(cidx), load(acc, (IntImm(0),))))

    return loop_nest([M, N], body, "parallel")


RULES = {"c": lower_c}


def lower(op: Gemm, lctx: LowerContext) -> Stmt:
    return dispatch(RULES, op, lctx)
