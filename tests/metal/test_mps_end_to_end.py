"""`tilelang.compile(..., target="metal")` called the way a program on a Mac calls it, with a fake
`torch.mps` whose `compile_shader` compiles the MSL in the CPU harness and whose kernels run
there: the whole path — JIT, argument checks, output allocation on `mps`, the runtime's
`threads` / `group_size` / `arg_casts`, the generated MSL — checked against torch. The "mps"
tensors are CPU tensors that report device mps (no Apple GPU here)."""

from __future__ import annotations

import os
import sys

import pytest
import torch

import tilelang
import tilelang.language as T

from .msl_runner import HarnessError, compile_msl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cuda"))
import catalog  # noqa: E402

# the `arg_casts` entry a scalar declared `constant <type>&` needs (None: torch's default
# binding, int → 8 bytes and float → 4, already has the declared width)
CAST_FOR_MSL_TYPE = {"int": "int32", "uint": "int32", "short": "int16", "ushort": "int16", "char": "int8",
                     "uchar": "uint8", "bool": "uint8", "half": "fp16", "bfloat": "bf16", "long": None,
                     "ulong": None, "float": None}  # fmt: skip


class MpsTensor(torch.Tensor):
    @property
    def device(self):
        return torch.device("mps")


def mps(t: torch.Tensor) -> torch.Tensor:
    return torch.Tensor._make_subclass(MpsTensor, t)


class HarnessKernel:
    """A kernel of the fake library: torch's calling convention, run in the harness."""

    def __init__(self, kernel, calls: list) -> None:
        self.kernel, self.calls = kernel, calls
        self.max_threads_per_threadgroup = 1024

    def __call__(self, *args, threads=None, group_size=None, arg_casts=None):
        self.calls.append({"threads": threads, "group_size": group_size, "arg_casts": arg_casts})
        assert len(threads) == len(group_size), "torch requires threads and group_size of one length"
        assert all(t % g == 0 for t, g in zip(threads, group_size)), "whole threadgroups"
        for i, p in enumerate(self.kernel.params):  # what torch binds is what the MSL declares
            if p.kind == "scalar":
                assert (arg_casts or {}).get(i) == CAST_FOR_MSL_TYPE[p.base], (i, p.base, arg_casts)
            else:
                assert isinstance(args[i], torch.Tensor) and args[i].device.type == "mps"
        plain = [a.as_subclass(torch.Tensor) if isinstance(a, torch.Tensor) else a for a in args]
        grid = tuple(t // g for t, g in zip(threads, group_size))
        self.kernel(*plain, grid=grid, threads=tuple(group_size))

    __call__.__doc__ = "__call__(self, *args, threads, group_size, arg_casts, error_buf_idx)"


class HarnessMps:
    def __init__(self) -> None:
        self.sources: list[str] = []
        self.calls: list[dict] = []

    def compile_shader(self, source: str):
        self.sources.append(source)
        calls = self.calls

        class Library:
            def __getattr__(self, name):
                return HarnessKernel(compile_msl(source, name), calls)

        return Library()


@pytest.fixture
def fake_mps(monkeypatch):
    from tilelang.backend.metal import runtime

    monkeypatch.setattr(runtime, "_LIBRARIES", {})  # libraries of earlier (fake) devices
    fake = HarnessMps()
    monkeypatch.setattr(torch, "mps", fake, raising=False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    real_empty = torch.empty

    def empty(*shape, device=None, **kw):  # outputs the adapter allocates "on mps"
        if device is not None and torch.device(device).type == "mps":
            return mps(real_empty(*shape, **kw))
        return real_empty(*shape, device=device, **kw)

    monkeypatch.setattr(torch, "empty", empty)
    return fake


def test_vector_add_output_allocated_on_mps(fake_mps):
    kernel = tilelang.compile(catalog.seed_funcs()["seed.vector_add"](), target="metal")
    a, b = torch.randn(1000), torch.randn(1000)
    c = kernel(mps(a), mps(b))
    assert c.device.type == "mps" and fake_mps.sources == [kernel.get_kernel_source()]
    torch.testing.assert_close(c.as_subclass(torch.Tensor), a + b)
    (call,) = fake_mps.calls
    assert call["threads"][0] % call["group_size"][0] == 0 and call["group_size"][1:] == (1, 1)


def test_dynamic_gemm_passes_its_sizes_and_matches_torch(fake_mps):
    kernel = tilelang.compile(catalog.seed_funcs()["seed.matmul_dynamic"](), target="metal")
    for m, n, k in [(77, 45, 53), (33, 70, 16)]:
        a, b = torch.randn(m, k).half(), torch.randn(k, n).half()
        c = kernel(mps(a), mps(b)).as_subclass(torch.Tensor)
        torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=2e-2)
    assert len(fake_mps.sources) == 1  # one compile, launched at two sizes


def test_arguments_not_on_mps_are_refused(fake_mps):
    kernel = tilelang.compile(catalog.seed_funcs()["seed.vector_add"](), target="metal")
    with pytest.raises(ValueError, match="is on cpu but kernel `.*` was compiled for the Apple GPU"):
        kernel(torch.randn(1000), torch.randn(1000))


def test_layer_norm_in_place_output(fake_mps):
    kernel = tilelang.compile(catalog.seed_funcs()["seed.layer_norm"](), target="metal")
    x, y = torch.randn(3, 384), torch.zeros(3, 384)
    kernel(mps(x), mps(y))
    torch.testing.assert_close(y, torch.nn.functional.layer_norm(x, (384,), eps=1e-5), rtol=2e-3, atol=2e-3)


def test_harness_errors_surface_through_the_runtime(fake_mps):
    lib = torch.mps.compile_shader("kernel void k(device float* x [[buffer(0)]]) {}")
    with pytest.raises(HarnessError, match="expected one kernel named nope"):
        getattr(lib, "nope")  # noqa: B009 - the attribute lookup is what is tested


@tilelang.jit(out_idx=[-1], target="metal")
def scale_shift(M, idtype=T.int32, fdtype=T.float32, block=64):
    @T.prim_func
    def main(A: T.Tensor((M,), T.float32), n: idtype, s: fdtype, B: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, block), threads=64) as bx:
            for i in T.Parallel(block):
                if bx * block + i < M:
                    B[bx * block + i] = A[bx * block + i] * T.cast(s, T.float32) + T.cast(n, T.float32)

    return main


@pytest.mark.parametrize(
    "idtype,fdtype,casts",
    [(T.int32, T.float32, {1: "int32"}), (T.int64, T.float16, {2: "fp16"}), (T.int16, T.float32, {1: "int16"})],
)
def test_scalar_parameters_bound_at_their_declared_width(fake_mps, idtype, fdtype, casts):
    kernel = scale_shift(999, idtype, fdtype)
    a = torch.randn(999)
    b = kernel(mps(a), -3, 0.75).as_subclass(torch.Tensor)
    torch.testing.assert_close(b, a * 0.75 - 3)
    assert fake_mps.calls[-1]["arg_casts"] == casts


def test_auto_target_runs_a_multi_kernel_program_on_metal(fake_mps, monkeypatch):
    """Split-KV decode (two T.Kernel blocks, T.alloc_global scratch on mps) with target "auto",
    which picks Metal here because the (fake) MPS device is available and no CUDA GPU is."""
    from conformance import multi_kernel_kernels as K

    monkeypatch.delenv("TILELANG_DEFAULT_TARGET", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    kernel = K.splitkv_decode(2, 3, 300, 64, num_split=3, block_N=32)  # 32 KiB of threadgroup memory
    assert kernel.target.kind == "metal"
    q, k, v = K.decode_inputs(2, 3, 300, 64, seed=1)
    out = kernel(mps(q), mps(k), mps(v)).as_subclass(torch.Tensor)
    torch.testing.assert_close(out.float(), K.decode_reference(q, k, v), atol=2e-3, rtol=2e-3)
    assert len({c["threads"] for c in fake_mps.calls}) == 2  # the two kernels, in one call
    assert len(fake_mps.sources) == 1  # one library holds both: compiled once
