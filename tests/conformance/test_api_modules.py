"""Modules and names public TileLang 0.1.x programs import: `PassConfigKey` (every public member;
enum and string forms alike; unknown keys warn with the closest name; keys without effect warn
once; acting keys change what is built), `tilelang.env`, `set_log_level`, the cache switch,
`tilelang.tileop.base.GemmWarpPolicy`, `tilelang.layout.make_swizzled_layout`, source postproc
callbacks (and the cache keyed on them), `tilelang.tools.plot_layout` and the layout-visualization
pass configs. CPU numerics on the C backend and the CUDA simulator; nvcc builds where nvcc is."""

from __future__ import annotations

import builtins
import logging
import warnings

import pytest
import torch
from sim import simulate

import tilelang
import tilelang.language as T
from tilelang import pass_config
from tilelang.transform import PassConfigKey

SM90 = {"kind": "cuda", "arch": "sm_90a"}
SM80 = {"kind": "cuda", "arch": "sm_80"}

# the public enum at the reference commit, plus the keys older 0.1.x releases had
PUBLIC_KEYS = {
    "TL_SIMPLIFY": "tl.Simplify",
    "TL_DISABLE_BUFFER_INIT_CHECK": "tl.disable_buffer_init_check",
    "TL_DISABLE_DATA_RACE_CHECK": "tl.disable_data_race_check",
    "TL_DISABLE_PRELOWER_SEMANTIC_CHECK": "tl.disable_prelower_semantic_check",
    "TL_DISABLE_WARP_SPECIALIZED": "tl.disable_warp_specialized",
    "TL_ENABLE_FAST_MATH": "tl.enable_fast_math",
    "TL_PTXAS_REGISTER_USAGE_LEVEL": "tl.ptxas_register_usage_level",
    "TL_ENABLE_PTXAS_VERBOSE_OUTPUT": "tl.enable_ptxas_verbose_output",
    "TL_DEVICE_COMPILE_FLAGS": "tl.device_compile_flags",
    "TL_EMIT_LINE_DIRECTIVES": "tl.emit_line_directives",
    "TL_CONFIG_INDEX_BITWIDTH": "tl.config_index_bitwidth",
    "TL_ENABLE_REDUCER_PLAN_VERBOSE": "tl.enable_reducer_plan_verbose",
    "TL_LAYOUT_COST_MODEL": "tl.layout_cost_model",
    "TL_REDUCER_FORCE_BASELINE": "tl.reducer_force_baseline",
    "TL_DISABLE_TMA_LOWER": "tl.disable_tma_lower",
    "TL_DISABLE_SAFE_MEMORY_ACCESS": "tl.disable_safe_memory_legalize",
    "TL_DISABLE_VECTORIZE_256": "tl.disable_vectorize_256",
    "TL_ENABLE_ASYNC_COPY": "tl.enable_async_copy",
    "TL_ENABLE_LOWER_LDGSTG": "tl.enable_lower_ldgstg",
    "TL_ENABLE_LOWER_LDGSTG_PREDICATED": "tl.enable_lower_ldgstg_predicated",
    "TL_ENABLE_VECTORIZE_PLANNER_VERBOSE": "tl.enable_vectorize_planner_verbose",
    "TL_DISABLE_WGMMA": "tl.disable_wgmma",
    "TL_DEBUG_MERGE_SHARED_MEMORY_ALLOCATIONS": "tl.debug_merge_shared_memory_allocations",
    "TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE": "tl.enable_aggressive_shared_memory_merge",
    "TL_DISABLE_SHARED_MEMORY_REUSE": "tl.disable_shared_memory_reuse",
    "TL_DISABLE_SHUFFLE_ELECT": "tl.disable_shuffle_elect",
    "TL_DISABLE_LOOP_UNSWITCHING": "tl.disable_loop_unswitching",
    "TL_LOOP_UNSWITCHING_ALLOW_NON_TRIVIAL_ELSE": "tl.loop_unswitching_allow_non_trivial_else",
    "TL_IF_STMT_BINDING_INLINE_REPLAYABLE_BINDS": "tl.if_stmt_binding_inline_replayable_binds",
    "TL_DISABLE_THREAD_STORAGE_SYNC": "tl.disable_thread_storage_sync",
    "TL_FORCE_LET_INLINE": "tl.force_let_inline",
    "TL_AST_PRINT_ENABLE": "tl.ast_print_enable",
    "TL_LAYOUT_VISUALIZATION_ENABLE": "tl.layout_visualization_enable",
    "TL_LAYOUT_VISUALIZATION_FORMATS": "tl.layout_visualization_formats",
    "TL_STORAGE_REWRITE_DETECT_INPLACE": "tl.storage_rewrite_detect_inplace",
    "TL_DISABLE_OUT_OF_BOUND_WARNING": "tl.disable_out_of_bound_warning",
    "TL_ENABLE_DUMP_IR": "tl.enable_dump_ir",
    "TL_DUMP_IR_DIR": "tl.dump_ir_path",
    "TL_PASS_PROFILE": "tl.pass_profile",
    "TL_PASS_PROFILE_THRESHOLD_MS": "tl.pass_profile_threshold_ms",
    "TL_ENABLE_AUTO_WARP_SPECIALIZATION": "tl.enable_auto_warp_specialization",
    "TL_ENABLE_FP32X2_REDUCTION": "tl.enable_fp32x2_reduction",
    "TL_DYNAMIC_ALIGNMENT": "tl.dynamic_alignment",
    "TL_DISABLE_DYNAMIC_TAIL_SPLIT": "tl.disable_dynamic_tail_split",
    "TL_SIMPLIFY_ENABLE_LET_INLINE": "enable_simplify_let_inline",
    "TIR_ENABLE_EQUIV_TERMS_IN_CSE": "tir.enable_equiv_terms_in_cse_tir",
    "TIR_DISABLE_CSE": "tirx.disable_cse_tir",
    "TIR_SIMPLIFY": "tirx.Simplify",
    "TIR_DISABLE_STORAGE_REWRITE": "tirx.disable_storage_rewrite",
    "TIR_DISABLE_VECTORIZE": "tirx.disable_vectorize",
    "TIR_USE_ASYNC_COPY": "tirx.use_async_copy",
    "TIR_ENABLE_DEBUG": "tirx.enable_debug",
    "TIR_MERGE_STATIC_SMEM": "tirx.merge_static_smem",
    "TIR_ADD_LOWER_PASS": "tirx.add_lower_pass",
    "TIR_NOALIAS": "tirx.noalias",
    "CUDA_KERNELS_OUTPUT_DIR": "cuda.kernels_output_dir",
}


@pytest.fixture(autouse=True)
def _fresh_warnings():
    pass_config.reset_warnings()
    yield
    pass_config.reset_warnings()


def gemm(M, N, K, bm=64, bn=64, bk=32, stages=2):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            As = T.alloc_shared((bm, bk), T.float16)
            Bs = T.alloc_shared((bk, bn), T.float16)
            Cl = T.alloc_fragment((bm, bn), T.float32)
            T.clear(Cl)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, k * bk], As)
                T.copy(B[k * bk, bx * bn], Bs)
                T.gemm(As, Bs, Cl)
            T.copy(Cl, C[by * bm, bx * bn])

    return main


@tilelang.jit(out_idx=[-1], target="c")
def add_one(M, block=32):
    @T.prim_func
    def main(A: T.Tensor((M,), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, block)) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] + 1.0

    return main


def source(func, target=SM90, **cfg) -> str:
    return tilelang.lower(func, target=target, enable_device_compile=False, pass_configs=cfg or None).kernel_source


def need_nvcc():
    from tilelang.backend.target import nvcc_path

    if nvcc_path() is None:
        pytest.skip("nvcc not found")


# -- PassConfigKey ----------------------------------------------------------------------------------


def test_every_public_key_exists_with_its_value():
    for name, value in PUBLIC_KEYS.items():
        assert getattr(tilelang.PassConfigKey, name).value == value, name
        assert PassConfigKey(value).name == name
    assert tilelang.PassConfigKey is PassConfigKey
    from tilelang.transform.pass_config import PassConfigKey as P2

    assert P2 is PassConfigKey
    assert all(m.value in pass_config.KEYS for m in PassConfigKey)  # every member is classified


def test_enum_and_string_forms_are_the_same():
    f = gemm(200, 136, 72)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        by_enum = source(f, **{PassConfigKey.TL_DISABLE_TMA_LOWER: True})
        by_str = source(f, **{"tl.disable_tma_lower": True})
    assert by_enum == by_str
    assert pass_config.check({PassConfigKey.TL_DISABLE_TMA_LOWER: True}) == {"tl.disable_tma_lower": True}
    assert pass_config.check({"tir.use_async_copy": False})["tl.enable_async_copy"] is False  # old spelling


def test_unknown_key_warns_with_the_closest_name():
    with pytest.warns(
        pass_config.PassConfigWarning, match=r"'tl\.disable_tma_lowr'.*did you mean 'tl\.disable_tma_lower'"
    ):
        tilelang.compile(add_one.get_tir(41), out_idx=[-1], target="c", pass_configs={"tl.disable_tma_lowr": True})
    with pytest.warns(pass_config.PassConfigWarning, match=r"TL_ENABLE_FAST_MATH"):
        pass_config.check({"TL_ENABLE_FASTMATH": True})


def test_no_effect_key_warns_once_per_process():
    cfg = {PassConfigKey.TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE: True}
    with pytest.warns(pass_config.PassConfigWarning, match="no effect") as rec:
        k = tilelang.compile(add_one.get_tir(77), out_idx=[-1], target="c", pass_configs=cfg)
    assert sum("aggressive_shared_memory_merge" in str(w.message) for w in rec) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the second time: silent
        tilelang.compile(
            add_one.get_tir(78), out_idx=[-1], target="c", pass_configs={"tl.enable_aggressive_shared_memory_merge": 1}
        )
    a = torch.randn(77)
    torch.testing.assert_close(k(a), a + 1)


def test_acting_keys_and_satisfied_values_are_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pass_config.check(
            {
                PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True,
                PassConfigKey.TL_ENABLE_FAST_MATH: True,
                PassConfigKey.TL_DISABLE_DATA_RACE_CHECK: True,  # there is no race check: asked-for behaviour
                PassConfigKey.TIR_NOALIAS: True,
                PassConfigKey.TL_PTXAS_REGISTER_USAGE_LEVEL: 8,
            }
        )
    with pytest.warns(pass_config.PassConfigWarning, match="no data-race check"):
        pass_config.check({PassConfigKey.TL_DISABLE_DATA_RACE_CHECK: False})  # asks for a check we lack


# -- acting keys change what is built ---------------------------------------------------------------


def test_disable_tma_lower_gives_cp_async_on_sm90a():
    f = gemm(200, 136, 72)
    plain = source(f)
    with pytest.warns(DeprecationWarning, match="disable_tma"):
        no_tma = source(f, **{PassConfigKey.TL_DISABLE_TMA_LOWER: True})
    assert "tma_load" in plain and "cp_async" not in plain
    assert "tma_load" not in no_tma and "cp_async" in no_tma


def test_async_copy_switch_and_its_tir_spelling():
    f = gemm(200, 136, 72)
    assert "cp_async" in source(f, SM80)
    assert "cp_async" not in source(f, SM80, **{"tl.enable_async_copy": False})
    assert source(f, SM80, **{PassConfigKey.TIR_USE_ASYNC_COPY: False}) == source(
        f, SM80, **{"tl.enable_async_copy": False}
    )


def staged_transpose(M, N, b=32):
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), B: T.Tensor((N, M), T.float32)):
        with T.Kernel(T.ceildiv(N, b), T.ceildiv(M, b), threads=128) as (bx, by):
            S = T.alloc_shared((b, b), T.float32)
            T.copy(A[by * b, bx * b], S)
            for i, j in T.Parallel(b, b):
                B[bx * b + i, by * b + j] = S[j, i]

    return main


def test_disable_thread_storage_sync_drops_barriers():
    f = staged_transpose(70, 45)
    assert "__syncthreads" in source(f, SM80)
    assert "__syncthreads" not in source(f, SM80, **{PassConfigKey.TL_DISABLE_THREAD_STORAGE_SYNC: True})
    a, b = torch.randn(70, 45), torch.zeros(45, 70)
    simulate(f, [a, b])
    torch.testing.assert_close(b, a.T)


def causal_fill(M, N, bm=32, bn=32):
    @T.prim_func
    def main(O: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            S = T.alloc_fragment((bm, bn), T.float32)
            for i, j in T.Parallel(bm, bn):
                S[i, j] = T.if_then_else(by * bm + i >= bx * bn + j, 1.0, -2.0)
            T.copy(S, O[by * bm, bx * bn])

    return main


def test_disable_loop_unswitching_keeps_the_select_in_the_loop():
    M, N = 70, 90
    f = causal_fill(M, N)
    hoisted, kept = source(f, SM80), source(f, SM80, **{PassConfigKey.TL_DISABLE_LOOP_UNSWITCHING: True})
    assert hoisted != kept and hoisted.count("if (") > kept.count("if (")
    ref = torch.where(torch.arange(M)[:, None] >= torch.arange(N)[None, :], 1.0, -2.0)
    for cfg in ({}, {"tl.disable_loop_unswitching": True}):
        out = torch.zeros(M, N)
        simulate(f, [out], pass_configs=cfg)
        torch.testing.assert_close(out, ref)


def test_ast_print_and_pass_profile(capsys):
    f = gemm(100, 72, 40)
    source(f, SM80, **{PassConfigKey.TL_AST_PRINT_ENABLE: True, PassConfigKey.TL_PASS_PROFILE: True})
    out = capsys.readouterr()
    assert "tile IR of `main`" in out.out and "gemm" in out.out
    assert "pass profile (cuda" in out.err and "infer_layout" in out.err


def test_dump_ir_and_kernels_output_dir_on_cuda(tmp_path):
    f = gemm(100, 72, 40)
    src = source(
        f,
        SM80,
        **{
            PassConfigKey.TL_ENABLE_DUMP_IR: True,
            PassConfigKey.TL_DUMP_IR_DIR: str(tmp_path / "ir"),
            PassConfigKey.CUDA_KERNELS_OUTPUT_DIR: str(tmp_path / "cu"),
        },
    )
    names = sorted(p.name for p in (tmp_path / "ir").iterdir())
    assert names[0] == "00_input.py" and any("infer_layout" in n for n in names)
    (cu,) = (tmp_path / "cu").iterdir()
    assert cu.read_text() == src


def test_ptxas_register_usage_level_and_verbose_output(capsys):
    need_nvcc()
    from tilelang.backend.cuda.build_options import nvcc_flags

    assert nvcc_flags({"tl.ptxas_register_usage_level": 10}) == ["-Xptxas=--register-usage-level=10"]
    with pytest.raises(tilelang.TileLangError, match="0..10"):
        nvcc_flags({"tl.ptxas_register_usage_level": 11})
    tilelang.disable_cache()
    try:
        art = tilelang.lower(
            gemm(100, 72, 40),
            target=SM80,
            pass_configs={
                PassConfigKey.TL_PTXAS_REGISTER_USAGE_LEVEL: 10,
                PassConfigKey.TL_ENABLE_PTXAS_VERBOSE_OUTPUT: True,
            },
        )
    finally:
        tilelang.enable_cache()
    assert art.lib_path and art.meta.get("registers")
    err = capsys.readouterr().err
    assert "nvcc/ptxas output" in err and "Used" in err and "registers" in err


# -- env, logging, cache switch ---------------------------------------------------------------------


def test_env_reads_live_and_can_be_forced(monkeypatch, tmp_path):
    from tilelang.cache import cache_dir
    from tilelang.env import env

    assert tilelang.env is env
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "a"))
    assert env.TILELANG_CACHE_DIR == str(tmp_path / "a")
    assert str(cache_dir()).startswith(str(tmp_path / "a"))
    assert env.TILELANG_TMP_DIR == str(tmp_path / "a" / "tmp")
    env.TILELANG_CACHE_DIR = str(tmp_path / "b")
    try:
        assert str(cache_dir()).startswith(str(tmp_path / "b"))
    finally:
        del env.TILELANG_CACHE_DIR
    assert env.TILELANG_CACHE_DIR == str(tmp_path / "a")
    monkeypatch.delenv("TILELANG_DEFAULT_TARGET", raising=False)
    assert env.get_default_target() == "auto"
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", '{"kind": "cuda", "arch": "sm_90"}')
    assert env.get_default_target() == {"kind": "cuda", "arch": "sm_90"}
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "yes")
    assert not env.is_cache_enabled() and not tilelang.is_cache_enabled()
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "0")
    assert env.is_cache_enabled()
    monkeypatch.delenv("TILELANG_AUTO_TUNING_CPU_UTILITIES", raising=False)
    assert env.TILELANG_AUTO_TUNING_CPU_UTILITIES == "0.9"


def test_set_log_level():
    logger = logging.getLogger("tilelang")
    old = logger.level
    try:
        tilelang.set_log_level("DEBUG")
        assert logger.level == logging.DEBUG
        tilelang.set_log_level(logging.WARNING)
        assert logger.level == logging.WARNING
        with pytest.raises(ValueError, match="unknown log level"):
            tilelang.set_log_level("LOUD")
    finally:
        logger.setLevel(old)


def test_disable_cache_really_bypasses_the_cache(monkeypatch, tmp_path):
    from tilelang.cache import kernel_cache

    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    tilelang.compile(add_one.get_tir(53), out_idx=[-1], target="c")
    entries = list(tmp_path.rglob("meta.json"))
    assert len(entries) == 1
    tilelang.disable_cache()
    try:
        assert not tilelang.is_cache_enabled()

        def no_reads(*a, **k):
            raise AssertionError("the cache was read while disabled")

        monkeypatch.setattr(kernel_cache, "read_entry", no_reads)
        monkeypatch.setattr(kernel_cache, "write_entry", no_reads)
        k = tilelang.compile(add_one.get_tir(53), out_idx=[-1], target="c")
    finally:
        tilelang.enable_cache()
    a = torch.randn(53)
    torch.testing.assert_close(k(a), a + 1)
    assert list(tmp_path.rglob("meta.json")) == entries


# -- GemmWarpPolicy, make_swizzled_layout, carver driver ---------------------------------------------


def test_gemm_warp_policy_is_one_enum():
    from tilelang.tileop import GemmWarpPolicy as P0
    from tilelang.tileop.base import GemmWarpPolicy

    assert GemmWarpPolicy is T.GemmWarpPolicy is P0
    assert GemmWarpPolicy.FullRow.value == 1 and GemmWarpPolicy.FullCol.value == 2


def test_make_swizzled_layout_public_signature_and_use():
    import inspect

    from tilelang.layout import make_swizzled_layout

    params = list(inspect.signature(make_swizzled_layout).parameters)
    assert params[:3] == ["buffer", "k_major", "allow_pad"]

    M, N, K = 100, 72, 40

    def kern(M, N, K, bm=64, bn=64, bk=32):
        @T.prim_func
        def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float32)):
            with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
                As = T.alloc_shared((bm, bk), T.float16)
                Bs = T.alloc_shared((bk, bn), T.float16)
                Cl = T.alloc_fragment((bm, bn), T.float32)
                T.annotate_layout({As: make_swizzled_layout(As), Bs: make_swizzled_layout(Bs, k_major=False)})
                T.clear(Cl)
                for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                    T.copy(A[by * bm, k * bk], As)
                    T.copy(B[k * bk, bx * bn], Bs)
                    T.gemm(As, Bs, Cl)
                T.copy(Cl, C[by * bm, bx * bn])

        return main

    a, b = torch.randn(M, K).half(), torch.randn(K, N).half()
    c = torch.zeros(M, N)
    simulate(kern(M, N, K), [a, b, c])
    torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-2, rtol=1e-2)
    lay = make_swizzled_layout(_shared(64, 32))
    offs = lay.offsets()
    assert sorted(offs) == list(range(64 * 32))  # a bijection onto the tile


def _shared(r, c):
    from tilelang.ir.buffer import Buffer

    return Buffer("S", (r, c), "float16", "shared.dyn")


def test_carver_arch_driver_imports():
    import tilelang.carver.arch.driver as drv

    assert drv.__name__ == "tilelang.carver.arch.driver"


# -- postproc callbacks ------------------------------------------------------------------------------


@pytest.fixture
def no_postproc():
    from tilelang.engine import callback

    callback.unregister_postproc("cuda")
    yield callback
    callback.unregister_postproc("cuda")


def test_postproc_callback_forms(no_postproc):
    from tilelang.engine.callback import register_cuda_postproc_callback

    @register_cuda_postproc_callback
    def first(code, target):
        return "// first\n" + code

    assert no_postproc.postproc_for("cuda") is first

    @register_cuda_postproc_callback(override=True)
    def second(code, target):
        return "// second\n" + code

    assert no_postproc.postproc_for("cuda") is second
    with pytest.raises(ValueError, match="already registered"):
        tilelang.register_cuda_postproc(lambda c, t: c, override=False)
    tilelang.register_cuda_postproc(lambda c, t: 3)
    with pytest.raises(TypeError, match="not the source str"):
        source(gemm(100, 72, 40), SM80)
    tilelang.register_hip_postproc(lambda c, t: "// hip-postproc-marker\n" + c)  # the HIP backend applies it
    hip_src = tilelang.lower(gemm(100, 72, 40), target="hip", enable_device_compile=False).kernel_source
    assert hip_src.startswith("// hip-postproc-marker\n")
    no_postproc.unregister_postproc("hip")


def test_postproc_edit_is_in_the_source_and_the_build(no_postproc, monkeypatch, tmp_path):
    need_nvcc()
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    f = gemm(100, 72, 40)
    plain = tilelang.lower(f, target=SM80)  # built and cached without a callback
    assert "postproc-marker" not in plain.kernel_source
    seen = []

    @tilelang.engine.callback.register_cuda_postproc_callback
    def mark(code, target):
        seen.append(target.arch)
        return code.replace('extern "C"', '// postproc-marker\nextern "C"', 1)

    edited = tilelang.lower(f, target=SM80)
    assert "postproc-marker" in edited.kernel_source and seen == ["sm_80"]
    assert edited.lib_path != plain.lib_path  # not the cached kernel built without the callback
    again = tilelang.lower(f, target=SM80)  # the same callback: a cache hit on the edited build
    assert again.lib_path == edited.lib_path
    no_postproc.unregister_postproc("cuda")
    back = tilelang.lower(f, target=SM80)
    assert "postproc-marker" not in back.kernel_source and back.lib_path == plain.lib_path


def test_postproc_change_invalidates_in_process_kernels(no_postproc):
    k1 = add_one(45)
    assert add_one(45) is k1
    tilelang.register_cuda_postproc(lambda code, target: code)
    k2 = add_one(45)
    assert k2 is not k1  # rebuilt (here a disk-cache hit: the C source has no CUDA hook)
    a = torch.randn(45)
    torch.testing.assert_close(k2(a), a + 1)


# -- plot_layout and layout visualization -------------------------------------------------------------


def test_plot_layout_txt_without_matplotlib(tmp_path, monkeypatch):
    from tilelang.layout import make_mma_accumulator_fragment
    from tilelang.tools import plot_layout

    real_import = builtins.__import__

    def no_mpl(name, *args, **kw):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_mpl)
    frag = make_mma_accumulator_fragment(16, 8, 1)
    written = plot_layout(frag, save_directory=tmp_path, name="acc", formats="txt")
    assert written == [str(tmp_path / "acc.txt")]
    text = (tmp_path / "acc.txt").read_text()
    assert "T31:3" in text and "T0:0" in text
    with pytest.raises(ImportError, match="pip install matplotlib"):
        plot_layout(frag, save_directory=tmp_path, name="acc", formats="png")
    with pytest.raises(ValueError, match="unknown layout plot format"):
        plot_layout(frag, save_directory=tmp_path, formats="jpg")


def test_plot_layout_pictures_differ_per_layout(tmp_path):
    pytest.importorskip("matplotlib")
    from tilelang.layout import make_mma_accumulator_fragment, make_swizzled_layout
    from tilelang.tools import plot_layout

    a = make_mma_accumulator_fragment(16, 8, 1)
    b = make_mma_accumulator_fragment(32, 16, 2)
    sw = make_swizzled_layout(_shared(16, 64))
    plot_layout(a, tmp_path, "a", formats="all")
    plot_layout(b, tmp_path, "b", formats=["png", "svg", "txt"])
    plot_layout(sw, tmp_path, "sw", formats="png,svg", colormap="viridis")
    for n in ("a", "b"):
        assert (tmp_path / f"{n}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (tmp_path / f"{n}.svg").read_text().lstrip().startswith("<?xml")
    assert (tmp_path / "a.pdf").read_bytes()[:4] == b"%PDF"
    assert (tmp_path / "a.png").read_bytes() != (tmp_path / "b.png").read_bytes()
    assert (tmp_path / "a.txt").read_text() != (tmp_path / "b.txt").read_text()
    assert (tmp_path / "sw.png").exists()


def two_fragments(M, N, bm=32, bn=64):
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), R: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            X = T.alloc_fragment((bm, bn), T.float32)
            S = T.alloc_fragment((bm,), T.float32)
            T.copy(A[bx * bm, 0], X)
            T.reduce_sum(X, S, dim=1)
            T.copy(S, R[bx * bm])

    return main


@pytest.mark.parametrize("formats", ["txt", "png,svg"])
def test_layout_visualization_writes_one_picture_per_fragment(tmp_path, formats, capsys):
    if formats != "txt":
        pytest.importorskip("matplotlib")
    f = two_fragments(70, 64)
    source(
        f,
        SM80,
        **{
            PassConfigKey.TL_LAYOUT_VISUALIZATION_ENABLE: True,
            PassConfigKey.TL_LAYOUT_VISUALIZATION_FORMATS: formats,
            PassConfigKey.TL_DUMP_IR_DIR: str(tmp_path),
        },
    )
    got = sorted(p.name for p in (tmp_path / "layouts").iterdir())
    want = sorted(f"main.{b}.{fmt}" for b in ("X", "S") for fmt in formats.split(","))
    assert got == want
    if formats == "txt":
        assert "X layout inference:" in capsys.readouterr().out
    else:
        assert (tmp_path / "layouts" / "main.X.png").read_bytes() != (tmp_path / "layouts" / "main.S.png").read_bytes()


def test_layout_visualization_on_the_c_target_says_nothing_is_drawn(tmp_path):
    with pytest.warns(pass_config.PassConfigWarning, match="infers no fragment layouts"):
        tilelang.compile(
            add_one.get_tir(33), out_idx=[-1], target="c", pass_configs={"tl.layout_visualization_enable": True}
        )


def test_simplify_sub_keys():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pass_config.check({PassConfigKey.TL_SIMPLIFY: {PassConfigKey.TL_SIMPLIFY_ENABLE_LET_INLINE: False}})
    with pytest.warns(pass_config.PassConfigWarning, match="transitively_prove_inequalities"):
        pass_config.check({"tl.Simplify": {"transitively_prove_inequalities": True}})
    with pytest.warns(pass_config.PassConfigWarning, match="sub-key of tl.Simplify"):
        pass_config.check({"enable_simplify_let_inline": False})


def test_emit_line_directives_point_at_this_file():
    import os

    f = staged_transpose(70, 45)
    plain = source(f, SM80)
    src = source(f, SM80, **{PassConfigKey.TL_EMIT_LINE_DIRECTIVES: True})
    here = os.path.abspath(__file__)
    assert "#line" not in plain and "#line " in src and f'"{here}"' in src
    assert src.count("#line") == plain.count("// test_api_modules.py:")
    need_nvcc()
    tilelang.disable_cache()
    try:
        art = tilelang.lower(f, target=SM80, pass_configs={"tl.emit_line_directives": True})
    finally:
        tilelang.enable_cache()
    assert art.lib_path and "#line" in art.kernel_source


def test_diagnostics_run_on_a_cache_hit(tmp_path, monkeypatch, capsys):
    need_nvcc()
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    f = two_fragments(70, 64)
    cfg = {PassConfigKey.TL_LAYOUT_VISUALIZATION_ENABLE: True, PassConfigKey.TL_DUMP_IR_DIR: str(tmp_path)}
    first = tilelang.lower(f, target=SM80, pass_configs=cfg)
    for p in (tmp_path / "layouts").iterdir():
        p.unlink()
    capsys.readouterr()
    again = tilelang.lower(f, target=SM80, pass_configs=cfg)  # a disk-cache hit: no nvcc, but the pictures
    assert again.lib_path == first.lib_path
    assert sorted(p.name for p in (tmp_path / "layouts").iterdir()) == ["main.S.txt", "main.X.txt"]
    assert "S layout inference:" in capsys.readouterr().out


def test_debug_merge_shared_memory_allocations_prints_the_plan(capsys):
    source(gemm(100, 72, 40), SM80, **{PassConfigKey.TL_DEBUG_MERGE_SHARED_MEMORY_ALLOCATIONS: True})
    err = capsys.readouterr().err
    assert "shared memory plan of `main`" in err and "As" in err and "Bs" in err
    source(gemm(100, 72, 40), SM80)
    assert "shared memory plan" not in capsys.readouterr().err


def test_docs_list_every_key():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "pass_configs.md").read_text()
    for m in PassConfigKey:
        assert f"| `{m.name}` | `{m.value}` |" in doc, m.name


def test_tir_disable_vectorize_keeps_accesses_per_lane():
    f = staged_transpose(70, 48)
    assert "tl::copy_vec" in source(f, SM80)
    flat = source(f, SM80, **{PassConfigKey.TIR_DISABLE_VECTORIZE: True})
    assert "tl::copy_vec" not in flat
    a = torch.randn(70, 48)
    for cfg in ({}, {"tirx.disable_vectorize": True}):
        b = torch.zeros(48, 70)
        simulate(f, [a, b], pass_configs=cfg)
        torch.testing.assert_close(b, a.T)


def test_visualization_formats_alone_warn():
    with pytest.warns(pass_config.PassConfigWarning, match="without tl.layout_visualization_enable"):
        source(two_fragments(70, 64), SM80, **{PassConfigKey.TL_LAYOUT_VISUALIZATION_FORMATS: "png"})


def test_unknown_key_far_from_everything():
    with pytest.warns(pass_config.PassConfigWarning, match=r"'zzz\.qqq' is not a TileLang pass config\. It is ignored"):
        pass_config.check({"zzz.qqq": 1})
