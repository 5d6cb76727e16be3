"""GPU twin of tests/reliability/test_index64.py: kernels beyond 2^31 elements on CUDA.

Static and dynamic (`T.dynamic(..., "int64")`) vector adds of 2^31 + 256 elements (int8 and
float16), a 2-D elementwise kernel of 2^31 + 425_999 elements, a kernel indexing past 2^32, an
int32 dynamic size just under the kernel's 32-bit limit, and the launcher's refusal above it —
all compared with torch. Needs ~13 GB of GPU memory per test (an H200 has 141 GB).
"""

from __future__ import annotations

import pytest
import torch

import tilelang
import tilelang.language as T

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

BIG = 2**31 + 256
HUGE = 2**32 + 300


@tilelang.jit(out_idx=[-1])
def vector_add(M, block=256, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M,), dtype), B: T.Tensor((M,), dtype), C: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return main


@tilelang.jit(out_idx=[-1])
def vector_add_dyn(index_dtype="int32", block=256, dtype="float16"):
    m = T.dynamic("m", index_dtype)

    @T.prim_func
    def main(A: T.Tensor((m,), dtype), B: T.Tensor((m,), dtype), C: T.Tensor((m,), dtype)):
        with T.Kernel(T.ceildiv(m, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return main


@tilelang.jit(out_idx=[-1])
def add_one_2d(M, N, bm=32, bn=128, dtype="int8"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                C[by * bm + i, bx * bn + j] = A[by * bm + i, bx * bn + j] + 1

    return main


@tilelang.jit
def tail_add(M, tiles=3, block=128, dtype="int8"):
    @T.prim_func
    def main(A: T.Tensor((M,), dtype), B: T.Tensor((M,), dtype), C: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, block), threads=128) as bx:
            if bx >= T.ceildiv(M, block) - tiles:
                for i in T.Parallel(block):
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return main


def _inputs(n: int, dtype: torch.dtype, seed: int):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    if dtype.is_floating_point:
        a = torch.randn(n, dtype=dtype, device="cuda", generator=gen)
        b = torch.randn(n, dtype=dtype, device="cuda", generator=gen)
    else:
        a = torch.randint(-60, 60, (n,), dtype=dtype, device="cuda", generator=gen)
        b = torch.randint(-60, 60, (n,), dtype=dtype, device="cuda", generator=gen)
    return a, b


def _free():
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


@pytest.mark.parametrize("dtype", ["int8", "float16"])
@pytest.mark.parametrize("form", ["static", "dynamic_int64"])
def test_vector_add_beyond_2_31(form, dtype):
    tdt = getattr(torch, dtype)
    a, b = _inputs(BIG, tdt, 1)
    kernel = vector_add(BIG, dtype=dtype) if form == "static" else vector_add_dyn("int64", dtype=dtype)
    c = kernel(a, b)
    ref = a + b  # the same float16 rounding as the kernel's float16 add
    assert torch.equal(c, ref)
    del a, b, c, ref
    _free()


def test_2d_elementwise_beyond_2_31():
    M, N = 2**16 + 3, 2**15 + 5
    a = torch.randint(-60, 60, (M, N), dtype=torch.int8, device="cuda")
    c = add_one_2d(M, N)(a)
    assert torch.equal(c, a + 1)
    del a, c
    _free()


def test_indices_past_2_32():
    a, b = _inputs(HUGE, torch.int8, 3)
    c = torch.full((HUGE,), 7, dtype=torch.int8, device="cuda")
    tail_add(HUGE)(a, b, c)
    n = 384 - (-HUGE % 128)
    assert torch.equal(c[-n:], a[-n:] + b[-n:])
    assert bool((c[:-n] == 7).all())
    del a, b, c
    _free()


def test_int32_dynamic_just_under_the_limit_and_refused_above():
    from tilelang.errors import IndexLimitError

    kernel = vector_add_dyn("int32", dtype="int8")
    ((_, name, limit, param, axis),) = kernel.built.meta["index_limits"]
    assert (name, param, axis) == ("m", "A", 0) and 2**30 <= limit < 2**31
    a, b = _inputs(limit - 5, torch.int8, 4)  # 32-bit index arithmetic at its top
    assert torch.equal(kernel(a, b), a + b)
    del a, b
    _free()
    big = torch.empty(BIG, dtype=torch.int8, device="cuda")
    with pytest.raises(IndexLimitError, match=r"argument `A`: dimension 0 is m = 2147483904, above \d+"):
        kernel(big, big)
    del big
    _free()


def test_small_dynamic_sizes():
    kernel = vector_add_dyn("int32")
    for n in (1, 255, 1000, 100_003):
        a, b = _inputs(n, torch.float16, n)
        assert torch.equal(kernel(a, b), a + b)
