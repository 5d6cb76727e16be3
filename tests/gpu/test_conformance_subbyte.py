"""GPU twin of tests/conformance/test_subbyte.py: the same sub-byte kernels (casts, odd-width
repacking, int4 / fp4 dequantize-then-GEMM, int4 × int4 → int32 on mma.sync m16n8k64) run on
CUDA and are compared with torch and with the CPU backend's rounding."""

from __future__ import annotations

import math

import pytest
import torch
from conformance import subbyte_kernels as K

import tilelang
import tilelang.language as T
from tilelang.quantize import fp4_codes, fp4_values, pack_fp4, pack_int4, unpack_fp4, unpack_int4

pytestmark = pytest.mark.cuda

M, N, KD = 37, 200, 320


def _build(factory, *args, out_idx=(-1,)):
    return tilelang.compile(factory.get_tir(*args), out_idx=list(out_idx), target="cuda")


def test_decode_all_codes_cuda():
    codes = torch.arange(16, dtype=torch.uint8).repeat(5)[:74]
    want = fp4_values(codes)
    f32, f16, bf16 = _build(K.decode, 74, T.float4_e2m1fn, out_idx=(1, 2, 3))(pack_fp4(want).cuda())
    assert torch.equal(f32.cpu(), want) and torch.equal(torch.signbit(f32.cpu()), torch.signbit(want))
    assert torch.equal(f16.float().cpu(), want) and torch.equal(bf16.float().cpu(), want)
    for wd, lo in ((T.int4, -8), (T.uint4, 0)):
        vals = torch.arange(lo, lo + 16).repeat(5)[:74]
        f32, f16, _ = _build(K.decode, 74, wd, out_idx=(1, 2, 3))(pack_int4(vals, signed=lo < 0).cuda())
        assert torch.equal(f32.cpu(), vals.float()) and torch.equal(f16.float().cpu(), vals.float())


@pytest.mark.parametrize("src", ["float32", "float16", "bfloat16"])
def test_encode_fp4_cuda_matches_reference(src):
    g = torch.Generator().manual_seed(5)
    x = torch.cat([
        torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0, -0.0, -0.1, math.inf, -math.inf, math.nan, 6.0]),
        torch.randn(984, generator=g) * 4,
    ]).to(getattr(torch, src))  # fmt: skip
    y = _build(K.encode, 998, src, T.float4_e2m1fn)(x.cuda())
    assert torch.equal(fp4_codes(unpack_fp4(y.cpu())), fp4_codes(x.float()))


def test_encode_int4_cuda_wraps():
    x = torch.arange(-20, 20, dtype=torch.int32)
    y = _build(K.encode, 40, "int32", T.int4)(x.cuda())
    assert torch.equal(unpack_int4(y.cpu()).long(), ((x.long() + 8) % 16) - 8)


@pytest.mark.parametrize("wd", [T.int4, T.float4_e2m1fn])
def test_neighbouring_nibbles_cuda(wd):
    g = torch.Generator().manual_seed(7)
    x = pack_int4(torch.randint(-8, 8, (13, 46), generator=g)) if wd is T.int4 else pack_fp4(torch.randn(13, 46) * 3)
    k = _build(K.repack, 13, 46, wd)
    for _ in range(5):
        assert torch.equal(k(x.cuda()).cpu(), x)


@pytest.mark.parametrize("wd,group", [(T.int4, 32), (T.int4, 64), (T.float4_e2m1fn, 32), (T.float4_e2m1fn, 64)])
def test_dequant_gemm_cuda(wd, group):
    A, B, S, ref = K.dequant_inputs(M, N, KD, wd, group, device="cuda")
    C = _build(K.dequant_gemm, M, N, KD, wd, group)(A, B, S)
    torch.testing.assert_close(C.float(), ref, atol=2e-2, rtol=2e-2)


def test_dequant_gemm_from_registers_cuda():
    A, B, S, ref = K.dequant_inputs(M, N, KD, T.int4, 64, device="cuda")
    C = _build(K.dequant_gemm_local, M, N, KD, 64)(A, B, S)
    torch.testing.assert_close(C.float(), ref, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("ad,bd", [(T.int4, T.int4), (T.uint4, T.int4), (T.int4, T.uint4), (T.uint4, T.uint4)])
def test_int4_gemm_exact_cuda(ad, bd):
    a, b, ref = K.int4_inputs(M, N, KD, signed_a=ad is T.int4, signed_b=bd is T.int4, device="cuda")
    C = _build(K.int4_gemm, M, N, KD, ad, bd)(a, b)
    assert C.dtype is torch.int32 and torch.equal(C.long(), ref)


def test_int4_gemm_larger_tiles_cuda():
    Mb, Nb, Kb = 300, 264, 1024
    a, b, ref = K.int4_inputs(Mb, Nb, Kb, device="cuda")
    f = K.int4_gemm.get_tir(Mb, Nb, Kb, T.int4, T.int4, 128, 128, 256, 3, 256)
    C = tilelang.compile(f, out_idx=[-1], target="cuda")(a, b)
    assert torch.equal(C.long(), ref)


@pytest.mark.parametrize("storage", ["uint8", "int8"])
@pytest.mark.parametrize("mode", ["unsigned", "signed", "int"])
def test_quantize_converters_cuda(mode, storage):
    g = torch.Generator().manual_seed(11)
    codes = torch.randint(0, 16, (37, 200), generator=g)
    packed = pack_int4(codes, signed=False).view(getattr(torch, storage))
    W = _build(K.decode_u8, 37, 200, mode, storage)(packed.cuda())
    want = {"unsigned": codes, "signed": codes - 8, "int": ((codes + 8) % 16) - 8}[mode]
    assert torch.equal(W.float().cpu(), want.float())


@pytest.mark.parametrize("block", [(2, 8), (3, 5)])
def test_repack_paired_and_atomic_stores_cuda(block):
    """8-wide tiles store byte pairs (tl::st_nib_pair), 5-wide ones nibble by nibble: both exact."""
    g = torch.Generator().manual_seed(9)
    x = pack_int4(torch.randint(-8, 8, (14, 46), generator=g))
    f = K.repack.get_tir(14, 46, T.int4, block[0], block[1], 32)
    k = tilelang.compile(f, out_idx=[-1], target="cuda")
    for _ in range(5):
        assert torch.equal(k(x.cuda()).cpu(), x)
