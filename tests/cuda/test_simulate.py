"""Numerics of the CUDA lowering without a GPU: the per-thread IR the CUDA code
generator consumes is executed by the simulator in `sim.py` (every thread of a
block, barriers and warp collectives as rendezvous points) and compared with
torch. Sizes are small and deliberately not multiples of the tiles."""

from __future__ import annotations

import kernels as KZ
import pytest
import torch
from catalog import _example
from sim import simulate

torch.manual_seed(0)


def close(got, ref, atol=1e-4, rtol=1e-4):
    torch.testing.assert_close(got.float(), ref.float(), atol=atol, rtol=rtol)


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype)


# -- GEMM: dtypes x transposes x warp policies ------------------------------------------------------

GEMMS = [
    ("float16", False, False, "Square"),
    ("float16", False, True, "FullRow"),
    ("float16", True, False, "FullCol"),
    ("float16", True, True, "Square"),
    ("bfloat16", False, True, "Square"),
    ("bfloat16", True, False, "FullRow"),
    ("float32", False, False, "FullCol"),
    ("float32", True, True, "Square"),
    ("int8", False, True, "Square"),
]


@pytest.mark.parametrize("dtype,ta,tb,policy", GEMMS)
def test_gemm_variants(dtype, ta, tb, policy):
    M, N, K = 72, 80, 96
    if dtype == "int8":
        a = torch.randint(-8, 8, (K, M) if ta else (M, K), dtype=torch.int8)
        b = torch.randint(-8, 8, (N, K) if tb else (K, N), dtype=torch.int8)
        acc = out = "int32"
    else:
        td = getattr(torch, dtype)
        a, b = randn(*((K, M) if ta else (M, K)), dtype=td), randn(*((N, K) if tb else (K, N)), dtype=td)
        acc = out = "float32"
    c = torch.zeros(M, N, dtype=getattr(torch, out))
    simulate(KZ.gemm.get_tir(M, N, K, 64, 64, 32, dtype, acc, out, ta, tb, policy), [a, b, c])
    ref = (a.T if ta else a).double() @ (b.T if tb else b).double()
    close(c, ref, atol=1e-3)


def test_gemm_fp16_accumulator_and_three_stages():
    M, N, K = 64, 64, 160
    a, b = randn(M, K, dtype=torch.float16) / 4, randn(K, N, dtype=torch.float16) / 4
    c = torch.zeros(M, N, dtype=torch.float16)
    simulate(KZ.gemm.get_tir(M, N, K, 64, 64, 32, "float16", "float16", "float16", stages=3), [a, b, c])
    close(c, a.float() @ b.float(), atol=2e-2, rtol=2e-2)


# -- reductions -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("kind", ["sum", "max", "absmax", "abssum"])
def test_reduce_along_either_dim(dim, kind):
    x = randn(64, 96)
    o = torch.zeros(96 if dim == 0 else 64)
    simulate(KZ.reduce_dim.get_tir(64, 96, dim, kind), [x, o])
    ref = {"sum": x.sum(dim), "max": x.amax(dim), "absmax": x.abs().amax(dim), "abssum": x.abs().sum(dim)}[kind]
    close(o, ref)


@pytest.mark.parametrize("shape, dim", [((32, 48), 1), ((32, 48), 0), ((4, 8, 16), 1), ((4, 8, 16), 2)])
def test_reduce_of_a_shared_tile(shape, dim):
    x = randn(*shape)
    o = torch.zeros(*(n for d, n in enumerate(shape) if d != dim))
    simulate(KZ.reduce_shared(shape, dim), [x, o])
    close(o, x.sum(dim))


@pytest.mark.parametrize("policy", ["FullRow", "Square", "FullCol"])
def test_row_stats_of_a_gemm_accumulator(policy):
    A, B, P = randn(64, 32, dtype=torch.float16), randn(64, 32, dtype=torch.float16), torch.zeros(64, 64)
    simulate(KZ.gemm_row_softmax.get_tir(64, 64, 32, policy), [A, B, P])
    close(P, torch.softmax(A.float() @ B.float().T, 1), atol=1e-5)


def test_column_sum_across_warps():
    A, B, o = randn(64, 32, dtype=torch.float16), randn(32, 64, dtype=torch.float16), torch.zeros(64)
    simulate(KZ.column_sum_of_gemm.get_tir(64, 64, 32), [A, B, o])
    close(o, (A.float() @ B.float()).sum(0), atol=1e-3)


# -- copies, fills, atomics ----------------------------------------------------------------------------


def test_cast_copies_through_fragments_and_shared():
    x, y = randn(50, 70), torch.zeros(50, 70, dtype=torch.float16)
    simulate(KZ.cast_copy.get_tir(50, 70), [x, y])
    close(y, x.half(), atol=0, rtol=0)


def test_atomics_from_a_parallel_loop():
    x, o = randn(40, 24), torch.zeros(24)
    simulate(KZ.atomic_sum_rows.get_tir(40, 24), [x, o])
    close(o, x.sum(0))


def test_fill_shared_and_fragment():
    x, y = randn(32, 64), torch.zeros(32, 64)
    simulate(KZ.fill_and_scale.get_tir(32, 64), [x, y])
    close(y, x * 2.5, atol=0, rtol=0)


# -- the seeds and examples ----------------------------------------------------------------------------


def test_seed_vector_add_and_elementwise():
    from seeds import seed_kernels as S

    a, b, c = randn(1000), randn(1000), torch.zeros(1000)
    simulate(S.vector_add.get_tir(M=1000), [a, b, c])
    close(c, a + b, atol=0, rtol=0)
    a, b, c = randn(200, 300), randn(200, 300), torch.zeros(200, 300)
    simulate(S.elementwise_op.get_tir(200, 300, 32, 64, 128), [a, b, c])
    close(c, a + b, atol=0, rtol=0)
    a, b, c = randn(1000), randn(1000), torch.zeros(1000)
    simulate(S.conditional_elementwise.get_tir(1000, 128), [a, b, c])
    close(c, torch.where(a > 0, a + b, a - b), atol=0, rtol=0)


def test_seed_gemm_relu_and_non_multiple_sizes():
    from seeds import seed_kernels as S

    M, N, K = 200, 136, 72
    a, b, c = randn(M, K, dtype=torch.float16), randn(K, N, dtype=torch.float16), torch.zeros(M, N, dtype=torch.float16)
    simulate(S.matmul_relu.get_tir(M=M, N=N, K=K, block_M=128, block_N=128, block_K=32), [a, b, c])
    close(c, torch.relu(a.float() @ b.float()), atol=2e-2, rtol=1e-2)


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention(causal):
    mha = _example("flash_attention/mha_fwd.py")
    B, H, S, D = 1, 1, 100, 64
    q, k, v = (randn(B, S, H, D, dtype=torch.float16) for _ in range(3))
    o = torch.zeros(B, S, H, D, dtype=torch.float16)
    simulate(mha.flashattn.get_tir(B, H, S, D, causal), [q, k, v, o])
    close(o, mha.reference(q, k, v, causal), atol=2e-3, rtol=1e-2)


def test_seed_reductions_and_reducers():
    from seeds import seed_kernels as S

    x, out = torch.rand(S.rows, S.width) + 0.5, torch.zeros(S.rows, S.width)
    simulate(S.fragment_reduce.get_tir(), [x, out])
    close(out, x / x.sum(1, keepdim=True), atol=1e-6)
    s = torch.zeros(S.rows)
    simulate(S.reducer_sum.get_tir(), [x, s])
    close(s, x.sum(1))
    x, y = randn(3, 100), torch.zeros(3)
    simulate(S.reduction_op.get_tir(3, 100, 128), [x, y])
    close(y, x.sum(1))
    x, y = randn(3, 384), torch.zeros(3, 384)
    simulate(S.layer_norm.get_tir(3, 384, 128), [x, y])
    close(y, torch.nn.functional.layer_norm(x, (384,), eps=1e-5))


def test_example_norms_cumsum_and_reducer_max():
    rms = _example("norm/rms_norm.py")
    red = _example("reduce/reducer.py")
    a, o = randn(4, 1000), torch.zeros(4, 1000)
    simulate(rms.rms_norm.get_tir(4, 1000), [a, o])
    close(o, a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True) + 1e-6))
    r, m = randn(48, 70), torch.zeros(48)
    simulate(red.reducer_rows.get_tir(R=48, W=70, op="max"), [r, m])
    close(m, r.amax(1), atol=0, rtol=0)
    v, y = randn(1000), torch.zeros(1000)
    simulate(red.prefix_sum.get_tir(M=1000), [v, y])
    close(y, torch.cat([c.cumsum(0) for c in v.split(128)]))


def test_splitk_persistent_and_gemv():
    from seeds import seed_kernels as S

    M, N, K = 96, 80, 256
    a, b, c = randn(M, K, dtype=torch.float16), randn(K, N, dtype=torch.float16), torch.zeros(M, N)
    simulate(S.matmul_splitk.get_tir(M, N, K, 64, 64, 32, 4), [a, b, c])
    close(c, a.float() @ b.float(), atol=1e-3)
    M, N, K = 256, 256, 64
    a, b, c = randn(M, K, dtype=torch.float16), randn(K, N, dtype=torch.float16), torch.zeros(M, N, dtype=torch.float16)
    simulate(S.matmul_persistent.get_tir(M, N, K, 128, 128, 32, 128, 2, 3), [a, b, c])
    close(c, a.float() @ b.float(), atol=2e-2, rtol=1e-2)
    a, b, c = randn(60, dtype=torch.float16), randn(100, 60, dtype=torch.float16), torch.zeros(100, dtype=torch.float16)
    simulate(S.gemv.get_tir(100, 60, 64, 16), [a, b, c])
    close(c, b.float() @ a.float(), atol=2e-2, rtol=1e-2)


def test_dynamic_shapes_one_kernel_many_sizes():
    from seeds import seed_kernels as S

    f = S.matmul_dynamic_mnk.get_tir(
        block_M=64, block_N=64, block_K=32, trans_A=False, trans_B=False, in_dtype="float16", out_dtype="float16",
        accum_dtype="float32", num_stages=2, threads=128,
    )  # fmt: skip
    for m, n, k in ((128, 96, 64), (72, 40, 100)):
        a, b = randn(m, k, dtype=torch.float16), randn(k, n, dtype=torch.float16)
        c = torch.zeros(m, n, dtype=torch.float16)
        simulate(f, [a, b, c])
        close(c, a.float() @ b.float(), atol=2e-2, rtol=1e-2)


def test_stage_order_schedule():
    from seeds import seed_kernels as S

    M, N, K = 200, 136, 72
    a, b, c = randn(M, K, dtype=torch.float16), randn(K, N, dtype=torch.float16), torch.zeros(M, N)
    simulate(S.matmul_stage_order.get_tir(M, N, K), [a, b, c])
    close(c, a.float() @ b.float(), atol=1e-3)
