"""Numerics of the HIP lowering without an AMD GPU: the per-thread IR the HIP code generator
consumes (`tilelang.backend.hip.pipeline.lower`) runs in the shared SIMT simulator (`tests/simt`)
with waves of 64 lanes and MFMA instructions executed from AMD's register tables, and is
compared with torch float64 references. Every seed and example kernel of the catalogue
(tests/cuda/catalog.py) runs, at sizes that are not multiples of the tiles, with few blocks."""

from __future__ import annotations

import os
import sys

import pytest
import torch

_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _p in (_TESTS, os.path.join(_TESTS, "cuda")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import kernels as KZ  # noqa: E402
from catalog import _example  # noqa: E402
from seeds import seed_kernels as S  # noqa: E402
from simt.hip import simulate  # noqa: E402


def close(got, ref, atol=1e-4, rtol=1e-4):
    torch.testing.assert_close(got.double(), ref.double(), atol=atol, rtol=rtol)


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype)


def mm(a, b):
    return a.double() @ b.double()


# -- T.gemm on MFMA: every 16x16 instruction, transposes, warp policies, both architectures ----------

GEMMS = [
    ("float16", False, False, "Square", "gfx90a"),
    ("float16", True, True, "FullRow", "gfx940"),
    ("bfloat16", False, True, "FullCol", "gfx90a"),
    ("bfloat16", True, False, "Square", "gfx940"),
    ("float32", False, True, "Square", "gfx90a"),
    ("int8", False, True, "Square", "gfx90a"),  # v_mfma_i32_16x16x16i8
    ("int8", True, False, "FullRow", "gfx940"),  # v_mfma_i32_16x16x32_i8
]


@pytest.mark.parametrize("dtype,ta,tb,policy,arch", GEMMS)
def test_gemm_variants(dtype, ta, tb, policy, arch):
    torch.manual_seed(1)
    M, N, K = 72, 40, 64
    if dtype == "int8":
        a = torch.randint(-8, 8, (K, M) if ta else (M, K), dtype=torch.int8)
        b = torch.randint(-8, 8, (N, K) if tb else (K, N), dtype=torch.int8)
        acc = "int32"
    else:
        td = getattr(torch, dtype)
        a, b = randn(*((K, M) if ta else (M, K)), dtype=td), randn(*((N, K) if tb else (K, N)), dtype=td)
        acc = "float32"
    c = torch.zeros(M, N, dtype=getattr(torch, acc))
    simulate(KZ.gemm.get_tir(M, N, K, 64, 64, 32, dtype, acc, acc, ta, tb, policy), [a, b, c], arch=arch)
    close(c, mm(a.T if ta else a, b.T if tb else b), atol=1e-3)


def test_gemm_fp16_accumulator():
    """Each MFMA accumulates in a float32 copy of the half registers, rounded back after it."""
    torch.manual_seed(5)
    M, N, K = 64, 40, 96
    a, b = randn(M, K, dtype=torch.float16) / 4, randn(K, N, dtype=torch.float16) / 4
    c = torch.zeros(M, N, dtype=torch.float16)
    simulate(KZ.gemm.get_tir(M, N, K, 64, 64, 32, "float16", "float16", "float16", stages=3), [a, b, c])
    close(c, mm(a, b), atol=2e-2, rtol=2e-2)


# -- wave-64 reductions ------------------------------------------------------------------------------


@pytest.mark.parametrize("dim,kind", [(0, "sum"), (1, "max"), (1, "absmax"), (0, "abssum")])
def test_reduce_along_either_dim(dim, kind):
    torch.manual_seed(2)
    x = randn(64, 96)
    o = torch.zeros(96 if dim == 0 else 64)
    simulate(KZ.reduce_dim.get_tir(64, 96, dim, kind), [x, o])
    ref = {"sum": x.sum(dim), "max": x.amax(dim), "absmax": x.abs().amax(dim), "abssum": x.abs().sum(dim)}[kind]
    close(o, ref)


@pytest.mark.parametrize("policy", ["FullRow", "Square"])
def test_row_softmax_of_an_mfma_accumulator(policy):
    torch.manual_seed(3)
    A, B, P = randn(64, 32, dtype=torch.float16), randn(64, 32, dtype=torch.float16), torch.zeros(64, 64)
    simulate(KZ.gemm_row_softmax.get_tir(64, 64, 32, policy), [A, B, P])
    close(P, torch.softmax(mm(A, B.T), 1), atol=1e-5)


# -- the catalogue: every seed and example kernel ----------------------------------------------------------


def _h(*shape):
    return randn(*shape, dtype=torch.float16)


def _gemm_case(make, m, n, k, out=torch.float16, relu=False, bt=False, dtype=torch.float16):
    def case():
        a, b = randn(m, k, dtype=dtype), randn(*((n, k) if bt else (k, n)), dtype=dtype)
        c = torch.zeros(m, n, dtype=out)
        ref = mm(a, b.T if bt else b)
        return (
            make(),
            [a, b, c],
            c,
            torch.relu(ref) if relu else ref,
            (2e-2, 1e-2) if out == torch.float16 else (1e-3, 1e-4),
        )

    return case


def _ex(rel, attr):
    return lambda *a, **kw: getattr(_example(rel), attr).get_tir(*a, **kw)


def _elementwise(make, shape, fn):
    def case():
        a, b = randn(*shape), randn(*shape)
        c = torch.zeros(*shape)
        return make(), [a, b, c], c, fn(a, b), (0, 0)  # float32 arithmetic, as on the device

    return case


def _rows(make, shape, fn, out_shape=None, tol=(1e-4, 1e-4), positive=False):
    def case():
        x = torch.rand(*shape) + 0.5 if positive else randn(*shape)
        y = torch.zeros(*(out_shape or shape))
        return make(), [x, y], y, fn(x.double()), tol

    return case


def _flash(make, causal, mha):
    def case():
        q, k, v = (_h(1, 72, 1, 64) for _ in range(3))
        o = torch.zeros(1, 72, 1, 64, dtype=torch.float16)
        return make(1, 1, 72, 64, causal), [q, k, v, o], o, mha.reference(q, k, v, causal), (2e-3, 1e-2)

    return case


def _layer_norm(x):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], eps=1e-5)


def _cases() -> dict:
    mha = _example("flash_attention/mha_fwd.py")
    red = _example("reduce/reducer.py")
    gemm = "gemm/gemm.py"
    add = lambda a, b: a + b  # noqa: E731
    cond = lambda a, b: torch.where(a > 0, a + b, a - b)  # noqa: E731
    dyn = dict(block_M=64, block_N=64, block_K=32, trans_A=False, trans_B=False, in_dtype="float16",
               out_dtype="float16", accum_dtype="float32", num_stages=2, threads=128)  # fmt: skip
    return {
        "seed.vector_add": _elementwise(lambda: S.vector_add.get_tir(M=1000), (1000,), add),
        "seed.matmul": _gemm_case(
            lambda: S.matmul.get_tir(M=72, N=40, K=72, block_M=64, block_N=64, block_K=32), 72, 40, 72
        ),  # fmt: skip
        "seed.matmul_relu": _gemm_case(
            lambda: S.matmul_relu.get_tir(M=136, N=72, K=40, block_M=128, block_N=128, block_K=32),
            136,
            72,
            40,
            relu=True,
        ),  # fmt: skip
        "seed.flashattn_causal": _flash(S.flashattn.get_tir, True, mha),
        "seed.fragment_reduce": _rows(
            S.fragment_reduce.get_tir,
            (S.rows, S.width),
            lambda x: x / x.sum(1, keepdim=True),
            tol=(1e-6, 1e-5),
            positive=True,
        ),  # fmt: skip
        "seed.reducer_sum": _rows(S.reducer_sum.get_tir, (S.rows, S.width), lambda x: x.sum(1), (S.rows,)),
        "seed.matmul_dynamic": _gemm_case(lambda: S.matmul_dynamic_mnk.get_tir(**dyn), 72, 40, 100),
        "seed.matmul_persistent": _gemm_case(
            lambda: S.matmul_persistent.get_tir(136, 72, 40, 128, 128, 32, 128, 2, 3), 136, 72, 40
        ),  # fmt: skip
        "seed.matmul_splitk": _gemm_case(
            lambda: S.matmul_splitk.get_tir(72, 40, 256, 64, 64, 32, 4), 72, 40, 256, out=torch.float32
        ),  # fmt: skip
        "seed.matmul_stage_order": _gemm_case(
            lambda: S.matmul_stage_order.get_tir(72, 40, 72), 72, 40, 72, out=torch.float32
        ),  # fmt: skip
        "seed.elementwise_op": _elementwise(lambda: S.elementwise_op.get_tir(50, 70, 32, 64, 128), (50, 70), add),
        "seed.conditional_elementwise": _elementwise(lambda: S.conditional_elementwise.get_tir(300, 128), (300,), cond),
        "seed.reduction_op": _rows(lambda: S.reduction_op.get_tir(3, 100, 128), (3, 100), lambda x: x.sum(1), (3,)),
        "seed.layer_norm": _rows(lambda: S.layer_norm.get_tir(3, 384, 128), (3, 384), _layer_norm),
        "seed.matmul_pattern": _gemm_case(lambda: S.matmul_pattern.get_tir(72, 40, 72, 64, 64, 32), 72, 40, 72),
        "seed.gemv": lambda: _gemv(S.gemv.get_tir(100, 60, 64, 16), 100, 60),
        "ex.quickstart": _gemm_case(
            lambda: _ex("quickstart.py", "matmul")(M=136, N=72, K=40, block_M=128, block_N=128, block_K=32),
            136,
            72,
            40,
            relu=True,
        ),  # fmt: skip
        "ex.vector_add": _elementwise(lambda: _ex("elementwise/vector_add.py", "vector_add")(M=300), (300,), add),
        "ex.vector_add_relu": _elementwise(
            lambda: _ex("elementwise/vector_add.py", "vector_add_relu")(M=300, block_M=64),
            (300,),
            lambda a, b: torch.relu(a + b),
        ),  # fmt: skip
        "ex.elementwise_add": _elementwise(
            lambda: _ex("elementwise/vector_add.py", "elementwise_add")(50, 70, 32, 64, 128), (50, 70), add
        ),  # fmt: skip
        "ex.conditional_elementwise": _elementwise(
            lambda: _ex("elementwise/vector_add.py", "conditional_elementwise")(300, 128), (300,), cond
        ),  # fmt: skip
        "ex.gemm_eager": _gemm_case(
            lambda: _ex(gemm, "matmul")(M=72, N=40, K=72, block_M=64, block_N=64, block_K=32), 72, 40, 72
        ),  # fmt: skip
        "ex.gemm_lazy": _gemm_case(lambda: _ex(gemm, "matmul_lazy")(72, 40, 72, 64, 64, 32), 72, 40, 72),
        "ex.gemm_bf16_nt": _gemm_case(
            lambda: _ex(gemm, "matmul_bf16_nt")(72, 40, 72, 64, 64, 32),
            72,
            40,
            72,
            out=torch.float32,
            bt=True,
            dtype=torch.bfloat16,
        ),  # fmt: skip
        "ex.gemm_stage_order": _gemm_case(
            lambda: _ex(gemm, "matmul_stage_order")(72, 40, 72), 72, 40, 72, out=torch.float32
        ),  # fmt: skip
        "ex.gemm_persistent": _gemm_case(
            lambda: _ex("gemm/persistent.py", "matmul_persistent")(136, 72, 40, 128, 128, 32, 128, 2, 3),
            136,
            72,
            40,
        ),  # fmt: skip
        "ex.splitk": _gemm_case(
            lambda: _ex("gemm_splitk/splitk.py", "matmul_splitk")(72, 40, 256, 64, 64, 32, 4),
            72,
            40,
            256,
            out=torch.float32,
        ),  # fmt: skip
        "ex.gemv": lambda: _gemv(_ex("gemv/gemv.py", "gemv")(100, 72, 64, 32), 100, 72),
        "ex.layer_norm": _rows(lambda: _ex("norm/layer_norm.py", "layer_norm")(3, 384, 128), (3, 384), _layer_norm),
        "ex.rms_norm": _rows(
            lambda: _ex("norm/rms_norm.py", "rms_norm")(3, 1000),
            (3, 1000),
            lambda a: a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True) + 1e-6),
        ),  # fmt: skip
        "ex.row_sum": _rows(
            lambda: _ex("norm/rms_norm.py", "row_sum")(3, 1000, 128), (3, 1000), lambda x: x.sum(1), (3,)
        ),  # fmt: skip
        "ex.fragment_reduce": _rows(
            red.fragment_reduce.get_tir,
            (red.rows, red.width),
            lambda x: x / x.sum(1, keepdim=True),
            tol=(1e-6, 1e-5),
            positive=True,
        ),  # fmt: skip
        "ex.reducer_rows": _rows(lambda: red.reducer_rows.get_tir(R=48, W=70), (48, 70), lambda x: x.sum(1), (48,)),
        "ex.reducer_rows_max": _rows(
            lambda: red.reducer_rows.get_tir(R=48, W=70, op="max"), (48, 70), lambda x: x.amax(1), (48,), tol=(0, 0)
        ),  # fmt: skip
        "ex.prefix_sum": _rows(
            lambda: red.prefix_sum.get_tir(M=300), (300,), lambda v: torch.cat([c.cumsum(0) for c in v.split(128)])
        ),  # fmt: skip
        "ex.matmul_dynamic": _gemm_case(
            lambda: _ex("dynamic_shape/matmul_dynamic.py", "matmul_dynamic_mnk")(**dyn), 72, 40, 100
        ),  # fmt: skip
        "ex.flash_attention": _flash(_ex("flash_attention/mha_fwd.py", "flashattn"), False, mha),
        "ex.flash_attention_causal": _flash(_ex("flash_attention/mha_fwd.py", "flashattn"), True, mha),
    }


def _gemv(func, n, k):
    a, b, c = _h(k), _h(n, k), torch.zeros(n, dtype=torch.float16)
    return func, [a, b, c], c, b.double() @ a.double(), (2e-2, 1e-2)


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_catalogue_kernel_matches_torch(name):
    torch.manual_seed(4)
    func, args, out, ref, (atol, rtol) = CASES[name]()
    simulate(func, args)
    close(out, ref, atol=atol, rtol=rtol)


def test_catalogue_is_covered():
    """Every seed and example of the catalogue the CUDA tests lower is simulated here."""
    from catalog import example_funcs, seed_funcs

    assert set(seed_funcs()) | set(example_funcs()) <= set(CASES)
