"""`PassConfigKey`: names of per-kernel compiler switches (`pass_configs={key: value}`).

Plain strings (`"tl.disable_tma_lower"`) work as well; unknown keys are kept
and ignored by passes that do not read them.
"""

from __future__ import annotations

import enum
from typing import Any


class PassConfigKey(str, enum.Enum):
    TL_ENABLE_FAST_MATH = "tl.enable_fast_math"
    TL_DISABLE_WARP_SPECIALIZED = "tl.disable_warp_specialized"
    TL_DISABLE_TMA_LOWER = "tl.disable_tma_lower"
    TL_DISABLE_WGMMA = "tl.disable_wgmma"
    TL_DISABLE_RASTERIZATION = "tl.disable_rasterization"
    TL_DISABLE_AUTO_PERSISTENT = "tl.disable_auto_persistent"
    TL_DISABLE_ROW_SPLIT = "tl.disable_row_split"
    TL_DISABLE_THREAD_STORAGE_SYNC = "tl.disable_thread_storage_sync"
    TL_PTXAS_REGISTER_USAGE_LEVEL = "tl.ptxas_register_usage_level"
    TL_SIMPLIFY = "tl.Simplify"
    TL_DISABLE_BUFFER_INIT_CHECK = "tl.disable_buffer_init_check"
    TL_DISABLE_DATA_RACE_CHECK = "tl.disable_data_race_check"
    TL_DISABLE_PRELOWER_SEMANTIC_CHECK = "tl.disable_prelower_semantic_check"
    TL_DISABLE_OUT_OF_BOUND_WARNING = "tl.disable_out_of_bound_warning"
    TL_DISABLE_SAFE_MEMORY_ACCESS = "tl.disable_safe_memory_legalize"
    TL_DEVICE_COMPILE_FLAGS = "tl.device_compile_flags"
    TL_EMIT_LINE_DIRECTIVES = "tl.emit_line_directives"
    TL_CONFIG_INDEX_BITWIDTH = "tl.config_index_bitwidth"
    TL_LAYOUT_COST_MODEL = "tl.layout_cost_model"
    TL_DISABLE_VECTORIZE_256 = "tl.disable_vectorize_256"
    TL_ENABLE_ASYNC_COPY = "tl.enable_async_copy"
    TL_DISABLE_SHARED_MEMORY_REUSE = "tl.disable_shared_memory_reuse"
    TL_DISABLE_LOOP_UNSWITCHING = "tl.disable_loop_unswitching"
    TL_AST_PRINT_ENABLE = "tl.ast_print_enable"
    TL_LAYOUT_VISUALIZATION_ENABLE = "tl.layout_visualization_enable"
    TL_LAYOUT_VISUALIZATION_FORMATS = "tl.layout_visualization_formats"
    TL_ENABLE_DUMP_IR = "tl.enable_dump_ir"
    TL_DUMP_IR_DIR = "tl.dump_ir_path"
    TL_PASS_PROFILE = "tl.pass_profile"
    TIR_DISABLE_VECTORIZE = "tirx.disable_vectorize"
    TIR_USE_ASYNC_COPY = "tirx.use_async_copy"
    TIR_DISABLE_CSE = "tirx.disable_cse_tir"

    def __str__(self) -> str:
        return self.value


def normalize(configs: dict | None) -> dict:
    return {str(getattr(k, "value", k)): v for k, v in (configs or {}).items()}


def in_force(func: Any, ctx: dict | None) -> dict:
    """The pass configs a pass sees for `func` (a PrimFunc, or None) under `ctx`: the
    function's own `pass_configs` attribute overridden by `ctx["pass_configs"]`, keys as strings."""
    cfg = dict((func.attrs.get("pass_configs") or {}) if func is not None else {})
    cfg.update((ctx or {}).get("pass_configs") or {})
    return normalize(cfg)
