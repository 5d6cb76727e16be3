"""GPU twin of tests/conformance/test_fp8_and_utils.py: fp8 e4m3 / e5m2 GEMMs with fp32
accumulation and fp8 casts on CUDA, against torch.

- the GEMM and cast kernels of the conformance file, compiled for the local GPU
  (on an H200: sm_90a, the fp8 wgmma path), at sizes that are not tile multiples;
- casts to and from float16 / bfloat16 / float32 bit-exact against torch's `Tensor.to`
  (ties to even; e5m2 overflows to inf; e4m3 saturates to +-448 as torch 2.13 does —
  torch 2.11 gives NaN there, so the reference clamps first);
- the sm_80 lowering, where there is no fp8 mma and the operands run through exact
  f16 mmas: the same GEMM compiled for sm_80 as PTX (which the driver JIT-compiles for
  any newer GPU) and run here, and the header's mma test program built for compute_80.
"""

from __future__ import annotations

import math
import os
import subprocess
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

import tilelang  # noqa: E402
import tilelang.language as T  # noqa: E402
from tilelang.language.fp8 import determine_fp8_type  # noqa: E402
from tilelang.utils.tensor import torch_assert_close  # noqa: E402

FP8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
ROOT = Path(__file__).resolve().parents[2]


@tilelang.jit(out_idx=[-1])
def fp8_matmul(M, N, K, block_M, block_N, block_K, in_dtype, out_dtype="float32", accum_dtype="float32", threads=128):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), in_dtype),
        B: T.Tensor((N, K), in_dtype),
        C: T.Tensor((M, N), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), in_dtype)
            B_shared = T.alloc_shared((block_N, block_K), in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


@tilelang.jit(out_idx=[-1])
def convert(N, in_dtype, out_dtype, how, block=256):
    @T.prim_func
    def main(X: T.Tensor((N,), in_dtype), Y: T.Tensor((N,), out_dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            x_frag = T.alloc_fragment((block,), in_dtype)
            y_frag = T.alloc_fragment((block,), out_dtype)
            T.copy(X[bx * block], x_frag)
            if how == "copy":
                T.copy(x_frag, y_frag)
            else:
                for i in T.Parallel(block):
                    y_frag[i] = T.cast(x_frag[i], out_dtype)
            T.copy(y_frag, Y[bx * block])

    return main


def fp8_inputs(fmt: str, M: int, N: int, K: int):
    g = torch.Generator(device="cuda").manual_seed(11)
    a = torch.randn(M, K, device="cuda", generator=g).to(FP8[fmt])
    b = torch.randn(N, K, device="cuda", generator=g).to(FP8[fmt])
    return a, b


def check_gemm(c, a, b, K):
    ref = a.float() @ b.float().T
    # the tensor cores' fp8 accumulation is not a full fp32 sum: tolerance grows with K
    torch_assert_close(c, ref, rtol=1e-2, atol=1e-3 * K, max_mismatched_ratio=0.0)


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_gemm(fmt):
    M, N, K = 1000, 1100, 1200
    kernel = fp8_matmul(M, N, K, 128, 128, 64, determine_fp8_type(fmt))
    if torch.cuda.get_device_capability() == (9, 0):
        assert "tl::wgmma_gemm_ss<" in kernel.get_kernel_source()
    a, b = fp8_inputs(fmt, M, N, K)
    check_gemm(kernel(a, b), a, b, K)


def test_fp8_gemm_small_tiles_half_output():
    M, N, K = 300, 200, 160
    kernel = fp8_matmul(M, N, K, 64, 64, 32, T.float8_e4m3fn, out_dtype="float16")
    a, b = fp8_inputs("e4m3", M, N, K)
    c = kernel(a, b)
    assert c.dtype == torch.float16
    torch_assert_close(c, (a.float() @ b.float().T).half(), rtol=1e-2, atol=1e-3 * K, max_mismatched_ratio=0.0)


def probe_floats(fmt: str) -> torch.Tensor:
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(FP8[fmt]).float()
    vals = codes[torch.isfinite(codes)].unique()
    mids = ((vals[:-1].double() + vals[1:].double()) / 2).float()
    up = torch.nextafter(mids, torch.full_like(mids, math.inf))
    down = torch.nextafter(mids, torch.full_like(mids, -math.inf))
    top = vals.max().item()
    special = torch.tensor(
        [0.0, -0.0, math.inf, -math.inf, math.nan, top * 1.03, top * 1.07, top * 1.0625, top * 1.5, 1e9]
        + [2.0**-10, 2.0**-17, 2.0**-18, 3 * 2.0**-11, 1e-30]
    )
    rand = torch.randn(5000, generator=torch.Generator().manual_seed(3)) * 100
    return torch.cat([vals, mids, up, down, special, -special, rand])


def torch_fp8(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """torch's conversion to fp8 with e4m3fn saturating: torch 2.13 saturates out-of-range
    values and infinities to +-448, torch 2.11 makes them NaN; TileLang saturates (as newer
    torch, cuda_fp8 and PTX .satfinite do), so in-range values are torch's and the rest are
    clamped first (exact: clamping to the largest finite value, NaN stays NaN)."""
    if fmt == "e4m3":
        return x.float().clamp(-448.0, 448.0).to(FP8[fmt])
    return x.to(FP8[fmt])


def same_bits(got: torch.Tensor, ref: torch.Tensor) -> None:
    """Bitwise equal; NaN matches NaN (its sign and payload are not compared)."""
    got, ref = got.cpu(), ref.cpu()
    assert got.dtype == ref.dtype and got.shape == ref.shape
    nan = torch.isnan(ref.float())
    assert torch.equal(torch.isnan(got.float()), nan)
    ibits = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[got.element_size()]
    bad = got.view(ibits)[~nan] != ref.view(ibits)[~nan]
    assert not bad.any(), (
        f"{int(bad.sum())} differ, e.g. got {got[~nan][bad][:4].tolist()} want {ref[~nan][bad][:4].tolist()}"
    )


@pytest.mark.parametrize("how", ["copy", "cast"])
@pytest.mark.parametrize("src", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_cast_to_fp8(fmt, src, how):
    x = probe_floats(fmt).to(getattr(torch, src))
    y = convert(x.numel(), src, determine_fp8_type(fmt), how)(x.cuda())
    same_bits(y, torch_fp8(x, fmt))  # torch's CPU conversion is the reference


@pytest.mark.parametrize("how", ["copy", "cast"])
@pytest.mark.parametrize("dst", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_cast_from_fp8(fmt, dst, how):
    x = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(FP8[fmt]).repeat(3)
    y = convert(x.numel(), determine_fp8_type(fmt), dst, how)(x.cuda())
    same_bits(y, x.to(getattr(torch, dst)))


# -- the sm_80 lowering (no fp8 mma) on this GPU ---------------------------------------------------------


def _nvcc() -> str | None:
    from tilelang.backend.target import nvcc_path

    return nvcc_path()


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_gemm_sm80_lowering_as_ptx(fmt, monkeypatch, tmp_path):
    """The sm_80 kernel (tl::gemm_ss: fp8 tiles, f16 mmas) built as compute_80 PTX,
    which the driver JIT-compiles for this GPU, so its numbers are checked here."""
    if _nvcc() is None:
        pytest.skip("nvcc not found")
    from tilelang.backend.cuda import compiler

    real = compiler.nvcc_command

    def ptx_command(src, out, arch, fast_math=False, extra=None):
        cmd = real(src, out, arch, fast_math, extra)
        cmd = ["-fatbin" if c == "-cubin" else c for c in cmd]
        return [c.replace("code=sm_80", "code=compute_80") for c in cmd]

    monkeypatch.setattr(compiler, "nvcc_command", ptx_command)
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))  # keep these PTX builds out of the real cache
    M, N, K = 500, 300, 320
    func = fp8_matmul.get_tir(M, N, K, 128, 128, 64, determine_fp8_type(fmt))
    kernel = tilelang.compile(func, out_idx=[-1], target={"kind": "cuda", "arch": "sm_80"})
    src = kernel.get_kernel_source()
    assert "tl::gemm_ss<" in src and "wgmma" not in src
    a, b = fp8_inputs(fmt, M, N, K)
    ref = a.float() @ b.float().T
    torch_assert_close(kernel(a, b), ref, rtol=1e-4, atol=1e-3, max_mismatched_ratio=0.0)  # exact f16 products


def test_mma_header_program_as_compute_80():
    """tests/gpu/cuda_headers/test_mma.cu built for compute_80: its fp8 cases (random
    operands, and every finite fp8 code) run through the pre-sm_89 f16 path."""
    nvcc = _nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found")
    out = Path(os.environ.get("TMPDIR", "/tmp")) / "tl_test_mma_compute80"
    srcdir = ROOT / "tests" / "gpu" / "cuda_headers"
    cmd = [nvcc, "-std=c++17", "-O2", "-I", str(ROOT / "tilelang" / "backend" / "cuda" / "include"), "-I",
           str(srcdir), "-gencode", "arch=compute_80,code=compute_80", str(srcdir / "test_mma.cu"), "-o", str(out)]  # fmt: skip
    built = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-5000:]
    run = subprocess.run([str(out)], capture_output=True, text=True, timeout=300)
    text = run.stdout + run.stderr
    assert run.returncode == 0 and "FAIL" not in text, text[-5000:]
    for name in ("mma_e4m3_e4m3_f32_m16n8k32", "mma_e5m2_e5m2_f32_m16n8k32", "mma_e4m3_every_finite_value",
                 "mma_e5m2_every_finite_value"):  # fmt: skip
        assert any(line.startswith("PASS") and name in line for line in text.splitlines()), (name, text[-3000:])
