"""Every seed and example kernel (tests/cuda/catalog.py) on target="metal": the generated MSL runs
in the CPU execution harness (msl_host.h) and must match torch; kernels the Metal backend does
not support must fail with one clear error naming the feature and the source line.

The expected values of the catalog kernels come from the same PrimFunc on the C backend (whose
results tests/backend_c and tests/cuda/test_simulate.py check against torch), on identical
random inputs at the catalog's odd sizes; the GEMM, vector add and layer norm are also
checked against torch directly. All MSL compiles (one g++ per source) run in parallel once
per module, as do the C builds."""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

import tilelang
from tilelang.backend.cuda.backend import grid_function
from tilelang.backend.launch_plan import backend_for
from tilelang.backend.registry import get_backend
from tilelang.backend.target import parse
from tilelang.cache import load_or_build
from tilelang.errors import TileLangError
from tilelang.ir.buffer import Buffer
from tilelang.ir.expr import Var, const_int
from tilelang.jit.kernel import compile_options

from .msl_runner import HarnessError, compile_many

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cuda"))
import catalog  # noqa: E402

# what the Metal backend refuses, and the words its error must contain
UNSUPPORTED = {
    "seed.matmul_persistent": "KiB of threadgroup memory",
    "ex.gemm_persistent": "KiB of threadgroup memory",
    "ex.gemm_bf16_nt": "bfloat16 (parameter `A`) needs MSL 3.1",
    "kz.gemm_bf16_fullcol": "bfloat16 (parameter `A`) needs MSL 3.1",
    "kz.debug_print_assert": "T.print",
    "kz.gemm_int8": "T.gemm on int8",
}
DYNAMIC_SIZES = {"M": 77, "N": 45, "K": 53}  # odd values for dynamic dimensions
METAL = "metal"
MSL_31 = {"kind": "metal", "msl": "3.1"}  # bfloat (and simdgroup_matrix<bfloat>)


def _metal_variants() -> dict:
    """Catalogue kernels the Metal backend refuses at the catalogue's configuration, at one that
    fits Metal (32 KiB of threadgroup memory; bfloat16 with MSL 3.1)."""

    def ex(rel, attr, *args, **kw):
        return lambda: getattr(catalog._example(rel), attr).get_tir(*args, **kw)

    return {
        "metal.flash_attention_causal_32x32": (
            ex("flash_attention/mha_fwd.py", "flashattn", 1, 2, 200, 64, True, block_M=32, block_N=32, threads=64), METAL),
        "metal.flash_attention_32x32": (
            ex("flash_attention/mha_fwd.py", "flashattn", 1, 2, 200, 64, False, block_M=32, block_N=32, threads=64), METAL),
        "metal.gemm_bf16_nt_msl31": (ex("gemm/gemm.py", "matmul_bf16_nt", 200, 136, 72, 64, 64, 32), MSL_31),
        # examples the CUDA catalogue leaves out that Metal lowers (tests/metal/test_lower.py)
        "ex.hopper_streamk_gemm": (ex("hopper/streamk_gemm.py", "matmul_streamk", 200, 136, 160, 128, 128, 32, 3),
                                   METAL),
        "ex.conv_parallel_loads": (ex("convolution/example_convolution.py", "convolution", 2, 32, 14, 14, 48, 3, 2,
                                      1, 1, 64, 32, 32, 3, 128, False), METAL),
        "ex.conv_im2col": (ex("convolution/example_convolution.py", "convolution", 2, 32, 14, 14, 48, 3, 2,
                              1, 1, 64, 32, 32, 3, 128, True), METAL),
    }  # fmt: skip


FUNCS = {**{n: (mk, METAL) for n, mk in catalog.all_funcs().items()}, **_metal_variants()}
NAMES = sorted(FUNCS)


@pytest.fixture(scope="module")
def lowered():
    """name → (func, metal artifact) or the TileLangError the Metal backend raised."""
    out = {}
    for name, (make, target) in FUNCS.items():
        func = make()
        try:
            out[name] = (func, tilelang.lower(func, target=target, enable_device_compile=False))
        except TileLangError as err:
            out[name] = err
    return out


@pytest.fixture(scope="module")
def compiled(lowered):
    """name → (func, meta, harness kernel, C-backend launch) for every supported kernel."""
    names = [n for n, v in lowered.items() if not isinstance(v, TileLangError)]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # C builds overlap the MSL compiles
        c_launches = [pool.submit(_c_launch, lowered[n][0]) for n in names]
        kernels = compile_many([lowered[n][1].kernel_source for n in names])
        launches = [f.result() for f in c_launches]
    return {n: (lowered[n][0], lowered[n][1].meta, k, c) for n, k, c in zip(names, kernels, launches)}


def _c_launch(func):
    target = parse("c")
    backend = backend_for(get_backend(target), func)
    built = load_or_build(backend, func, target, compile_options(func, None, None))
    return backend.load(built)


def _inputs(func, seed: int) -> tuple[list, list]:
    """Random values for every parameter (outputs too: kernels that accumulate read them) and
    the dynamic dimensions."""
    gen = torch.Generator().manual_seed(seed)
    dyn = {v: DYNAMIC_SIZES.get(v.name, 61) for v in func.dynamic_vars()}
    values = []
    for p in func.params:
        if not isinstance(p, Buffer):
            raise AssertionError(f"no test value for scalar parameter {p.name}")
        shape = [dyn[d] if isinstance(d, Var) else const_int(d) for d in p.shape]
        dt = p.dtype.as_torch() if hasattr(p.dtype, "as_torch") else getattr(torch, str(p.dtype))
        if dt.is_floating_point:
            t = torch.randn(shape, generator=gen).to(dt)
        else:
            t = torch.randint(-4, 5, shape, generator=gen).to(dt)
        values.append(t)
    return values, [dyn[v] for v in func.dynamic_vars()]


@pytest.mark.parametrize("name", NAMES)
def test_kernel_runs_in_the_msl_harness_and_matches(name, lowered, compiled):
    if name in UNSUPPORTED:
        err = lowered[name]
        assert isinstance(err, TileLangError), f"{name} lowered for Metal; remove it from UNSUPPORTED"
        text = str(err)
        assert UNSUPPORTED[name] in text and ".py:" in text.splitlines()[0], text
        return
    assert not isinstance(lowered[name], TileLangError), f"{name}: {lowered[name]}"
    func, meta, kernel, c_launch = compiled[name]
    if isinstance(kernel, HarnessError):
        raise kernel
    values, dyn = _inputs(func, seed=len(name))
    expected = [v.clone() for v in values]
    c_launch(expected, dyn)
    got = [v.clone() for v in values]
    n_params = int(meta["n_params"])
    grid = grid_function(meta["grid"], n_params, len(meta["args"]) - n_params)(got, dyn)
    if min(grid) > 0:
        kernel(*got, *dyn, grid=grid, threads=(int(meta["threads"]),))
    for p, g, e in zip(func.params, got, expected):
        tol = 2e-2 if g.dtype in (torch.float16, torch.bfloat16) else 1e-3
        where = f"{name} `{p.name}`"
        torch.testing.assert_close(g.float(), e.float(), rtol=tol, atol=tol, msg=lambda m, w=where: f"{w}: {m}")


def _run(name, compiled, values, dyn):
    func, meta, kernel, _ = compiled[name]
    n_params = int(meta["n_params"])
    grid = grid_function(meta["grid"], n_params, len(meta["args"]) - n_params)(values, dyn)
    kernel(*values, *dyn, grid=grid, threads=(int(meta["threads"]),))


def test_gemm_matches_torch(compiled):
    func = compiled["ex.gemm_lazy"][0]
    values, dyn = _inputs(func, seed=3)
    _run("ex.gemm_lazy", compiled, values, dyn)
    a, b, c = values
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=2e-2)


def test_vector_add_matches_torch(compiled):
    values, dyn = _inputs(compiled["seed.vector_add"][0], seed=4)
    _run("seed.vector_add", compiled, values, dyn)
    a, b, c = values
    torch.testing.assert_close(c, a + b)


def test_layer_norm_matches_torch(compiled):
    func = compiled["ex.layer_norm"][0]
    values, dyn = _inputs(func, seed=5)
    x = values[0]
    _run("ex.layer_norm", compiled, values, dyn)
    ref = torch.nn.functional.layer_norm(x.float(), x.shape[-1:], eps=1e-5)
    if len(values) == 4:  # weight and bias
        ref = ref * values[1].float() + values[2].float()
    torch.testing.assert_close(values[-1].float(), ref, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_matches_torch(compiled, causal):
    name = f"metal.flash_attention{'_causal' if causal else ''}_32x32"
    values, dyn = _inputs(compiled[name][0], seed=6)
    _run(name, compiled, values, dyn)
    q, k, v, o = values
    ref = catalog._example("flash_attention/mha_fwd.py").reference(q, k, v, causal)
    torch.testing.assert_close(o.float(), ref, rtol=1e-2, atol=2e-3)
