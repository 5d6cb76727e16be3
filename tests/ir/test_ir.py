import pytest

from tilelang.errors import DSLError
from tilelang.ir import (
    BinaryOp,
    Cast,
    FloatImm,
    For,
    IntImm,
    PrimFunc,
    Var,
    make_buffer,
    seq,
    structural_equal,
    structural_hash,
)
from tilelang.ir.dtype import DataType, bfloat16, float16, float32, int32, int64
from tilelang.ir.stmt import BufferStore, Evaluate


def test_dtype_aliases_and_torch():
    import torch

    assert DataType("float") is float32
    assert DataType("half") is float16
    assert DataType(torch.bfloat16) is bfloat16
    assert float16.as_torch() is torch.float16
    assert DataType("float16x2").lanes == 2 and DataType("float16x2").bits == 16
    assert float16 == "float16" and float16.bytes == 2
    with pytest.raises(TypeError):
        DataType("float7")


def test_operators_build_ir_and_fold_constants():
    i = Var("i")
    e = i * 2 + 1
    assert isinstance(e, BinaryOp) and e.dtype is int32
    assert isinstance(IntImm(3) * 4, IntImm) and (IntImm(3) * 4).value == 12
    assert (i + 0) is i and (i * 1) is i
    c = i < 4
    assert c.dtype.is_bool
    with pytest.raises(DSLError, match="Python bool"):
        bool(c)


def test_promotion_inserts_casts():
    x = Var("x", float16)
    y = Var("y", float32)
    e = x + y
    assert e.dtype is float32 and isinstance(e.a, Cast)
    # a Python float next to a half value stays half
    assert (x * 0.5).dtype is float16
    assert (Var("n", int64) + Var("m")).dtype is int64
    assert isinstance(FloatImm(1.0) + 2, FloatImm)


def test_buffer_indexing_and_regions():
    M = Var("M")
    A = make_buffer("A", (M, 64), "float16")
    load = A[1, 2]
    assert load.dtype is float16 and len(load.indices) == 2
    r = A[0:8, :]
    assert [str(e) for e in r.extents] == ["8", "64"]
    with pytest.raises(DSLError, match="2 dimension"):
        A[1]


def test_printer_disambiguates_names_and_is_deterministic():
    A = make_buffer("A", (16,), "float32")
    i1, i2 = Var("i"), Var("i")
    body = seq(
        For(i1, IntImm(0), IntImm(16), "parallel", BufferStore(A, (i1,), FloatImm(1.0))),
        For(i2, IntImm(0), IntImm(16), "serial", Evaluate(A[i2])),
    )
    f = PrimFunc("k", (A,), body)
    text = f.script()
    assert "for i in T.Parallel(16)" in text and "for i_1 in T.serial(16)" in text
    assert text == f.script()


def test_structural_equality():
    i = Var("i")
    assert structural_equal(i * 2 + 1, i * 2 + 1)
    assert not structural_equal(i * 2 + 1, i * 3 + 1)
    assert structural_hash(i + 1) == structural_hash(i + 1)
    assert not structural_equal(Var("i"), Var("i"))
