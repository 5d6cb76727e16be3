"""`from tilelang import tvm`, the idiom public TileLang 0.1.x programs use for dtypes,
constants and targets — over our own IR, with no TVM installed:

- `tvm.DataType(...)`: `.bits` / `.lanes` / `.itemsize` sizing tiles, the `is_float8`-style
  predicates as attributes and called, accepted wherever a dtype is;
- `tvm.tir.const` / `tvm.tirx.const` inside kernels (CPU backend vs torch);
- `tvm.target.Target(...)` as `target=`, `isinstance`, and its nvcc builds;
- any other name: `unsupported: tilelang.tvm.<name>` at the line that asks for it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import tilelang
import tilelang.language as T
from conformance.util import CUDA_ARCHS
from tilelang import tvm
from tilelang.errors import TileLangError


def test_both_import_spellings_give_the_module():
    import tilelang.tvm as tvm2

    assert tvm2 is tvm and tilelang.tvm is tvm


def test_no_tvm_is_imported_and_import_tilelang_stays_lean():
    code = "import sys, tilelang; assert 'tilelang.tvm' not in sys.modules; from tilelang import tvm; tvm.DataType('int8'); assert 'tvm' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize(
    "name,bits,lanes,itemsize,fp8,flt",
    [("float16", 16, 1, 2, False, True), ("float8_e4m3fn", 8, 1, 1, True, True), ("int8x4", 8, 4, 4, False, False)],
)
def test_datatype_attributes(name, bits, lanes, itemsize, fp8, flt):
    d = tvm.DataType(name)
    assert (d.bits, d.lanes, d.itemsize) == (bits, lanes, itemsize)
    assert bool(d.is_float8) is fp8 and d.is_float8() is fp8
    assert d.is_float() is flt and bool(d.is_float) is flt
    assert d == name and str(d) == name and isinstance(d, str)
    assert tvm.DataType(d) == d and tvm.DataType(T.dtype(name)) == d


def test_datatype_from_torch_and_python_types():
    assert tvm.DataType(torch.bfloat16) == "bfloat16" and tvm.DataType(float) == "float32"
    assert tvm.DataType("float16").as_torch() is torch.float16
    assert tvm.DataType("float32").with_lanes(4) == "float32x4"


@tilelang.jit(out_idx=[-1])
def scaled_copy(M, N, dtype="float16", vec_bytes=16, threads=128):
    """Tile width from the dtype's width, the way public kernels size their vectors."""
    block_N = vec_bytes * 8 // tvm.DataType(dtype).bits * 4
    scale = tvm.tir.const(0.5, dtype)
    bias = tvm.tirx.const(3, "int32")

    @T.prim_func
    def main(A: T.Tensor((M, N), tvm.DataType(dtype)), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), M, threads=threads) as (bx, by):
            tile = T.alloc_shared((block_N,), tvm.DataType(dtype))
            T.copy(A[by, bx * block_N], tile)
            for j in T.Parallel(block_N):
                tile[j] = tile[j] * scale + T.cast(bias, dtype)
            T.copy(tile, B[by, bx * block_N])

    return main


@pytest.mark.parametrize("dtype,M,N", [("float16", 7, 99), ("float32", 5, 131)])
def test_dtype_and_consts_in_a_kernel(dtype, M, N):
    a = torch.randn(M, N).to(getattr(torch, dtype))
    b = scaled_copy(M, N, dtype)(a)
    torch.testing.assert_close(b.float(), a.float() * 0.5 + 3, atol=1e-2 if dtype == "float16" else 1e-6, rtol=1e-3)


def test_const_defaults_and_types():
    c = tvm.tir.const(7)
    assert c.dtype == "int32" and c.value == 7
    f = tvm.tir.const(1.5)
    assert f.dtype == "float32" and f.value == 1.5
    assert tvm.tir.const(True).dtype == "bool"
    assert tvm.tirx.const(2, "float16").dtype == "float16"


def test_target_constructor():
    t = tvm.target.Target("cuda -arch=sm_80")
    assert isinstance(t, tvm.target.Target) and isinstance(t, tilelang.Target)
    assert (t.kind, t.arch) == ("cuda", "sm_80")
    assert tvm.target.Target({"kind": "cuda", "arch": "sm_90a"}).arch == "sm_90a"
    assert tvm.target.Target("c", host="llvm").kind == "c"
    with pytest.raises(TileLangError, match="host code here is always C"):
        tvm.target.Target("cuda", host="cuda")


def test_target_as_jit_target():
    M, N = 3, 70
    k = scaled_copy.compile(M, N, "float32", target=tvm.target.Target("c"))
    a = torch.randn(M, N)
    torch.testing.assert_close(k(a), a * 0.5 + 3)


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_target_object_for_nvcc_builds(arch):
    from tilelang.backend.target import nvcc_path

    if nvcc_path() is None:
        pytest.skip("nvcc not found")
    art = tilelang.lower(scaled_copy.get_tir(9, 77), target=tvm.target.Target(f"cuda -arch={arch}"))
    assert art.kernel_source and "main_kernel" in art.kernel_source


@pytest.mark.parametrize(
    "get,what",
    [
        (lambda: tvm.relay, "tilelang.tvm.relay"),
        (lambda: tvm.tir.Var, "tilelang.tvm.tir.Var"),
        (lambda: tvm.tirx.PrimFunc, "tilelang.tvm.tirx.PrimFunc"),
        (lambda: tvm.target.cuda, "tilelang.tvm.target.cuda"),
        (lambda: tvm.target.Target.current, "tilelang.tvm.target.Target.current"),
        (lambda: tvm.DataType("int8").code, "tilelang.tvm.DataType.code"),
    ],
)
def test_other_names_are_unsupported_at_their_line(get, what):
    with pytest.raises(TileLangError) as ei:
        get()
    err = ei.value
    assert err.kind == "unsupported" and what in str(err) and "has no TVM" in str(err)
    assert err.span.file == __file__ and err.span.line > 0
    assert isinstance(err, AttributeError)
    assert not hasattr(tvm, "nd")
