"""The CUDA backend on a real GPU: every seed kernel and example at realistic sizes
(including sizes that are not multiples of the tiles) against torch; GEMMs in
every dtype (fp16, bf16, fp32 → tf32, int8), transpose and warp policy;
causal and non-causal FlashAttention (the complete kernel of
examples/flash_attention/mha_fwd.py); reductions along both dims; atomics;
dynamic shapes; T.print.

Kernels are compiled up front in parallel (nvcc is the slow part), then each
test runs its kernel. Marked `cuda`: skipped without a GPU.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

import kernels as KZ  # noqa: E402
from catalog import _example  # noqa: E402

torch.manual_seed(0)
DEV = "cuda"
POLICIES = ("Square", "FullRow", "FullCol")
TRANSPOSES = ((False, False), (False, True), (True, False), (True, True))


def close(got, ref, atol, rtol=1e-2):
    torch.testing.assert_close(got.float(), ref.float(), atol=atol, rtol=rtol)


# -- compile everything in parallel first ---------------------------------------------------------


def _gemm_configs():
    out = []
    for dt in ("float16", "bfloat16", "float32"):
        for ta, tb in TRANSPOSES:
            for pol in POLICIES:
                out.append((dt, ta, tb, pol))
    out += [("int8", False, True, pol) for pol in POLICIES]
    return out


GEMM_CONFIGS = _gemm_configs()
GEMM_SIZE = (1000, 1100, 1200)


@pytest.fixture(scope="module")
def gemm_kernels():
    M, N, K = GEMM_SIZE

    def build(cfg):
        dt, ta, tb, pol = cfg
        acc = "int32" if dt == "int8" else "float32"
        bk = 64 if dt == "int8" else 32
        return KZ.gemm(M, N, K, 128, 128, bk, dt, acc, acc, ta, tb, pol, 3, 128)

    with ThreadPoolExecutor(16) as ex:
        return dict(zip(GEMM_CONFIGS, ex.map(build, GEMM_CONFIGS)))


@pytest.mark.parametrize(
    "cfg", GEMM_CONFIGS, ids=lambda c: f"{c[0]}-{'T' if c[1] else 'N'}{'T' if c[2] else 'N'}-{c[3]}"
)
def test_gemm_dtypes_transposes_policies(gemm_kernels, cfg):
    dt, ta, tb, pol = cfg
    M, N, K = GEMM_SIZE
    if dt == "int8":
        a = torch.randint(-16, 16, (K, M) if ta else (M, K), dtype=torch.int8, device=DEV)
        b = torch.randint(-16, 16, (N, K) if tb else (K, N), dtype=torch.int8, device=DEV)
    else:
        td = getattr(torch, dt)
        a = torch.randn((K, M) if ta else (M, K), device=DEV).to(td)
        b = torch.randn((N, K) if tb else (K, N), device=DEV).to(td)
    c = gemm_kernels[cfg](a, b)
    ref = (a.T if ta else a).double() @ (b.T if tb else b).double()
    if dt == "int8":
        assert torch.equal(c.long(), ref.long())
    elif dt == "float32":  # tf32: 10-bit mantissa inputs
        close(c, ref, atol=5e-2 * K**0.5 / 10, rtol=1e-2)
    else:
        close(c, ref, atol=1e-2 * K**0.5 if dt == "float16" else 3e-2 * K**0.5)


def test_gemm_fp16_accumulator():
    M, N, K = 512, 512, 256
    k = KZ.gemm(M, N, K, 128, 128, 32, "float16", "float16", "float16", False, False, "Square", 3)
    a, b = torch.randn(M, K, device=DEV).half() / 4, torch.randn(K, N, device=DEV).half() / 4
    close(k(a, b), a.float() @ b.float(), atol=5e-2)


# -- the seeds ---------------------------------------------------------------------------------------------


def test_seed_vector_add():
    from seeds import seed_kernels as S

    for M in (1 << 20, 1000003):
        a, b = torch.randn(M, device=DEV), torch.randn(M, device=DEV)
        torch.testing.assert_close(S.vector_add(a, b), a + b, atol=0, rtol=0)
        torch.testing.assert_close(S.vector_add(a, b, block_M=1024), a + b, atol=0, rtol=0)


@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (1000, 1100, 1300), (64, 8192, 256)])
def test_seed_gemm(shape):
    from seeds import seed_kernels as S

    M, N, K = shape
    a, b = torch.randn(M, K, device=DEV).half(), torch.randn(K, N, device=DEV).half()
    ref = a.float() @ b.float()
    close(S.matmul(a, b, block_M=128, block_N=128, block_K=32), ref, atol=1e-2 * K**0.5)
    close(
        S.matmul_relu.compile(M=M, N=N, K=K, block_M=128, block_N=128, block_K=32)(a, b),
        torch.relu(ref),
        atol=1e-2 * K**0.5,
    )


@pytest.mark.parametrize("seq", [1024, 1000])
def test_seed_flash_attention_causal(seq):
    from seeds import seed_kernels as S

    batch, heads, dim = 2, 8, 64
    k = S.flashattn(batch, heads, seq, dim, True, block_M=64, block_N=64)
    q, kk, v = (torch.randn(batch, seq, heads, dim, device=DEV, dtype=torch.float16) for _ in range(3))
    ref = torch.nn.functional.scaled_dot_product_attention(
        *(x.float().transpose(1, 2) for x in (q, kk, v)), is_causal=True
    )
    close(k(q, kk, v), ref.transpose(1, 2), atol=2e-2, rtol=2e-2)


def test_seed_reductions_reducer_and_norms():
    from seeds import seed_kernels as S

    x = torch.rand(S.rows, S.width, device=DEV) + 0.5
    out = torch.empty_like(x)
    S.fragment_reduce(x, out)
    close(out, x / x.sum(1, keepdim=True), atol=1e-6)
    s = torch.empty(S.rows, device=DEV)
    S.reducer_sum(x, s)
    close(s, x.sum(1), atol=1e-4)
    x = torch.randn(4096, 1000, device=DEV)
    close(S.reduction_op(4096, 1000, 128)(x), x.sum(1), atol=1e-3)
    x = torch.randn(4096, 1024, device=DEV)
    close(S.layer_norm(4096, 1024, 128)(x), torch.nn.functional.layer_norm(x, (1024,), eps=1e-5), atol=1e-4)


def test_seed_splitk_persistent_stage_order_pattern_gemv():
    from seeds import seed_kernels as S

    M, N, K = 1024, 1024, 8192
    a, b = torch.randn(M, K, device=DEV).half(), torch.randn(K, N, device=DEV).half()
    c = torch.zeros(M, N, device=DEV)
    S.matmul_splitk(M, N, K, 128, 128, 32, 4)(a, b, c)
    close(c, a.float() @ b.float(), atol=1e-2 * K**0.5)
    M, N, K = 2048, 2048, 1024
    a, b = torch.randn(M, K, device=DEV).half(), torch.randn(K, N, device=DEV).half()
    ref = a.float() @ b.float()
    sm = torch.cuda.get_device_properties(0).multi_processor_count
    close(S.matmul_persistent(M, N, K, 128, 128, 32, 128, 3, sm)(a, b), ref, atol=1e-2 * K**0.5)
    close(S.matmul_stage_order(M, N, K)(a, b), ref, atol=1e-2 * K**0.5)
    close(S.matmul_pattern(M, N, K, 128, 128, 32)(a, b), ref, atol=1e-2 * K**0.5)
    av, bv = torch.randn(4000, device=DEV).half(), torch.randn(3000, 4000, device=DEV).half()
    close(S.gemv(3000, 4000, 128, 32)(av, bv), bv.float() @ av.float(), atol=0.5)


def test_seed_elementwise():
    from seeds import seed_kernels as S

    a, b = torch.randn(1000, 3000, device=DEV), torch.randn(1000, 3000, device=DEV)
    torch.testing.assert_close(S.elementwise_op(1000, 3000, 32, 64, 128)(a, b), a + b, atol=0, rtol=0)
    x, y = torch.randn(100000, device=DEV), torch.randn(100000, device=DEV)
    torch.testing.assert_close(
        S.conditional_elementwise(100000, 256)(x, y), torch.where(x > 0, x + y, x - y), atol=0, rtol=0
    )


def test_dynamic_shapes():
    from seeds import seed_kernels as S

    cfg = dict(block_M=128, block_N=128, block_K=32, trans_A=False, trans_B=False, in_dtype=T_half(), out_dtype=T_half(),
               accum_dtype="float32", num_stages=3, threads=128)  # fmt: skip
    for m, n, k in ((1024, 1024, 1024), (1000, 900, 77), (17, 4096, 2000)):
        a, b = torch.randn(m, k, device=DEV).half(), torch.randn(k, n, device=DEV).half()
        close(S.matmul_dynamic_mnk(a, b, **cfg), a.float() @ b.float(), atol=1e-2 * k**0.5)
    assert len(S.matmul_dynamic_mnk._kernels) == 1


def T_half():
    import tilelang.language as T

    return T.float16


# -- the complete FlashAttention kernel -------------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("cfg", [(2, 8, 1024, 64, 64, 64), (1, 4, 1000, 128, 128, 128), (2, 4, 512, 128, 64, 64)])
def test_flash_attention_complete(causal, cfg):
    mha = _example("flash_attention/mha_fwd.py")
    batch, heads, seq, dim, bm, bn = cfg
    k = mha.flashattn(batch, heads, seq, dim, causal, block_M=bm, block_N=bn, num_stages=1, threads=128)
    q, kk, v = (torch.randn(batch, seq, heads, dim, device=DEV, dtype=torch.float16) for _ in range(3))
    close(k(q, kk, v), mha.reference(q, kk, v, causal), atol=2e-2, rtol=2e-2)


# -- reductions, copies, atomics --------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("kind", ["sum", "max", "min", "absmax", "abssum"])
def test_reductions(dim, kind):
    x = torch.randn(128, 96, device=DEV)
    got = KZ.reduce_dim(128, 96, dim, kind)(x)
    ref = {
        "sum": x.sum(dim),
        "max": x.amax(dim),
        "min": x.amin(dim),
        "absmax": x.abs().amax(dim),
        "abssum": x.abs().sum(dim),
    }[kind]
    close(got, ref, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("policy", POLICIES)
def test_row_stats_of_gemm(policy):
    A, B = torch.randn(64, 32, device=DEV).half(), torch.randn(64, 32, device=DEV).half()
    close(KZ.gemm_row_softmax(64, 64, 32, policy)(A, B), torch.softmax(A.float() @ B.float().T, 1), atol=1e-5)
    A, B = torch.randn(64, 32, device=DEV).half(), torch.randn(32, 64, device=DEV).half()
    close(KZ.column_sum_of_gemm(64, 64, 32)(A, B), (A.float() @ B.float()).sum(0), atol=1e-3)


def test_copies_atomics_fill():
    x = torch.randn(1000, 700, device=DEV)
    torch.testing.assert_close(KZ.cast_copy(1000, 700)(x), x.half(), atol=0, rtol=0)
    x = torch.randn(4000, 96, device=DEV)
    o = torch.zeros(96, device=DEV)
    KZ.atomic_sum_rows(4000, 96)(x, o)
    close(o, x.sum(0), atol=1e-3)
    x = torch.randn(32, 64, device=DEV)
    close(KZ.fill_and_scale(32, 64)(x), x * 2.5, atol=0, rtol=0)


# -- the examples, as programs (realistic sizes on the GPU) ---------------------------------------------------

EXAMPLES = sorted(p for p in (ROOT / "examples").rglob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[str(p.relative_to(ROOT / "examples")) for p in EXAMPLES])
def test_example_on_gpu(path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    out = proc.stdout
    assert "match" in out and ("(cuda)" in out or "target: cuda" in out), out[-2000:]


def test_print_from_a_kernel(tmp_path):
    script = tmp_path / "print_kernel.py"
    script.write_text(
        "import torch\n"
        "import tilelang\n"
        "import tilelang.language as T\n\n\n"
        "@tilelang.jit\n"
        "def k(x):\n"
        "    x: T.Tensor((4,), T.float32)\n"
        "    with T.Kernel(1, threads=32):\n"
        "        T.print(x[2], msg='x2')\n\n\n"
        "k(torch.arange(4.0, device='cuda'))\n"
        "torch.cuda.synchronize()\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "x2" in proc.stdout and "= 2" in proc.stdout, proc.stdout
