"""Sub-byte dtypes (`T.int4`, `T.uint4`, `T.float4_e2m1fn`): packed storage, casts with the
public rounding, dequantize-then-GEMM and int4 tensor-core GEMMs — CPU backend numerics vs torch,
nvcc builds for sm_80 / sm_90a, and the runtime's packed-tensor argument checks."""

from __future__ import annotations

import math
import re
import subprocess

import pytest
import torch

import tilelang
import tilelang.language as T
from conformance import subbyte_kernels as K
from conformance.util import CUDA_ARCHS, cuda_build
from tilelang.errors import ArgumentError, ArgumentValueError, TileLangError, VerifyError
from tilelang.quantize import fp4_codes, fp4_values, pack_fp4, pack_int4, unpack_fp4, unpack_int4

TARGET = "c"


# ==================================================================================================
# dtype API and packing helpers
# ==================================================================================================
def test_dtype_attributes():
    for dt, kind in ((T.int4, "int"), (T.uint4, "uint"), (T.float4_e2m1fn, "float")):
        assert dt.bits == 4 and dt.lanes == 1 and dt.kind == kind and dt.is_subbyte
        assert dt.bytes == 1  # rounded up, as tvm.DataType.bytes
        assert [dt.storage_bytes(n) for n in (0, 1, 2, 7, 320)] == [0, 1, 1, 4, 160]
        assert dt.as_torch() is torch.int8
        assert "two per byte" in dt.__doc__ and "docs/subbyte.md" in dt.__doc__
    assert T.float4_e2m1fn.is_float4() and not T.int4.is_float4() and not T.float16.is_float4()
    assert T.dtype("float4_e2m1fn") is T.float4_e2m1fn and T.dtype("int4") is T.int4
    assert not T.int8.is_subbyte and T.int8.storage_bytes(3) == 3


def test_pack_unpack_round_trips():
    g = torch.Generator().manual_seed(3)
    x = torch.randint(-8, 8, (5, 38), generator=g)
    p = pack_int4(x)
    assert p.dtype is torch.int8 and p.shape == (5, 19)
    assert torch.equal(unpack_int4(p).long(), x)
    assert torch.equal(unpack_int4(p.view(torch.uint8)).long(), x)
    # low nibble first: element 0 in bits 0-3
    assert pack_int4(torch.tensor([1, -2])).view(torch.uint8).item() == 0xE1
    u = torch.randint(0, 16, (3, 4), generator=g)
    assert torch.equal(unpack_int4(pack_int4(u, signed=False), signed=False).long(), u)
    codes = torch.arange(16, dtype=torch.uint8).repeat(2)
    vals = fp4_values(codes)
    assert torch.equal(fp4_codes(vals), codes)  # every code, -0 included, survives
    assert torch.equal(unpack_fp4(pack_fp4(vals)), vals)
    if hasattr(torch, "float4_e2m1fn_x2"):
        assert torch.equal(unpack_fp4(pack_fp4(vals).view(torch.float4_e2m1fn_x2)), vals)
    with pytest.raises(ValueError, match="even last dimension"):
        pack_int4(torch.zeros(3, 5, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"\[-8, 7\]"):
        pack_int4(torch.tensor([8, 0]))
    with pytest.raises(TypeError, match="integer tensor"):
        pack_int4(torch.zeros(2))


# float32 -> fp4: round to nearest, ties to even, saturate at ±6, NaN -> +6 (__nv_cvt_float_to_fp4)
ROUNDING = [
    (0.0, 0x0), (-0.0, 0x8), (0.1, 0x0), (-0.1, 0x8), (0.25, 0x0), (0.2500001, 0x1), (0.5, 0x1),
    (0.75, 0x2), (0.7499999, 0x1), (1.25, 0x2), (1.2500001, 0x3), (1.75, 0x4), (2.5, 0x4),
    (2.5000002, 0x5), (3.5, 0x6), (3.4999998, 0x5), (5.0, 0x6), (5.0000005, 0x7), (6.0, 0x7),
    (7.0, 0x7), (1e30, 0x7), (math.inf, 0x7), (-0.75, 0xA), (-5.0, 0xE), (-100.0, 0xF),
    (-math.inf, 0xF), (math.nan, 0x7),
]  # fmt: skip


def test_reference_rounding_table():
    x = torch.tensor([v for v, _ in ROUNDING], dtype=torch.float32)
    assert fp4_codes(x).tolist() == [c for _, c in ROUNDING]


# ==================================================================================================
# casts in kernels (CPU backend)
# ==================================================================================================
def test_decode_all_fp4_codes():
    codes = torch.arange(16, dtype=torch.uint8).repeat(5)[:74]  # 74: not a multiple of the block
    x = pack_fp4(fp4_values(codes))
    f32, f16, bf16 = _decode(74, T.float4_e2m1fn)(x)
    want = fp4_values(codes)
    assert torch.equal(f32, want) and torch.equal(torch.signbit(f32), torch.signbit(want))
    assert torch.equal(f16.float(), want) and torch.equal(bf16.float(), want)


def test_decode_all_int4_values():
    for wd, lo in ((T.int4, -8), (T.uint4, 0)):
        vals = torch.arange(lo, lo + 16).repeat(5)[:74]
        f32, f16, bf16 = _decode(74, wd)(pack_int4(vals, signed=lo < 0))
        assert torch.equal(f32, vals.float()) and torch.equal(f16.float(), vals.float())
        assert torch.equal(bf16.float(), vals.float())


@pytest.mark.parametrize("src", ["float32", "float16", "bfloat16"])
def test_encode_fp4_rounds_to_nearest_even_with_saturation(src):
    vals = [(v, c) for v, c in ROUNDING if src == "float32" or _exact_in(v, src)]
    n = 2 * ((len(vals) + 1) // 2)
    x = torch.tensor([v for v, _ in vals] + [0.0] * (n - len(vals)), dtype=torch.float32).to(getattr(torch, src))
    y = _encode(n, src, T.float4_e2m1fn)(x)
    assert y.dtype is torch.int8 and y.shape == (n // 2,)
    got = fp4_codes(unpack_fp4(y))[: len(vals)].tolist()
    assert got == [c for _, c in vals]


def test_encode_int4_wraps_and_round_trips():
    x = torch.arange(-20, 20, dtype=torch.int32)
    y = _encode(40, "int32", T.int4)(x)
    assert torch.equal(unpack_int4(y).long(), ((x.long() + 8) % 16) - 8)
    y = _encode(40, "int32", T.uint4)(x)
    assert torch.equal(unpack_int4(y, signed=False).long(), x.long() % 16)


def test_encode_random_floats_matches_reference():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(998, generator=g) * 4
    y = _encode(998, "float32", T.float4_e2m1fn)(x)
    assert torch.equal(y, pack_fp4(x))


@pytest.mark.parametrize("wd", [T.int4, T.float4_e2m1fn])
def test_neighbouring_nibbles_from_different_blocks(wd):
    """Odd tile widths (5 columns, 3 rows): two blocks write the two halves of many bytes; no
    nibble is lost (global stores update bytes atomically)."""
    g = torch.Generator().manual_seed(7)
    if wd is T.int4:
        x = pack_int4(torch.randint(-8, 8, (13, 46), generator=g))
    else:
        x = pack_fp4(torch.randn(13, 46, generator=g) * 3)
    k = tilelang.compile(K.repack.get_tir(13, 46, wd), out_idx=[-1], target=TARGET)
    for _ in range(3):
        assert torch.equal(k(x), x)


def _decode(n, wd):
    return tilelang.compile(K.decode.get_tir(n, wd), out_idx=[1, 2, 3], target=TARGET)


def _encode(n, src, wd):
    return tilelang.compile(K.encode.get_tir(n, src, wd), out_idx=[-1], target=TARGET)


def _exact_in(v, dtype):
    t = torch.tensor([v], dtype=torch.float32)
    return math.isnan(v) or torch.equal(t.to(getattr(torch, dtype)).float(), t)


# ==================================================================================================
# dequantize-then-GEMM and int4 GEMM (CPU backend) at sizes that are no tile multiples
# ==================================================================================================
M, N, KD = 37, 200, 320


@pytest.mark.parametrize("wd,group", [(T.int4, 32), (T.int4, 64), (T.float4_e2m1fn, 32), (T.float4_e2m1fn, 64)])
def test_dequant_gemm_cpu(wd, group):
    A, B, S, ref = K.dequant_inputs(M, N, KD, wd, group)
    k = tilelang.compile(K.dequant_gemm.get_tir(M, N, KD, wd, group), out_idx=[-1], target=TARGET)
    C = k(A, B, S)
    assert C.shape == (M, N) and C.dtype is torch.float16
    torch.testing.assert_close(C.float(), ref, atol=2e-2, rtol=2e-2)


def test_dequant_gemm_from_registers_cpu():
    A, B, S, ref = K.dequant_inputs(M, N, KD, T.int4, 64)
    k = tilelang.compile(K.dequant_gemm_local.get_tir(M, N, KD, 64), out_idx=[-1], target=TARGET)
    torch.testing.assert_close(k(A, B, S).float(), ref, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("ad,bd", [(T.int4, T.int4), (T.uint4, T.int4)])
def test_int4_gemm_exact_cpu(ad, bd):
    a, b, ref = K.int4_inputs(M, N, KD, signed_a=ad is T.int4, signed_b=bd is T.int4)
    k = tilelang.compile(K.int4_gemm.get_tir(M, N, KD, ad, bd), out_idx=[-1], target=TARGET)
    C = k(a, b)
    assert C.dtype is torch.int32 and torch.equal(C.long(), ref)


def test_eager_style_binds_the_logical_dimension():
    """A T.const read from a packed tensor's last dimension is the logical size (twice the bytes)."""

    @tilelang.jit(target=TARGET)
    def row_sums(X, block=16):
        n, k = T.const("n, k")
        X: T.Tensor((n, k), T.int4)
        Y = T.empty((n,), T.int32)
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            acc = T.alloc_fragment((block,), T.int32)
            T.clear(acc)
            for j in T.serial(k):
                for i in T.Parallel(block):
                    acc[i] += X[bx * block + i, j]
            T.copy(acc, Y[bx * block])
        return Y

    x = torch.randint(-8, 8, (21, 30))
    assert torch.equal(row_sums(pack_int4(x)).long(), x.sum(1))


# ==================================================================================================
# argument checks
# ==================================================================================================
def test_argument_checks():
    k = _decode(74, T.int4)
    with pytest.raises(ArgumentError, match=r"int4 is packed two elements per byte.*int8 / uint8.*pack_int4"):
        k(torch.zeros(74, dtype=torch.float16))
    with pytest.raises(ArgumentError, match=r"int4 is packed"):
        k(torch.zeros(37, dtype=torch.int32))
    with pytest.raises(ArgumentValueError, match=r"dimension 0 must be 74"):
        k(torch.zeros(74, dtype=torch.int8))  # the logical length: one byte per element is wrong
    f32, _, _ = k(torch.zeros(37, dtype=torch.uint8))  # uint8 storage is accepted too
    assert torch.equal(f32, torch.zeros(74))
    kf = _decode(74, T.float4_e2m1fn)
    with pytest.raises(ArgumentError, match="pack_fp4"):
        kf(torch.zeros(74, dtype=torch.float32))
    if hasattr(torch, "float4_e2m1fn_x2"):
        f32, _, _ = kf(pack_fp4(torch.ones(74)).view(torch.float4_e2m1fn_x2))
        assert torch.equal(f32, torch.ones(74))


def test_odd_last_dimension_is_an_error():
    with pytest.raises(VerifyError, match="odd last dimension 75"):
        _decode(75, T.int4)


def test_four_bit_scalar_parameter_is_unsupported():
    @T.prim_func
    def main(x: T.int4, Y: T.Tensor((2,), T.int32)):
        with T.Kernel(1, threads=1):
            Y[0] = T.cast(x, T.int32)

    with pytest.raises(TileLangError, match="4-bit scalars cannot be passed"):
        tilelang.compile(main, target=TARGET)


# ==================================================================================================
# CUDA: nvcc builds for sm_80 / sm_90a
# ==================================================================================================
def _ptx(art, arch):
    """PTX of a built kernel's source (the instructions its headers expand to)."""
    import os
    import tempfile

    from tilelang.backend.cuda.compiler import nvcc_command

    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "k.cu"), os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(art.kernel_source)
        cmd = nvcc_command(src, out, arch)
        cmd[cmd.index("-cubin")] = "-ptx"
        subprocess.run(cmd, check=True, capture_output=True, timeout=300)
        with open(out) as f:
            return f.read()


@pytest.mark.parametrize("arch", CUDA_ARCHS)
@pytest.mark.parametrize("wd", [T.int4, T.float4_e2m1fn])
def test_dequant_gemm_builds_for_cuda(arch, wd):
    art = cuda_build(K.dequant_gemm.get_tir(M, N, KD, wd, 32), arch)
    src = art.kernel_source
    assert "uint8_t* __restrict__ B" in src  # packed bytes
    assert "tl::ld_i4(B_shared" in src if wd is T.int4 else "tl::e2m1_to_f32(tl::ld_u4(B_shared" in src
    # the packed tile moves as whole bytes, 16 at a time (32 elements), by cp.async
    assert re.search(r"tl::cp_async_zfill<16>\((reinterpret_cast<tl::int4x2_t\*>\()?B_shared \+ \(\(.*\) >> 1\)", src)
    assert ("tl::wgmma_gemm_ss" if arch == "sm_90a" else "tl::gemm_ss") in src


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_dequant_gemm_from_registers_builds_for_cuda(arch):
    src = cuda_build(K.dequant_gemm_local.get_tir(M, N, KD, 64), arch).kernel_source
    assert re.search(r"tl::st_nib\(B_local", src)  # registers: a plain read-modify-write


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_int4_gemm_uses_mma_m16n8k64(arch):
    art = cuda_build(K.int4_gemm.get_tir(M, N, KD), arch)
    src = art.kernel_source
    assert "tl::gemm_ss<64, 64, 64, " in src  # K counted in bytes: 128 int4
    assert "reinterpret_cast<tl::int4x2_t*>(A_shared" in src and "wgmma" not in src
    assert "tl::SmemLayout<64, 64, 1, 64>" in src  # the byte tile's 64-byte swizzle
    ptx = _ptx(art, arch)
    assert "mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32" in ptx
    art = cuda_build(K.int4_gemm.get_tir(M, N, KD, T.uint4, T.int4), arch)
    assert "mma.sync.aligned.m16n8k64.row.col.s32.u4.s4.s32" in _ptx(art, arch)


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_casts_build_for_cuda(arch):
    for wd in (T.int4, T.uint4, T.float4_e2m1fn):
        assert "tl/subbyte.h" in cuda_build(K.decode.get_tir(74, wd), arch).kernel_source
        src = cuda_build(K.encode.get_tir(74, "float32", wd), arch).kernel_source
        assert "tl::st_nib_atomic(Y" in src
        src = cuda_build(K.repack.get_tir(13, 46, wd), arch).kernel_source
        assert "tl::st_nib_atomic(S" in src and "tl::st_nib(F" in src  # odd widths: nibble by nibble


# ==================================================================================================
# CUDA lowering executed by the simulator (per-thread IR on the CPU; packed tiles as elements)
# ==================================================================================================
@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_int4_gemm_simulated(arch):
    """The m16n8k64 path end to end: the 4-bit operand tiles' shared layout (flatten_shared) and
    the byte layout the gemm template reads (SmemLayout of K/2 bytes, lifted to nibble pairs)
    agree, the accumulator scatter is right, and the result is exact."""
    from sim import simulate

    Ms, Ns, Ks = 37, 72, 192
    g = torch.Generator().manual_seed(1)
    a, b = torch.randint(-8, 8, (Ms, Ks), generator=g), torch.randint(0, 16, (Ns, Ks), generator=g)
    c = torch.zeros(Ms, Ns, dtype=torch.int32)
    f = K.int4_gemm.get_tir(Ms, Ns, Ks, T.int4, T.uint4, 64, 64, 128, 2, 128)
    simulate(f, [a.to(torch.int8), b.to(torch.int8), c], arch=arch)
    assert torch.equal(c.long(), a.long() @ b.long().T)


@pytest.mark.parametrize("arch", CUDA_ARCHS)
@pytest.mark.parametrize("wd", [T.int4, T.float4_e2m1fn])
def test_dequant_gemm_simulated(arch, wd):
    from sim import simulate

    Ms, Ns, Ks, grp = 37, 72, 192, 32
    A, B, S, ref = K.dequant_inputs(Ms, Ns, Ks, wd, grp)
    logical = unpack_int4(B).float() if wd is T.int4 else unpack_fp4(B)  # the simulator holds elements
    C = torch.zeros(Ms, Ns, dtype=torch.float16)
    simulate(K.dequant_gemm.get_tir(Ms, Ns, Ks, wd, grp), [A, logical, S, C], arch=arch)
    torch.testing.assert_close(C.float(), ref, atol=2e-2, rtol=2e-2)


# ==================================================================================================
# the language server's view: packed tiles count half a byte per element
# ==================================================================================================
ANALYSIS_SOURCE = """
import tilelang.language as T

def int4_gemm(M=128, N=128, K=256, block_M=64, block_N=64, block_K=128):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.int4), B: T.Tensor((N, K), T.int4), C: T.Tensor((M, N), T.int32)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), T.int4)
            B_shared = T.alloc_shared((block_N, block_K), T.int4)
            C_local = T.alloc_fragment((block_M, block_N), T.int32)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])
    return main
"""


def test_analysis_counts_packed_shared_bytes(tmp_path):
    from tilelang.analysis import api

    path = str(tmp_path / "int4_gemm.py")
    info = api.analyze_function(ANALYSIS_SOURCE, path, "int4_gemm", target="sm_80")
    assert not [d for d in info.diagnostics if d.severity == "error"], info.diagnostics
    breakdown = dict(info.resources.shared_breakdown)
    assert breakdown["A_shared"] == 2 * 64 * 128 // 2  # two stages of 64×128 int4 = 4 KiB each
    assert breakdown["B_shared"] == 2 * 64 * 128 // 2


# ==================================================================================================
# tilelang.quantize converters over uint8 / int8 storage (public programs without 4-bit dtypes)
# ==================================================================================================
@pytest.mark.parametrize("storage", ["uint8", "int8"])
@pytest.mark.parametrize("mode", ["unsigned", "signed", "int"])
def test_quantize_converters(mode, storage):
    g = torch.Generator().manual_seed(11)
    codes = torch.randint(0, 16, (37, 200), generator=g)
    packed = pack_int4(codes, signed=False).view(getattr(torch, storage))
    k = tilelang.compile(K.decode_u8.get_tir(37, 200, mode, storage), out_idx=[-1], target=TARGET)
    want = {"unsigned": codes, "signed": codes - 8, "int": ((codes + 8) % 16) - 8}[mode]
    assert torch.equal(k(packed).float(), want.float())


def test_quantize_converter_checks_the_storage_dtype():
    from tilelang.errors import DSLError
    from tilelang.ir.buffer import make_buffer
    from tilelang.quantize import _tir_packed_to_unsigned_convert

    b = make_buffer("B", (4,), "int8")
    with pytest.raises(DSLError, match="made for uint8 storage"):
        _tir_packed_to_unsigned_convert("uint", 8)(4, b[0], 0, "float16")


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_quantize_converters_build_for_cuda(arch):
    src = cuda_build(K.decode_u8.get_tir(37, 200, "int", "int8"), arch).kernel_source
    assert "B_shared" in src and "tl::ld_" not in src  # plain byte loads and shifts


# ==================================================================================================
# CUDA: a thread's neighbouring nibble stores become one byte store (pair_nibble_stores)
# ==================================================================================================
@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_nibble_pairs_become_byte_stores(arch):
    from sim import simulate

    g = torch.Generator().manual_seed(9)
    x = torch.randint(-8, 8, (14, 46), generator=g)
    # 8-wide tiles: each thread stores 8 neighbouring elements of the shared tile, at even offsets
    f = K.repack.get_tir(14, 46, T.int4, 2, 8, 32)
    src = cuda_build(f, arch).kernel_source
    assert re.search(r"tl::st_nib_pair\(S, ", src) and "tl::st_nib_atomic(S" not in src
    y = torch.zeros(14, 46, dtype=torch.int8)
    simulate(f, [x.to(torch.int8), y], arch=arch)
    assert torch.equal(y.long(), x)
    # 5-wide tiles: a thread's run may start at an odd element — every nibble stays atomic
    f = K.repack.get_tir(14, 46, T.int4, 3, 5, 32)
    src = cuda_build(f, arch).kernel_source
    assert "tl::st_nib_pair" not in src and "tl::st_nib_atomic(S" in src
    y = torch.zeros(14, 46, dtype=torch.int8)
    simulate(f, [x.to(torch.int8), y], arch=arch)
    assert torch.equal(y.long(), x)


def test_fp4_gemm_asks_for_dequantization():
    @T.prim_func
    def main(A: T.Tensor((32, 64), T.float4_e2m1fn), B: T.Tensor((32, 64), T.float4_e2m1fn), C: T.Tensor((32, 32))):
        with T.Kernel(1, threads=128):
            As = T.alloc_shared((32, 64), T.float4_e2m1fn)
            Bs = T.alloc_shared((32, 64), T.float4_e2m1fn)
            Cl = T.alloc_fragment((32, 32), T.float32)
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, Cl, transpose_B=True)
            T.copy(Cl, C)

    with pytest.raises(TileLangError, match="no form for float4_e2m1fn inputs.*dequantize"):
        tilelang.compile(main, target=TARGET)


def test_profiler_supplies_packed_inputs():
    """The profiler's generated inputs for 4-bit parameters are packed byte tensors the argument
    checks accept (do_bench / assert_allclose run on them)."""
    k = tilelang.compile(K.dequant_gemm.get_tir(M, N, KD, T.float4_e2m1fn, 32), out_idx=[-1], target=TARGET)
    from tilelang.utils.tensor import get_tensor_supply

    b = get_tensor_supply("auto")(k.params[1])
    assert b.dtype is torch.int8 and tuple(b.shape) == (N, KD // 2)
    k.get_profiler().assert_allclose(
        lambda a, b, s: (a.float() @ (unpack_fp4(b) * s.float().repeat_interleave(32, 1)).half().float().T).half(),
        atol=2e-2,
        rtol=2e-2,
    )


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_dequant_gemm_from_registers_simulated(arch):
    """The packed tile copied into a fragment (per-thread registers, plain read-modify-write)."""
    from sim import simulate

    Ms, Ns, Ks, grp = 37, 72, 192, 64
    A, B, S, ref = K.dequant_inputs(Ms, Ns, Ks, T.int4, grp)
    C = torch.zeros(Ms, Ns, dtype=torch.float16)
    simulate(K.dequant_gemm_local.get_tir(Ms, Ns, Ks, grp), [A, unpack_int4(B).float(), S, C], arch=arch)
    torch.testing.assert_close(C.float(), ref, atol=2e-2, rtol=2e-2)
