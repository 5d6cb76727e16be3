"""Every seed kernel and every example kernel as a PrimFunc at small sizes: what the
CUDA compile tests lower and build, and what the simulation tests run."""

from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_LOCK = threading.Lock()


def _example(rel: str):
    """Import examples/<rel> once (thread-safe: the compile tests trace kernels from a pool)."""
    name = "ex_" + rel.replace("/", "_").removesuffix(".py")
    with _LOCK:
        mod = sys.modules.get(name)
        if mod is None:
            if str(ROOT / "examples") not in sys.path:
                sys.path.insert(0, str(ROOT / "examples"))
            spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / rel)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            sys.modules[name] = mod
    return mod


def seed_funcs() -> dict:
    from seeds import seed_kernels as S

    return {
        "seed.vector_add": lambda: S.vector_add.get_tir(M=1000),
        "seed.matmul": lambda: S.matmul.get_tir(M=200, N=136, K=72, block_M=64, block_N=64, block_K=32),
        "seed.matmul_relu": lambda: S.matmul_relu.get_tir(M=256, N=256, K=64, block_M=128, block_N=128, block_K=32),
        "seed.flashattn_causal": lambda: S.flashattn.get_tir(1, 2, 128, 64, True),
        "seed.fragment_reduce": lambda: S.fragment_reduce.get_tir(),
        "seed.reducer_sum": lambda: S.reducer_sum.get_tir(),
        "seed.matmul_dynamic": lambda: S.matmul_dynamic_mnk.get_tir(
            block_M=64,
            block_N=64,
            block_K=32,
            trans_A=False,
            trans_B=False,
            in_dtype="float16",
            out_dtype="float16",
            accum_dtype="float32",
            num_stages=2,
            threads=128,
        ),  # fmt: skip
        "seed.matmul_persistent": lambda: S.matmul_persistent.get_tir(256, 256, 64, 128, 128, 32, 128, 2, 3),
        "seed.matmul_splitk": lambda: S.matmul_splitk.get_tir(96, 80, 256, 64, 64, 32, 4),
        "seed.matmul_stage_order": lambda: S.matmul_stage_order.get_tir(200, 136, 72),
        "seed.elementwise_op": lambda: S.elementwise_op.get_tir(200, 300, 32, 64, 128),
        "seed.conditional_elementwise": lambda: S.conditional_elementwise.get_tir(1000, 128),
        "seed.reduction_op": lambda: S.reduction_op.get_tir(3, 100, 128),
        "seed.layer_norm": lambda: S.layer_norm.get_tir(3, 384, 128),
        "seed.matmul_pattern": lambda: S.matmul_pattern.get_tir(200, 136, 72, 64, 64, 32),
        "seed.gemv": lambda: S.gemv.get_tir(100, 60, 64, 16),
    }


def example_funcs() -> dict:
    def ex(rel, attr, *args, **kw):
        kw.pop("_eager", None)

        def make():
            return getattr(_example(rel), attr).get_tir(*args, **kw)

        return make

    return {
        "ex.quickstart": ex(
            "quickstart.py", "matmul", M=256, N=256, K=128, block_M=128, block_N=128, block_K=32, _eager=True
        ),
        "ex.vector_add": ex("elementwise/vector_add.py", "vector_add", M=1000, _eager=True),
        "ex.vector_add_relu": ex("elementwise/vector_add.py", "vector_add_relu", M=1000, block_M=64, _eager=True),
        "ex.elementwise_add": ex("elementwise/vector_add.py", "elementwise_add", 200, 300, 32, 64, 128),
        "ex.conditional_elementwise": ex("elementwise/vector_add.py", "conditional_elementwise", 1000, 128),
        "ex.gemm_eager": ex(
            "gemm/gemm.py", "matmul", M=200, N=136, K=72, block_M=64, block_N=64, block_K=32, _eager=True
        ),
        "ex.gemm_lazy": ex("gemm/gemm.py", "matmul_lazy", 200, 136, 72, 64, 64, 32),
        "ex.gemm_bf16_nt": ex("gemm/gemm.py", "matmul_bf16_nt", 200, 136, 72, 64, 64, 32),
        "ex.gemm_stage_order": ex("gemm/gemm.py", "matmul_stage_order", 200, 136, 72),
        "ex.gemm_persistent": ex("gemm/persistent.py", "matmul_persistent", 256, 256, 64, 128, 128, 32, 128, 2, 3),
        "ex.splitk": ex("gemm_splitk/splitk.py", "matmul_splitk", 96, 80, 256, 64, 64, 32, 4),
        "ex.gemv": ex("gemv/gemv.py", "gemv", 300, 200, 128, 32),
        "ex.layer_norm": ex("norm/layer_norm.py", "layer_norm", 100, 384, 128),
        "ex.rms_norm": ex("norm/rms_norm.py", "rms_norm", 64, 1000),
        "ex.row_sum": ex("norm/rms_norm.py", "row_sum", 64, 1000, 128),
        "ex.fragment_reduce": ex("reduce/reducer.py", "fragment_reduce", _eager=True),
        "ex.reducer_rows": ex("reduce/reducer.py", "reducer_rows", R=48, W=70, _eager=True),
        "ex.reducer_rows_max": ex("reduce/reducer.py", "reducer_rows", R=48, W=70, op="max", _eager=True),
        "ex.prefix_sum": ex("reduce/reducer.py", "prefix_sum", M=1000, _eager=True),
        "ex.matmul_dynamic": ex(
            "dynamic_shape/matmul_dynamic.py",
            "matmul_dynamic_mnk",
            block_M=64,
            block_N=64,
            block_K=32,
            trans_A=False,
            trans_B=False,
            in_dtype="float16",
            out_dtype="float16",
            accum_dtype="float32",
            num_stages=2,
            threads=128,
            _eager=True,
        ),  # fmt: skip
        "ex.flash_attention": ex("flash_attention/mha_fwd.py", "flashattn", 1, 2, 200, 64, False),
        "ex.flash_attention_causal": ex("flash_attention/mha_fwd.py", "flashattn", 1, 2, 200, 64, True),
    }


def extra_funcs() -> dict:
    import kernels as KZ

    return {
        "kz.debug_print_assert": lambda: KZ.debug_print_assert.get_tir(64),
        "kz.gemm_tf32_trans": lambda: KZ.gemm.get_tir(96, 80, 64, 64, 64, 32, "float32", trans_a=True, trans_b=True),
        "kz.gemm_int8": lambda: KZ.gemm.get_tir(128, 128, 128, 64, 64, 64, "int8", "int32", "int32", trans_b=True),
        "kz.gemm_fp16_acc": lambda: KZ.gemm.get_tir(128, 128, 128, 64, 64, 32, "float16", "float16", "float16"),
        "kz.gemm_bf16_fullcol": lambda: KZ.gemm.get_tir(128, 128, 64, 64, 64, 32, "bfloat16", policy="FullCol"),
        "kz.cast_copy": lambda: KZ.cast_copy.get_tir(50, 70),
        "kz.atomic_sum_rows": lambda: KZ.atomic_sum_rows.get_tir(40, 24),
        "kz.column_sum_of_gemm": lambda: KZ.column_sum_of_gemm.get_tir(64, 64, 32),
    }


def all_funcs() -> dict:
    return {**seed_funcs(), **example_funcs(), **extra_funcs()}
