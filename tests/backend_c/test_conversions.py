"""float16 / bfloat16 / float8 storage conversions: every bit pattern decodes
like torch, and float32 values (including exact ties and out-of-range values)
encode like torch's round-to-nearest-even casts; float64 sources round once,
correctly (checked against an exact Python reference)."""

import math

import pytest
import torch

from tilelang.backend.c.floatfmt import encode, round_to
from tilelang.ir import Copy

from .irb import full, kernel, region, tensor

SMALL = {
    "float16": (torch.float16, torch.int16, 16),
    "bfloat16": (torch.bfloat16, torch.int16, 16),
    "float8_e4m3fn": (torch.float8_e4m3fn, torch.uint8, 8),
    "float8_e5m2": (torch.float8_e5m2, torch.uint8, 8),
}


def cast_kernel(src_dtype: str, dst_dtype: str, n: int, block: int = 4096):
    """dst[i] = cast(src[i]) through T.copy tiles (global -> fragment -> global)."""
    from .irb import alloc

    S, D = tensor("S", (n,), src_dtype), tensor("D", (n,), dst_dtype)

    def body(bx):
        frag, a = alloc("frag", (block,), src_dtype)
        return [
            a,
            Copy(region(S, (bx * block, block)), full(frag)),
            Copy(full(frag), region(D, (bx * block, block))),
        ]

    return kernel(f"cast_{src_dtype}_{dst_dtype}", (S, D), ((n + block - 1) // block,), body)


def all_patterns(name: str) -> torch.Tensor:
    tdt, idt, bits = SMALL[name]
    if bits == 16:
        return torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(tdt)
    return torch.arange(256, dtype=torch.int32).to(torch.uint8).view(tdt)


def same_values(got: torch.Tensor, ref: torch.Tensor) -> None:
    """Bitwise equal, except that any NaN matches any NaN (payloads differ between libraries)."""
    g, r = got.double(), ref.double()
    nan = torch.isnan(r)
    assert torch.equal(torch.isnan(g), nan)
    bad = ~nan & ((g != r) | (torch.signbit(g) != torch.signbit(r)))
    assert not bad.any(), f"{int(bad.sum())} mismatches, e.g. got {g[bad][:4].tolist()} want {r[bad][:4].tolist()}"


@pytest.mark.parametrize("name", list(SMALL))
def test_decode_every_bit_pattern(build, name):
    x = all_patterns(name)
    _, run = build(cast_kernel(name, "float32", x.numel()))
    out = torch.empty(x.numel())
    run(x, out)
    same_values(out, x.float())


def probe_values(name: str) -> torch.Tensor:
    """float32 values around every representable value of the format: the
    values, the exact midpoints (ties), one float32 ulp either side of them,
    out-of-range and special values, and random values over a wide range."""
    tdt = SMALL[name][0]
    vals = all_patterns(name).float()
    vals = vals[torch.isfinite(vals)].unique()
    mids = (vals[:-1].double() + vals[1:].double()) / 2
    mids32 = mids.float()
    up = torch.nextafter(mids32, torch.full_like(mids32, math.inf))
    down = torch.nextafter(mids32, torch.full_like(mids32, -math.inf))
    fmax = vals.max().item()
    special = torch.tensor(
        [
            0.0,
            -0.0,
            math.inf,
            -math.inf,
            math.nan,
            fmax * 1.01,
            -fmax * 1.01,
            fmax * 4,
            1e30,
            -1e30,
            3e38,
            1e-30,
            -1e-30,
            1e-45,
        ]
    )
    g = torch.Generator().manual_seed(0)
    rnd = torch.randn(20000, generator=g) * torch.exp2(torch.randint(-30, 30, (20000,), generator=g).float())
    out = torch.cat([vals, mids32, up, down, special, rnd])
    del tdt
    return out.contiguous()


@pytest.mark.parametrize("name", list(SMALL))
def test_encode_float32_like_torch(build, name):
    x = probe_values(name)
    tdt = SMALL[name][0]
    _, run = build(cast_kernel("float32", name, x.numel()))
    out = torch.empty(x.numel(), dtype=tdt)
    run(x, out)
    same_values(out, x.to(tdt))


@pytest.mark.parametrize("name", list(SMALL))
def test_encode_float64_rounds_once(build, name):
    """double -> small float is correctly rounded (torch goes through float32 and
    can round twice; CUDA's __double2half does not)."""
    tdt = SMALL[name][0]
    base = probe_values(name).double()
    # values just above/below ties by much less than a float32 ulp: double rounding would go wrong here
    vals = all_patterns(name).double()
    vals = vals[torch.isfinite(vals)].unique()
    mids = (vals[:-1] + vals[1:]) / 2
    tiny = mids.abs() * 2.0**-40 + 1e-300
    x = torch.cat([base, mids + tiny, mids - tiny]).contiguous()
    _, run = build(cast_kernel("float64", name, x.numel()))
    out = torch.empty(x.numel(), dtype=tdt)
    run(x, out)
    ref = torch.tensor([round_to(v, name) for v in x.tolist()], dtype=torch.float64)
    same_values(out, ref)
    # and the bit encoder used for constants agrees with torch on representable values
    some = all_patterns(name)
    finite = torch.isfinite(some.float())
    bits = some.view(SMALL[name][1])[finite].tolist()
    mask = (1 << SMALL[name][2]) - 1
    assert [encode(v, name) for v in some.float()[finite].tolist()] == [b & mask for b in bits]


def test_python_reference_matches_torch_on_float32():
    for name, (tdt, _, _) in SMALL.items():
        x = probe_values(name)[:3000]
        ref = torch.tensor([round_to(v, name) for v in x.tolist()], dtype=torch.float64)
        same_values(ref, x.to(tdt))


@pytest.mark.parametrize("src,dst", [("float16", "float32"), ("float32", "float16"), ("float64", "float16")])
def test_float16_portable_path(build, src, dst):
    """The bit-manipulation float16 conversions (used where the compiler has no _Float16)."""
    if src == "float16":
        x = all_patterns("float16")
    else:
        x = probe_values("float16").to(getattr(torch, src))
    out = torch.empty(x.numel(), dtype=getattr(torch, dst))
    _, run = build(cast_kernel(src, dst, x.numel()), compile_flags=["-DTL_NO_FLOAT16"])
    run(x, out)
    if src == "float64":
        same_values(out, torch.tensor([round_to(v, "float16") for v in x.tolist()], dtype=torch.float64))
    else:
        same_values(out, x.to(getattr(torch, dst)))
