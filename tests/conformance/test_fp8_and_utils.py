"""fp8 and the utility modules real programs import, written the way public TileLang
0.1.x programs use them:

- `tilelang.language.fp8.determine_fp8_type` and fp8 e4m3 / e5m2 GEMMs with fp32
  accumulation (lazy factory, `out_idx`, `in_dtype` parameter) at sizes that are not
  tile multiples, on the C backend against a float32 torch reference; lowered and
  nvcc-built for sm_80 (no fp8 mma there: exact f16 mmas) and sm_90a (the fp8 wgmma
  path), and the sm_80 lowering run by the CUDA simulator;
- fp8 casts (`T.cast`, `T.Cast`, `T.copy` between dtypes) to and from
  float16 / bfloat16 / float32, bit-exact against torch's `Tensor.to` (e4m3fn saturating);
- `tilelang.utils.tensor` (`torch_assert_close`, `get_tensor_supply`,
  `map_torch_type`, `TensorSupplyType`), `tilelang.math`, `tilelang.DataType`.
"""

from __future__ import annotations

import inspect
import math

import pytest
import torch

import tilelang
import tilelang.language as T
from conformance.util import CUDA_ARCHS, cuda_build
from tilelang.language.fp8 import determine_fp8_type, determine_torch_fp8_type
from tilelang.utils.tensor import TensorSupplyType, get_tensor_supply, map_torch_type, torch_assert_close

FP8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}


# -- fp8 GEMM -------------------------------------------------------------------------------------------


@tilelang.jit(out_idx=[-1], target="c")
def fp8_matmul(M, N, K, block_M, block_N, block_K, in_dtype, out_dtype="float32", accum_dtype="float32"):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), in_dtype),
        B: T.Tensor((N, K), in_dtype),
        C: T.Tensor((M, N), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), in_dtype)
            B_shared = T.alloc_shared((block_N, block_K), in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def fp8_inputs(fmt: str, M: int, N: int, K: int, scale: float = 4.0):
    g = torch.Generator().manual_seed(7)
    a = (torch.randn(M, K, generator=g) * scale).to(FP8[fmt])
    b = (torch.randn(N, K, generator=g) * scale).to(FP8[fmt])
    return a, b


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_gemm_cpu_matches_float32_torch(fmt):
    M, N, K = 200, 90, 150  # none a multiple of the 64-wide tiles
    in_dtype = determine_fp8_type(fmt)
    kernel = fp8_matmul(M, N, K, 64, 64, 64, in_dtype)
    a, b = fp8_inputs(fmt, M, N, K)
    c = kernel(a, b)
    assert c.dtype == torch.float32 and c.shape == (M, N)
    ref = a.float() @ b.float().T  # fp8 upcasts exactly; fp32 products of fp8 are exact
    torch_assert_close(c, ref, rtol=1e-5, atol=1e-4, max_mismatched_ratio=0.0)
    assert ref.abs().max() > 100  # the reference is not trivially small


def test_fp8_gemm_half_output():
    M, N, K = 70, 130, 96
    kernel = fp8_matmul(M, N, K, 64, 64, 32, T.float8_e4m3fn, out_dtype="float16")
    a, b = fp8_inputs("e4m3", M, N, K, scale=1.0)
    c = kernel(a, b)
    assert c.dtype == torch.float16
    torch_assert_close(c, (a.float() @ b.float().T).half(), rtol=1e-3, atol=1e-3, max_mismatched_ratio=0.0)


@pytest.mark.parametrize("arch", CUDA_ARCHS)
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_gemm_builds_for_cuda(fmt, arch):
    func = fp8_matmul.get_tir(200, 90, 150, 64, 64, 64, determine_fp8_type(fmt))
    src = cuda_build(func, arch).kernel_source
    if arch == "sm_90a":
        assert "tl::wgmma_gemm_ss<" in src  # the fp8 wgmma (QGMMA) path
    else:
        assert "tl::gemm_ss<" in src and "wgmma" not in src  # mma.sync; fp8 runs as f16 mmas below sm_89
    assert "tl::fp8_e4m3_t" in src if fmt == "e4m3" else "tl::fp8_e5m2_t" in src


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_gemm_sm80_lowering_simulated(fmt):
    from sim import simulate

    M, N, K = 72, 80, 96
    a, b = fp8_inputs(fmt, M, N, K)
    c = torch.zeros(M, N)
    simulate(fp8_matmul.get_tir(M, N, K, 64, 64, 32, determine_fp8_type(fmt)), [a, b, c], arch="sm_80")
    torch_assert_close(c, a.float() @ b.float().T, rtol=1e-5, atol=1e-4, max_mismatched_ratio=0.0)


# -- fp8 casts -------------------------------------------------------------------------------------------


@tilelang.jit(out_idx=[-1], target="c")
def convert(N, in_dtype, out_dtype, how, block=256):
    @T.prim_func
    def main(X: T.Tensor((N,), in_dtype), Y: T.Tensor((N,), out_dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            x_frag = T.alloc_fragment((block,), in_dtype)
            y_frag = T.alloc_fragment((block,), out_dtype)
            T.copy(X[bx * block], x_frag)
            if how == "copy":
                T.copy(x_frag, y_frag)  # the copy converts between dtypes
            elif how == "cast":
                for i in T.Parallel(block):
                    y_frag[i] = T.cast(x_frag[i], out_dtype)
            else:
                for i in T.Parallel(block):
                    y_frag[i] = T.Cast(out_dtype, x_frag[i])  # TVMScript argument order
            T.copy(y_frag, Y[bx * block])

    return main


def probe_floats(fmt: str) -> torch.Tensor:
    """float32 values that exercise fp8 rounding: every finite fp8 value, the exact
    midpoints between neighbours (ties to even), one float32 ulp either side, values
    past the largest finite value up to the overflow threshold and beyond, subnormal
    and underflowing magnitudes, +-0, +-inf, NaN and random values."""
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(FP8[fmt]).float()
    vals = codes[torch.isfinite(codes)].unique()
    mids = ((vals[:-1].double() + vals[1:].double()) / 2).float()
    up = torch.nextafter(mids, torch.full_like(mids, math.inf))
    down = torch.nextafter(mids, torch.full_like(mids, -math.inf))
    top = vals.max().item()
    special = torch.tensor(
        [0.0, -0.0, math.inf, -math.inf, math.nan, top * 1.03, top * 1.07, top * 1.0625, top * 1.5, 1e9, -1e9]
        + [2.0**-10, 2.0**-17, 2.0**-18, 3 * 2.0**-11, 1e-30]
    )
    rand = torch.randn(3000, generator=torch.Generator().manual_seed(3)) * 100
    x = torch.cat([vals, mids, up, down, special, -special, rand])
    return x[torch.randperm(x.numel(), generator=torch.Generator().manual_seed(5))]


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
    assert got.dtype == ref.dtype and got.shape == ref.shape
    nan = torch.isnan(ref.float())
    assert torch.equal(torch.isnan(got.float()), nan)
    ibits = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[got.element_size()]
    g, r = got.view(ibits)[~nan], ref.view(ibits)[~nan]
    bad = g != r
    assert not bad.any(), (
        f"{int(bad.sum())} of {g.numel()} differ, e.g. got {got[~nan][bad][:4].tolist()} want {ref[~nan][bad][:4].tolist()}"
    )


@pytest.mark.parametrize("how", ["copy", "cast", "Cast"])
@pytest.mark.parametrize("src", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_cast_to_fp8_matches_torch(fmt, src, how):
    x = probe_floats(fmt).to(getattr(torch, src))
    y = convert(x.numel(), src, determine_fp8_type(fmt), how)(x)
    same_bits(y, torch_fp8(x, fmt))


@pytest.mark.parametrize("how", ["copy", "cast"])
@pytest.mark.parametrize("dst", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_cast_from_fp8_matches_torch(fmt, dst, how):
    x = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(FP8[fmt]).repeat(3)  # every code, 768 elements
    y = convert(x.numel(), determine_fp8_type(fmt), dst, how)(x)
    same_bits(y, x.to(getattr(torch, dst)))


def test_fp8_to_fp8_and_saturation_spot_values():
    x = torch.tensor([448.0, 464.0, 465.0, 1e4, -math.inf, 57344.0, 61439.0, 61440.0, -7e4])
    e4 = convert(x.numel(), "float32", T.float8_e4m3fn, "cast")(x)
    e5 = convert(x.numel(), "float32", T.float8_e5m2, "cast")(x)
    assert e4.float().tolist()[:5] == [448.0, 448.0, 448.0, 448.0, -448.0]  # e4m3fn saturates (no inf)
    assert e5.float().tolist()[5:] == [57344.0, 57344.0, math.inf, -math.inf]  # e5m2 overflows to inf
    both = convert(x.numel(), T.float8_e5m2, T.float8_e4m3fn, "copy")(x.to(torch.float8_e5m2))
    same_bits(both, torch_fp8(x.to(torch.float8_e5m2), "e4m3"))


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_fp8_casts_build_for_cuda(arch):
    for fmt in ("e4m3", "e5m2"):
        for how in ("copy", "cast"):
            src = cuda_build(convert.get_tir(1000, "float16", determine_fp8_type(fmt), how), arch).kernel_source
            assert "tl::cvt<tl::fp8_" in src


def _kernel_with_cast(**cast_kwargs):
    @T.prim_func
    def main(X: T.Tensor((64,), "float32"), Y: T.Tensor((64,), "float8_e4m3fn")):
        with T.Kernel(1, threads=64) as _:
            for i in T.Parallel(64):
                Y[i] = T.cast(X[i], "float8_e4m3fn", **cast_kwargs)

    return main


def test_cast_options_beyond_round_to_nearest_are_refused():
    from tilelang.errors import TileLangError, UnsupportedError

    _kernel_with_cast(round="rn", sat=True)  # what every cast does: accepted
    with pytest.raises(UnsupportedError, match="round='rz'"):
        _kernel_with_cast(round="rz")
    with pytest.raises(UnsupportedError, match="sat=False"):
        _kernel_with_cast(sat=False)
    with pytest.raises(TileLangError, match="invalid round"):
        _kernel_with_cast(round="nearest")


# -- tilelang.language.fp8 --------------------------------------------------------------------------------


def test_determine_fp8_type(monkeypatch):
    assert determine_fp8_type() is T.float8_e4m3fn
    assert determine_fp8_type("e4m3") == "float8_e4m3fn" and determine_fp8_type("e5m2") is T.float8_e5m2
    assert determine_torch_fp8_type("e5m2") is torch.float8_e5m2
    assert T.float8_e4m3 is T.float8_e4m3fn
    with pytest.raises(ValueError, match="Unsupported FP8 format"):
        determine_fp8_type("e3m4")
    from tilelang.errors import UnsupportedError

    monkeypatch.setattr(torch.version, "hip", "6.2", raising=False)
    with pytest.raises(UnsupportedError, match="ROCm"):
        determine_fp8_type("e4m3")


# -- tilelang.utils.tensor -----------------------------------------------------------------------------


def test_torch_assert_close_public_defaults():
    sig = inspect.signature(torch_assert_close)
    defaults = {k: v.default for k, v in sig.parameters.items() if v.default is not inspect.Parameter.empty}
    assert defaults["rtol"] == 1e-2 and defaults["atol"] == 1e-3 and defaults["max_mismatched_ratio"] == 0.001
    assert defaults["check_dtype"] is True and defaults["base_name"] == "LHS" and defaults["ref_name"] == "RHS"
    import tilelang.testing

    assert tilelang.testing.torch_assert_close is torch_assert_close


def test_torch_assert_close_allows_a_ratio_of_mismatches():
    ref = torch.linspace(-2, 2, 3000)
    got = ref.clone()
    got[[5, 700, 2999]] += 0.5  # 3 of 3000 = 0.1%: int(3000 * 0.001) = 3 allowed
    assert torch_assert_close(got, ref) is True
    got[1234] -= 1.0  # a fourth
    with pytest.raises(AssertionError) as err:
        torch_assert_close(got, ref, base_name="kernel", ref_name="torch")
    msg = str(err.value)
    assert msg.startswith("Too many mismatched elements: 4 > 3 (0.10% allowed, but get 0.13%).")
    assert "First mismatch at index (5,)" in msg and "Greatest absolute difference: 1.0" in msg
    assert "at (1234,): kernel=" in msg  # the worst element is named
    torch_assert_close(got, ref, max_mismatched_ratio=0.002)  # 6 allowed


def test_torch_assert_close_checks_and_dtypes():
    a = torch.randn(50, 40)
    with pytest.raises(AssertionError, match="attribute 'dtype' do not match"):
        torch_assert_close(a.half(), a)
    torch_assert_close(a.half(), a, check_dtype=False)
    with pytest.raises(AssertionError, match="attribute 'shape' do not match"):
        torch_assert_close(a, a.T)
    f8 = a.to(torch.float8_e4m3fn)
    torch_assert_close(f8, f8.float(), check_dtype=False, rtol=0, atol=0)  # fp8 compares (upcast)
    with pytest.raises(AssertionError, match="Too many mismatched elements"):
        torch_assert_close(f8.float(), a, rtol=1e-3, atol=1e-3)  # fp8 rounding is far beyond 0.1%


def _param(dtype, shape=(64, 48)):
    from tilelang.engine.param import KernelParam

    return KernelParam("x", tilelang.DataType(dtype), shape)


def test_get_tensor_supply_per_supply_type():
    torch.manual_seed(0)
    integer = get_tensor_supply(device="cpu")  # public default: TensorSupplyType.Integer
    x = integer(_param("float16"))
    assert x.dtype == torch.float16 and x.shape == (64, 48)
    assert set(x.unique().tolist()) <= {-2.0, -1.0, 0.0, 1.0, 2.0}
    f8 = integer(_param("float8_e4m3fn")).float()
    assert f8.min() >= -128 and f8.max() <= 128 and f8.abs().max() > 50  # randint[-128, 128) cast to fp8
    assert set(integer(_param("uint8")).unique().tolist()) <= {0, 1, 2}
    u = get_tensor_supply(TensorSupplyType.Uniform, device="cpu")(_param("float32"))
    assert u.min() >= -1 and u.max() <= 1 and u.std() > 0.3
    assert torch.equal(
        get_tensor_supply(TensorSupplyType.Uniform, device="cpu")(_param("int8")), torch.ones(64, 48, dtype=torch.int8)
    )
    n = get_tensor_supply(TensorSupplyType.Normal, device="cpu")(_param("float32", (4000,)))
    assert abs(n.mean().item() + 1) < 0.1  # normal(mean=-1, std=1)
    r = get_tensor_supply(TensorSupplyType.Randn, device="cpu")(_param("bfloat16", (4000,)))
    assert r.dtype == torch.bfloat16 and abs(r.float().mean().item()) < 0.1
    assert torch.count_nonzero(get_tensor_supply(TensorSupplyType.Zero, device="cpu")(_param("float32"))) == 0
    assert torch.all(get_tensor_supply(TensorSupplyType.One, device="cpu")(_param("float8_e5m2")).float() == 1)
    auto = get_tensor_supply(TensorSupplyType.Auto, device="cpu")(_param("float16")).float()
    assert auto.min() >= -1 and auto.max() <= 1 and len(auto.unique()) > 100


def test_map_torch_type():
    assert map_torch_type("float16") is torch.float16
    assert map_torch_type("e4m3_float8") is torch.float8_e4m3fn
    assert map_torch_type("float8_e4m3") is torch.float8_e4m3fn
    assert map_torch_type("e5m2_float8") is torch.float8_e5m2
    assert map_torch_type("float8_e4m3fnuz") is torch.float8_e4m3fnuz
    assert map_torch_type(T.bfloat16) is torch.bfloat16
    with pytest.raises(TypeError, match="names no torch dtype"):
        map_torch_type("float7")


# -- tilelang.math and tilelang.DataType -----------------------------------------------------------------


def test_math_helpers():
    import tilelang.math as tm

    assert [tm.next_power_of_2(x) for x in (1, 2, 3, 5, 33, 64, 1000)] == [1, 2, 4, 8, 64, 64, 1024]
    assert [tm.cdiv(a, 32) for a in (1, 32, 33, 1000)] == [1, 1, 2, 32]
    assert tilelang.cdiv is tm.cdiv and tilelang.next_power_of_2 is tm.next_power_of_2


def test_math_helpers_size_a_kernel():
    N = 1000
    block = tilelang.next_power_of_2(200)  # 256
    x = torch.randn(N)
    y = convert(N, "float32", "float16", "cast", block=block)(x)
    assert tilelang.cdiv(N, block) == 4
    torch.testing.assert_close(y, x.half(), rtol=0, atol=0)


def test_datatype():
    D = tilelang.DataType
    assert D is T.dtype("float16").__class__ and isinstance(T.float8_e5m2, D)
    h = D("float16")
    assert (h.bits, h.lanes, h.itemsize, h.type_code) == (16, 1, 2, D.TypeCode.FLOAT)
    v = D("float16x4")
    assert (v.bits, v.lanes, v.itemsize) == (16, 4, 8) and v.with_lanes(1) is h
    assert D("bfloat16").type_code == D.TypeCode.BFLOAT == 4
    assert D("int8").type_code == 0 and D("uint32").type_code == 1 and D("bool").type_code == 6
    e4, e5 = D("float8_e4m3fn"), D("float8_e5m2")
    assert (e4.type_code, e5.type_code) == (10, 12) and e4.is_float8 and e5.is_float8 and not h.is_float8
    assert D(torch.float8_e4m3fn) is e4 and D("e4m3_float8") is e4 and e4.as_torch() is torch.float8_e4m3fn
    assert D("float") == "float32" and D(int) == "int32" and str(e5) == "float8_e5m2"
    with pytest.raises(TypeError, match="unknown dtype"):
        D("float7")
