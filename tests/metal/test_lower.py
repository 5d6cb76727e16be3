"""Every seed kernel and example for target="metal": MSL generated, or one clear
"unsupported on Metal" / launch-limit error naming the feature and the line (issue 21).

The lists below are the exact state of the Metal backend: a kernel moving from UNSUPPORTED to
supported (or back) is a change to review. Golden MSL sources of reference kernels are in
tests/metal/golden/ (regenerate with `TL_UPDATE_GOLDEN=1`, review the diff). Executing the MSL
(the CPU harness) is tests/metal's harness tests; here only lowering and generation run."""

from __future__ import annotations

import difflib
import os
import re
import sys
from pathlib import Path

import pytest

import tilelang
from tilelang.errors import TileLangError

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "cuda"), str(ROOT / "tests")]

import catalog  # noqa: E402

GOLDEN = Path(__file__).resolve().parent / "golden"


def _examples_outside_the_catalog() -> dict:
    """The examples the CUDA catalogue leaves out (Hopper API, convolution), at their CPU sizes."""

    def ex(rel, attr, *args):
        return lambda: getattr(catalog._example(rel), attr).get_tir(*args)

    conv = ("convolution/example_convolution.py", "convolution", 2, 32, 14, 14, 48, 3, 2, 1, 1, 64, 32, 32, 3, 128)
    return {
        "ex.hopper_persistent_ws_gemm": ex(
            "hopper/persistent_ws_gemm.py", "matmul_persistent_ws", 200, 136, 128, 128, 128, 64, 4, 2
        ),  # fmt: skip
        "ex.hopper_streamk_gemm": ex("hopper/streamk_gemm.py", "matmul_streamk", 200, 136, 160, 128, 128, 32, 3),
        "ex.hopper_tma_double_buffer": ex("hopper/tma_double_buffer.py", "qk_scores", 2, 2, 100, 64, 64, 64),
        "ex.hopper_ws_gemm": ex("hopper/ws_gemm.py", "matmul_ws", 200, 136, 160, 128, 128, 64),
        "ex.hopper_ws_gemm_pipelined": ex("hopper/ws_gemm_pipelined.py", "matmul_ws_ring", 200, 136, 224, 128, 128, 64),
        "ex.conv_im2col": ex(*conv, True),
        "ex.conv_parallel_loads": ex(*conv, False),
    }


FUNCS = {**catalog.all_funcs(), **_examples_outside_the_catalog()}
# kernel -> (what the one error names, the file it points into)
UNSUPPORTED = {
    "seed.matmul_persistent": ("threadgroup memory", "seed_kernels.py"),  # 128×128 tiles + C_shared: 51 KiB
    "ex.gemm_persistent": ("threadgroup memory", "persistent.py"),
    "ex.gemm_bf16_nt": ("bfloat16", "gemm.py"),  # MSL 3.1 needed (target attr msl)
    "kz.gemm_bf16_fullcol": ("bfloat16", "kernels.py"),
    "kz.debug_print_assert": ("T.print", "kernels.py"),
    "kz.gemm_int8": ("T.gemm on int8", "kernels.py"),
    "ex.hopper_persistent_ws_gemm": ("mbarriers", "persistent_ws_gemm.py"),
    "ex.hopper_tma_double_buffer": ("mbarriers", "tma_double_buffer.py"),
    "ex.hopper_ws_gemm": ("mbarriers", "ws_gemm.py"),
    "ex.hopper_ws_gemm_pipelined": ("mbarriers", "ws_gemm_pipelined.py"),
}
SUPPORTED = sorted(set(FUNCS) - set(UNSUPPORTED))


def _lower(func, target="metal"):
    return tilelang.lower(func, target=target, enable_device_compile=False)


@pytest.fixture(scope="module")
def generated() -> dict:
    out = {}
    for name, make in FUNCS.items():
        try:
            out[name] = _lower(make())
        except TileLangError as err:
            out[name] = err
    return out


def test_the_supported_list_is_exact(generated):
    ok = sorted(n for n, r in generated.items() if not isinstance(r, Exception))
    assert ok == SUPPORTED


@pytest.mark.parametrize("name", SUPPORTED)
def test_generates_msl(generated, name):
    src = generated[name].kernel_source
    assert src.count("kernel void ") == 1 and "#include <metal_stdlib>" in src
    assert "__global__" not in src and "__syncthreads" not in src and "threadIdx" not in src
    for m in re.finditer(r"threadgroup float4 tl_smem4\[(\d+)\];", src):
        assert int(m.group(1)) * 16 <= 32 * 1024  # the planned threadgroup memory fits


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_unsupported_is_one_clear_error(generated, name):
    err = generated[name]
    assert isinstance(err, TileLangError), f"{name} lowered for Metal"
    feature, file = UNSUPPORTED[name]
    text = str(err).split("\n")[0]
    assert feature in text and re.match(rf".*{re.escape(file)}:\d+:\d+: ", text), text


def test_gemm_is_simdgroup_matrix_and_pipelines_are_plain_loops(generated):
    art = generated["seed.matmul"]
    src = art.kernel_source
    assert "simdgroup_multiply_accumulate(mat_c, mat_a, mat_b, mat_c)" in src
    assert "simdgroup_matrix<float, 8, 8> mat_c;" in src
    assert "cp_async" not in src and "tl::gemm" not in src


def test_errors_name_feature_and_line():
    import tilelang.language as T

    @tilelang.jit
    def fp8_copy(A):
        A: T.Tensor((64,), T.float32)
        B = T.empty((64,), T.float8_e4m3fn)
        with T.Kernel(1, threads=64) as (bx,):
            for i in T.Parallel(64):
                B[i] = A[i]
        return B

    with pytest.raises(TileLangError, match=r"test_lower\.py:\d+:\d+: unsupported on Metal: float8_e4m3fn"):
        _lower(fp8_copy.get_tir())


def test_bfloat16_with_msl_3_1():
    art = _lower(FUNCS["kz.gemm_bf16_fullcol"](), {"kind": "metal", "msl": "3.1"})
    assert "device bfloat* A [[buffer(0)]]" in art.kernel_source and art.meta["msl"] == "3.1"


def test_too_many_buffers_is_an_error(tmp_path):
    import importlib.util

    n = 32  # a Metal compute function has 31 buffer slots
    src = "import tilelang.language as T\n\n\n@T.prim_func\ndef many("
    src += ", ".join(f"A{i}: T.Tensor((8,), T.float32)" for i in range(n)) + "):\n"
    src += "    with T.Kernel(1, threads=32) as (bx,):\n        for i in T.Parallel(8):\n            A0[i] = A31[i]\n"
    path = tmp_path / "many_buffers.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("many_buffers", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(TileLangError, match="at most 31 buffers"):
        _lower(mod.many)


def _golden_cases() -> dict:
    return {
        "vector_add": "seed.vector_add",
        "matmul_64x64x32": "seed.matmul",
        "layer_norm": "seed.layer_norm",
        "flash_attention_causal": "seed.flashattn_causal",
    }


@pytest.mark.parametrize("name", list(_golden_cases()))
def test_generated_msl_matches_golden(generated, name):
    src = generated[_golden_cases()[name]].kernel_source
    path = GOLDEN / f"{name}.metal"
    if os.environ.get("TL_UPDATE_GOLDEN") or not path.exists():
        path.write_text(src)
    want = path.read_text()
    if src != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), src.splitlines(True), "golden", "generated", n=2))
        pytest.fail(f"generated MSL of {name} changed (TL_UPDATE_GOLDEN=1 to accept):\n{diff[:4000]}")


def test_several_kernels_are_one_msl_library(tmp_path):
    """A function with two T.Kernel blocks (launch_plan.py): one source, both entries, the
    prelude sections once each (include-guarded)."""
    from conformance.multi_kernel_kernels import scale_then_shift

    from tilelang.backend.launch_plan import backend_for
    from tilelang.backend.registry import get_backend
    from tilelang.backend.target import parse

    func = scale_then_shift.get_tir(50, 70)
    target = parse("metal")
    plan = backend_for(get_backend(target), func)
    built = plan.build(func, target, {}, str(tmp_path))
    src = built.kernel_source
    assert src.count("kernel void ") == 2 and [k["entry"] for k in built.meta["kernels"]] == [
        "main_kernel",
        "main_kernel_1",
    ]
    assert Path(built.lib_path).read_text() == src


def test_fast_math_uses_metal_fast_functions(generated):
    assert "metal::precise::exp2" in generated["seed.flashattn_causal"].kernel_source
    fast = tilelang.lower(FUNCS["seed.flashattn_causal"](), target="metal", enable_device_compile=False,
                          pass_configs={"tl.enable_fast_math": True}).kernel_source  # fmt: skip
    assert "metal::fast::exp2" in fast and "metal::precise::" not in fast


def test_pipelined_loops_are_recorded_as_the_plain_loops_they_are():
    from tilelang.backend.metal.backend import make_backend
    from tilelang.backend.target import parse
    from tilelang.ir.decisions import decisions_of

    built = make_backend().lower(FUNCS["seed.matmul"](), parse("metal"), {})  # T.Pipelined(num_stages=3)
    d = decisions_of(built.lowered)
    assert d.pipelines and all((p.form, p.stages) == ("synchronous", 1) for p in d.pipelines)
    assert [(g.family, g.instruction, g.unit) for g in d.gemms] == [("simdgroup_matrix", "8x8x8", "simdgroups")]
    assert d.shared is not None and d.shared.total_bytes == built.meta["smem"] <= 32 * 1024
