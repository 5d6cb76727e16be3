"""Scalar expression semantics of generated C: small-float arithmetic rounds
after every operation (bitwise equal to torch's float16/bfloat16 ops), integer
floordiv/floormod use floor semantics, casts, selects, math intrinsics."""

import math

import pytest
import torch

from tilelang.ir import (
    BufferStore,
    Call,
    IntImm,
    binary,
    call,
    cast,
    compare,
    select,
)

from .irb import kernel, loops, tensor

N = 4096
BLOCK = 256


def elementwise(name, in_dtypes, out_dtype, fn, n=N):
    """out[i] = fn(in0[i], in1[i], ...) over a 1-D grid of BLOCK-element tiles."""
    ins = [tensor(f"X{k}", (n,), dt) for k, dt in enumerate(in_dtypes)]
    out = tensor("Y", (n,), out_dtype)

    def body(bx):
        def elem(i):
            idx = bx * BLOCK + i
            return BufferStore(out, (idx,), cast(fn(*[x[idx] for x in ins]), out_dtype))

        return loops([BLOCK], elem)

    return kernel(name, (*ins, out), ((n + BLOCK - 1) // BLOCK,), body)


def randn(dtype, n=N, scale=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, generator=g) * scale).to(dtype)


def same(got, ref):
    g, r = got.double(), ref.double()
    assert torch.equal(torch.isnan(g), torch.isnan(r))
    m = ~torch.isnan(r)
    assert torch.equal(g[m], r[m]), f"max diff {(g[m] - r[m]).abs().max().item()}"


@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16])
def test_small_float_arithmetic_rounds_every_op(build, dt):
    name = str(dt).removeprefix("torch.")
    _, run = build(elementwise(f"arith_{name}", [name] * 3, name, lambda a, b, c: (a * b + c) / (a - c) - b * b))
    a, b, c = randn(dt, seed=1), randn(dt, seed=2), randn(dt, seed=3)
    out = torch.empty(N, dtype=dt)
    run(a, b, c, out)
    same(out, (a * b + c) / (a - c) - b * b)  # torch rounds each op to the dtype too


def test_float16_math_within_one_ulp(build):
    _, run = build(
        elementwise(
            "math_f16",
            ["float16"],
            "float16",
            lambda a: call("exp", a) * call("tanh", a) + call("sqrt", call("abs", a)),
        )
    )
    a = randn(torch.float16, scale=2.0, seed=4)
    out = torch.empty(N, dtype=torch.float16)
    run(a, out)
    ref = torch.exp(a) * torch.tanh(a) + torch.sqrt(torch.abs(a))
    torch.testing.assert_close(out, ref, rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize("op", ["floordiv", "floormod", "div"])
@pytest.mark.parametrize("dt", ["int32", "int64", "int8"])
def test_integer_division(build, op, dt):
    tdt = getattr(torch, dt)
    _, run = build(elementwise(f"{op}_{dt}", [dt, dt], dt, lambda a, b: binary(op, a, b)))
    g = torch.Generator().manual_seed(5)
    hi = 100 if dt == "int8" else 10**6
    a = torch.randint(-hi, hi, (N,), generator=g, dtype=tdt)
    b = torch.randint(1, 13, (N,), generator=g, dtype=tdt) * torch.where(torch.rand(N, generator=g) < 0.5, -1, 1).to(
        tdt
    )
    out = torch.empty(N, dtype=tdt)
    run(a, b, out)
    ref = {
        "floordiv": torch.div(a, b, rounding_mode="floor"),
        "floormod": torch.remainder(a, b),
        "div": torch.div(a, b, rounding_mode="trunc"),
    }[op]
    assert torch.equal(out, ref)


def test_integer_ops_and_narrow_wraparound(build_unsimplified):
    def fn(a, b):
        s = cast(a, "int8") + cast(b, "int8")  # int8 arithmetic wraps
        return cast(s, "int32") * 1000 + ((a & 255) ^ (b << 2)) + binary("max", a, b) - binary("min", a >> 1, b)

    # (without simplify: it currently distributes a widening cast over wrapping int8 arithmetic)
    _, run = build_unsimplified(elementwise("intops", ["int32", "int32"], "int32", fn))
    g = torch.Generator().manual_seed(6)
    a = torch.randint(-300, 300, (N,), generator=g, dtype=torch.int32)
    b = torch.randint(0, 300, (N,), generator=g, dtype=torch.int32)
    out = torch.empty(N, dtype=torch.int32)
    run(a, b, out)
    s = (a.to(torch.int8) + b.to(torch.int8)).to(torch.int32)
    ref = s * 1000 + ((a & 255) ^ (b << 2)) + torch.maximum(a, b) - torch.minimum(a >> 1, b)
    assert torch.equal(out, ref)


def test_select_evaluates_only_the_chosen_side(build):
    # integer division by zero would trap; the select must not evaluate it
    _, run = build(
        elementwise("sel", ["int32", "int32"], "int32", lambda a, b: select(compare("ne", b, 0), a // b, -7))
    )
    a = torch.randint(-50, 50, (N,), dtype=torch.int32)
    b = torch.randint(-3, 3, (N,), dtype=torch.int32)
    out = torch.empty(N, dtype=torch.int32)
    run(a, b, out)
    ref = torch.where(b != 0, torch.div(a, torch.where(b != 0, b, 1), rounding_mode="floor"), -7)
    assert torch.equal(out, ref)


def test_casts(build):
    def fn(x):
        i = cast(x * 100.0, "int32")  # truncation toward zero
        return cast(i, "float32") + cast(cast(x, "float16"), "float32") + cast(cast(x, "bool"), "float32")

    _, run = build(elementwise("casts", ["float32"], "float32", fn))
    x = randn(torch.float32, scale=3.0, seed=7)
    x[:4] = torch.tensor([0.0, -0.0, 0.5, -2.5])
    out = torch.empty(N)
    run(x, out)
    ref = (x * 100.0).to(torch.int32).float() + x.half().float() + (x != 0).float()
    same(out, ref)


@pytest.mark.parametrize(
    "op",
    [
        "exp",
        "exp2",
        "log",
        "log2",
        "sqrt",
        "rsqrt",
        "tanh",
        "sigmoid",
        "sin",
        "erf",
        "floor",
        "ceil",
        "nearbyint",
        "exp10",
    ],
)
def test_float32_math(build, op):
    _, run = build(elementwise(f"m_{op}", ["float32"], "float32", lambda a: call(op, a)))
    x = randn(torch.float32, scale=2.0, seed=8)
    if op in ("log", "log2", "sqrt", "rsqrt"):
        x = x.abs() + 1e-3
    out = torch.empty(N)
    run(x, out)
    ref = {
        "sigmoid": torch.sigmoid,
        "nearbyint": torch.round,
        "exp10": lambda v: torch.pow(10.0, v),
        "rsqrt": torch.rsqrt,
    }.get(op) or getattr(torch, op)
    torch.testing.assert_close(out, ref(x), rtol=2e-6, atol=1e-6)


def test_float64_and_binary_math(build):
    _, run = build(
        elementwise(
            "m64",
            ["float64", "float64"],
            "float64",
            lambda a, b: (
                call("pow", call("abs", a), b) + call("atan2", a, b) + call("fmod", a, b) + binary("floormod", a, b)
            ),
        )
    )
    a, b = randn(torch.float64, seed=9) * 3, randn(torch.float64, seed=10) + 4
    out = torch.empty(N, dtype=torch.float64)
    run(a, b, out)
    ref = torch.pow(a.abs(), b) + torch.atan2(a, b) + torch.fmod(a, b) + torch.remainder(a, b)
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)


def test_min_max_infinity_constants(build):
    inf = math.inf
    _, run = build(
        elementwise("minmax", ["float32"], "float32", lambda a: binary("max", binary("min", a, 1.5), -inf) + 0.1)
    )
    x = randn(torch.float32, seed=11)
    out = torch.empty(N)
    run(x, out)
    same(out, torch.clamp(x, max=1.5) + torch.tensor(0.1, dtype=torch.float32))


def test_reinterpret_and_bitnot(build):
    _, run = build(
        elementwise(
            "bits",
            ["float32"],
            "int32",
            lambda a: (
                Call("reinterpret", (a,), __import__("tilelang").ir.DataType("int32")) ^ call("bitnot", IntImm(0))
            ),
        )
    )
    x = randn(torch.float32, seed=12)
    out = torch.empty(N, dtype=torch.int32)
    run(x, out)
    assert torch.equal(out, x.view(torch.int32) ^ -1)
