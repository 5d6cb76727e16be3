"""`PassConfigKey`: names of per-kernel compiler switches (`pass_configs={key: value}`).

Every key of the public TileLang 0.1.x enum is a member, with the same value
string; plain strings (`"tl.disable_tma_lower"`) work the same as members.
`check()` (run by `jit.kernel.compile_options`, so by every compile and
`tilelang.lower`) normalizes a dict and says what will happen to each key:

* a key that acts here is passed on silently (`KEYS[value].acts`);
* a public key this compiler does not implement warns once per process,
  saying it has no effect — unless its value asks for what the compiler does
  anyway (`KEYS[value].ok`: e.g. `tl.disable_data_race_check=True` where there
  is no race check), which is accepted silently;
* a key nobody defines warns (once per key) naming the closest known key.

Never an error for a key the public API defines; a bad *value* of an acting
key is an error where the key is read.
"""

from __future__ import annotations

import difflib
import enum
import os
import warnings
from dataclasses import dataclass
from typing import Any


class PassConfigWarning(UserWarning):
    """A pass config that has no effect in this compiler, or a key nobody defines."""


class PassConfigKey(str, enum.Enum):
    # -- TileLang switches (tl.*) ---------------------------------------------------------
    TL_SIMPLIFY = "tl.Simplify"
    TL_SIMPLIFY_TRANSITIVELY_PROVE_INEQUALITIES = "transitively_prove_inequalities"
    TL_SIMPLIFY_CONVERT_BOOLEAN_TO_AND_OF_ORS = "convert_boolean_to_and_of_ors"
    TL_SIMPLIFY_APPLY_CONSTRAINTS_TO_BOOLEAN_BRANCHES = "apply_constraints_to_boolean_branches"
    TL_SIMPLIFY_PROPAGATE_KNOWNS_TO_PROVE_CONDITIONAL = "propagate_knowns_to_prove_conditional"
    TL_SIMPLIFY_PROPAGATE_KNOWNS_TO_SIMPLIFY_EXPRESSIONS = "propagate_knowns_to_simplify_expressions"
    TL_SIMPLIFY_ENABLE_LET_INLINE = "enable_simplify_let_inline"
    TL_DYNAMIC_ALIGNMENT = "tl.dynamic_alignment"
    TL_DISABLE_DYNAMIC_TAIL_SPLIT = "tl.disable_dynamic_tail_split"
    TL_DISABLE_BUFFER_INIT_CHECK = "tl.disable_buffer_init_check"
    TL_DISABLE_DATA_RACE_CHECK = "tl.disable_data_race_check"
    TL_DISABLE_PRELOWER_SEMANTIC_CHECK = "tl.disable_prelower_semantic_check"
    TL_DISABLE_WARP_SPECIALIZED = "tl.disable_warp_specialized"
    TL_ENABLE_AUTO_SCHEDULE = "tl.enable_auto_schedule"
    TL_ENABLE_AUTO_WARP_SPECIALIZATION = "tl.enable_auto_warp_specialization"
    TL_ENABLE_FAST_MATH = "tl.enable_fast_math"
    TL_DISABLE_FAST_MATH = "tl.disable_fast_math"
    TL_PTXAS_REGISTER_USAGE_LEVEL = "tl.ptxas_register_usage_level"
    TL_ENABLE_PTXAS_VERBOSE_OUTPUT = "tl.enable_ptxas_verbose_output"
    TL_DEVICE_COMPILE_FLAGS = "tl.device_compile_flags"
    TL_EMIT_LINE_DIRECTIVES = "tl.emit_line_directives"
    TL_CONFIG_INDEX_BITWIDTH = "tl.config_index_bitwidth"
    TL_ENABLE_REDUCER_PLAN_VERBOSE = "tl.enable_reducer_plan_verbose"
    TL_LAYOUT_COST_MODEL = "tl.layout_cost_model"
    TL_REDUCER_FORCE_BASELINE = "tl.reducer_force_baseline"
    TL_DISABLE_TMA_LOWER = "tl.disable_tma_lower"
    TL_DISABLE_SAFE_MEMORY_ACCESS = "tl.disable_safe_memory_legalize"
    TL_DISABLE_VECTORIZE_256 = "tl.disable_vectorize_256"
    TL_ENABLE_FP32X2_REDUCTION = "tl.enable_fp32x2_reduction"
    TL_ENABLE_ASYNC_COPY = "tl.enable_async_copy"
    TL_ENABLE_LOWER_LDGSTG = "tl.enable_lower_ldgstg"
    TL_ENABLE_LOWER_LDGSTG_PREDICATED = "tl.enable_lower_ldgstg_predicated"
    TL_ENABLE_VECTORIZE_PLANNER_VERBOSE = "tl.enable_vectorize_planner_verbose"
    TL_DISABLE_WGMMA = "tl.disable_wgmma"
    TL_DEBUG_MERGE_SHARED_MEMORY_ALLOCATIONS = "tl.debug_merge_shared_memory_allocations"
    TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE = "tl.enable_aggressive_shared_memory_merge"
    TL_DISABLE_SHARED_MEMORY_REUSE = "tl.disable_shared_memory_reuse"
    TL_DISABLE_SHUFFLE_ELECT = "tl.disable_shuffle_elect"
    TL_DISABLE_LOOP_UNSWITCHING = "tl.disable_loop_unswitching"
    TL_LOOP_UNSWITCHING_ALLOW_NON_TRIVIAL_ELSE = "tl.loop_unswitching_allow_non_trivial_else"
    TL_IF_STMT_BINDING_INLINE_REPLAYABLE_BINDS = "tl.if_stmt_binding_inline_replayable_binds"
    TL_DISABLE_THREAD_STORAGE_SYNC = "tl.disable_thread_storage_sync"
    TL_FORCE_LET_INLINE = "tl.force_let_inline"
    TL_AST_PRINT_ENABLE = "tl.ast_print_enable"
    TL_LAYOUT_VISUALIZATION_ENABLE = "tl.layout_visualization_enable"
    TL_LAYOUT_VISUALIZATION_FORMATS = "tl.layout_visualization_formats"
    TL_STORAGE_REWRITE_DETECT_INPLACE = "tl.storage_rewrite_detect_inplace"
    TL_DISABLE_OUT_OF_BOUND_WARNING = "tl.disable_out_of_bound_warning"
    TL_ENABLE_DUMP_IR = "tl.enable_dump_ir"
    TL_DUMP_IR_DIR = "tl.dump_ir_path"
    TL_PASS_PROFILE = "tl.pass_profile"
    TL_PASS_PROFILE_THRESHOLD_MS = "tl.pass_profile_threshold_ms"
    # this compiler's own scheduling switches
    TL_DISABLE_RASTERIZATION = "tl.disable_rasterization"
    TL_DISABLE_AUTO_PERSISTENT = "tl.disable_auto_persistent"
    TL_DISABLE_ROW_SPLIT = "tl.disable_row_split"
    TL_ENABLE_BOUNDS_CHECK = "tl.enable_bounds_check"
    # -- TIR switches (the public enum spells most of them tirx.*) -------------------------
    TIR_ENABLE_EQUIV_TERMS_IN_CSE = "tir.enable_equiv_terms_in_cse_tir"
    TIR_DISABLE_CSE = "tirx.disable_cse_tir"
    TIR_SIMPLIFY = "tirx.Simplify"
    TIR_DISABLE_STORAGE_REWRITE = "tirx.disable_storage_rewrite"
    TIR_DISABLE_VECTORIZE = "tirx.disable_vectorize"
    TIR_USE_ASYNC_COPY = "tirx.use_async_copy"
    TIR_ENABLE_DEBUG = "tirx.enable_debug"
    TIR_MERGE_STATIC_SMEM = "tirx.merge_static_smem"
    TIR_ADD_LOWER_PASS = "tirx.add_lower_pass"
    TIR_NOALIAS = "tirx.noalias"
    CUDA_KERNELS_OUTPUT_DIR = "cuda.kernels_output_dir"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class KeyInfo:
    acts: bool
    note: str  # acting keys: what reads it; others: why it has no effect here
    ok: tuple = ()  # values whose request is already this compiler's behaviour (accepted silently)


def _acts(note: str) -> KeyInfo:
    return KeyInfo(True, note)


def _none(note: str, *ok: Any) -> KeyInfo:
    return KeyInfo(False, note, ok)


_SUB = "a sub-key of tl.Simplify: pass it as pass_configs={'tl.Simplify': {...}}"
_NO_CSE = "this compiler has no common-subexpression-elimination pass"

K = PassConfigKey
KEYS: dict[str, KeyInfo] = {
    K.TL_SIMPLIFY: _acts("transform/simplify.py reads enable_simplify_let_inline"),
    K.TL_SIMPLIFY_TRANSITIVELY_PROVE_INEQUALITIES: _none(_SUB),
    K.TL_SIMPLIFY_CONVERT_BOOLEAN_TO_AND_OF_ORS: _none(_SUB),
    K.TL_SIMPLIFY_APPLY_CONSTRAINTS_TO_BOOLEAN_BRANCHES: _none(_SUB),
    K.TL_SIMPLIFY_PROPAGATE_KNOWNS_TO_PROVE_CONDITIONAL: _none(_SUB),
    K.TL_SIMPLIFY_PROPAGATE_KNOWNS_TO_SIMPLIFY_EXPRESSIONS: _none(_SUB),
    K.TL_SIMPLIFY_ENABLE_LET_INLINE: _none(_SUB),
    K.TL_DYNAMIC_ALIGNMENT: _none("dynamic shapes are guarded per access, not assumed aligned"),
    K.TL_DISABLE_DYNAMIC_TAIL_SPLIT: _none("this compiler does not split dynamic loop tails"),
    K.TL_DISABLE_BUFFER_INIT_CHECK: _none("this compiler has no buffer-initialization check", True),
    K.TL_DISABLE_DATA_RACE_CHECK: _none("this compiler has no data-race check", True),
    K.TL_DISABLE_PRELOWER_SEMANTIC_CHECK: _none("the frontend and `verify` checks always run", False),
    K.TL_DISABLE_WARP_SPECIALIZED: _acts("inject_pipeline / auto_persistent: no producer warpgroup"),
    K.TL_ENABLE_AUTO_SCHEDULE: _none("an Ascend switch; there is no Ascend backend"),
    K.TL_ENABLE_AUTO_WARP_SPECIALIZATION: _none("warp specialization is automatic on sm_90a"),
    K.TL_ENABLE_FAST_MATH: _acts("CUDA: nvcc --use_fast_math; Metal: metal::fast:: math functions"),
    K.TL_DISABLE_FAST_MATH: _acts("CUDA / Metal: no fast math even when tl.enable_fast_math is set"),
    K.TL_PTXAS_REGISTER_USAGE_LEVEL: _acts("CUDA: ptxas --register-usage-level=N (0..10)"),
    K.TL_ENABLE_PTXAS_VERBOSE_OUTPUT: _acts("CUDA: ptxas statistics printed to stderr"),
    K.TL_DEVICE_COMPILE_FLAGS: _acts("extra nvcc / cc flags"),
    K.TL_EMIT_LINE_DIRECTIVES: _acts("CUDA: `#line` directives to the Python source instead of `// file:line`"),
    K.TL_CONFIG_INDEX_BITWIDTH: _none("this compiler chooses index widths itself"),
    K.TL_ENABLE_REDUCER_PLAN_VERBOSE: _none("this compiler has no reducer planner", False),
    K.TL_LAYOUT_COST_MODEL: _none("layout inference has one fixed ranking of layout sources"),
    K.TL_REDUCER_FORCE_BASELINE: _none("this compiler has no reducer planner", False),
    K.TL_DISABLE_TMA_LOWER: _acts("sm_90: cp.async pipelines and plain stores instead of TMA"),
    K.TL_DISABLE_SAFE_MEMORY_ACCESS: _acts("legalize_memory_access: no bounds guards"),
    K.TL_DISABLE_VECTORIZE_256: _none("this compiler never emits 256-bit loads/stores (sm_100 only)", True, False),
    K.TL_ENABLE_FP32X2_REDUCTION: _none("packed fp32x2 reductions are sm_100 only; no such target here", True, False),
    K.TL_ENABLE_ASYNC_COPY: _acts("inject_pipeline: False gives synchronous copies (no cp.async / TMA)"),
    K.TL_ENABLE_LOWER_LDGSTG: _none("this compiler does not emit explicit ldg/stg", False),
    K.TL_ENABLE_LOWER_LDGSTG_PREDICATED: _none("this compiler does not emit explicit ldg/stg", False),
    K.TL_ENABLE_VECTORIZE_PLANNER_VERBOSE: _none("the vectorizer has no verbose mode", False),
    K.TL_DISABLE_WGMMA: _acts("infer_layout: mma.sync instead of wgmma on sm_90a"),
    K.TL_DEBUG_MERGE_SHARED_MEMORY_ALLOCATIONS: _acts("plan_shared_memory prints its plan to stderr"),
    K.TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE: _none(
        "plan_shared_memory always reuses the storage of buffers whose lifetimes do not overlap", False
    ),
    K.TL_DISABLE_SHARED_MEMORY_REUSE: _acts("plan_shared_memory: every buffer gets its own region"),
    K.TL_DISABLE_SHUFFLE_ELECT: _none("this compiler does not use shuffle election", True, False),
    K.TL_DISABLE_LOOP_UNSWITCHING: _acts("hoist_uniform_select: tile-uniform selects stay inside the loop"),
    K.TL_LOOP_UNSWITCHING_ALLOW_NON_TRIVIAL_ELSE: _none("hoist_uniform_select has no such mode", False),
    K.TL_IF_STMT_BINDING_INLINE_REPLAYABLE_BINDS: _none("this compiler has no if-statement binding pass"),
    K.TL_DISABLE_THREAD_STORAGE_SYNC: _acts("inject_sync: no automatic barriers"),
    K.TL_FORCE_LET_INLINE: _none("use tl.Simplify={'enable_simplify_let_inline': True}", False),
    K.TL_AST_PRINT_ENABLE: _acts("the tile IR is printed to stdout before lowering"),
    K.TL_LAYOUT_VISUALIZATION_ENABLE: _acts("CUDA: every inferred fragment drawn (tilelang.tools.layout_visual)"),
    K.TL_LAYOUT_VISUALIZATION_FORMATS: _acts("formats of those drawings: txt, png, pdf, svg, all"),
    K.TL_STORAGE_REWRITE_DETECT_INPLACE: _none("this compiler has no storage-rewrite pass", False),
    K.TL_DISABLE_OUT_OF_BOUND_WARNING: _none("this compiler does not warn about out-of-bounds accesses", True),
    K.TL_ENABLE_DUMP_IR: _acts("the IR after every pass, written to tl.dump_ir_path"),
    K.TL_DUMP_IR_DIR: _acts("where tl.enable_dump_ir writes (default ./dump_ir)"),
    K.TL_PASS_PROFILE: _acts("per-pass times printed to stderr"),
    K.TL_PASS_PROFILE_THRESHOLD_MS: _acts("only passes slower than this are printed"),
    K.TL_DISABLE_RASTERIZATION: _acts("auto_rasterize off"),
    K.TL_DISABLE_AUTO_PERSISTENT: _acts("auto_persistent off"),
    K.TL_DISABLE_ROW_SPLIT: _acts("split_rows off"),
    K.TL_ENABLE_BOUNDS_CHECK: _acts("every on-chip access checked at run time (also TILELANG_BOUNDS_CHECK=1)"),
    K.TIR_ENABLE_EQUIV_TERMS_IN_CSE: _none(_NO_CSE),
    K.TIR_DISABLE_CSE: _none(_NO_CSE, True),
    K.TIR_SIMPLIFY: _none("use tl.Simplify; the TIR simplifier does not exist here"),
    K.TIR_DISABLE_STORAGE_REWRITE: _none("this compiler has no storage-rewrite pass", True),
    K.TIR_DISABLE_VECTORIZE: _acts(
        "CUDA: synchronous accesses stay per element (no tl::copy_vec); cp.async keeps its chunks"
    ),
    K.TIR_USE_ASYNC_COPY: _acts("the same switch as tl.enable_async_copy"),
    K.TIR_ENABLE_DEBUG: _none("there is no debug build mode", False),
    K.TIR_MERGE_STATIC_SMEM: _none("shared memory is always one dynamic block", True),
    K.TIR_ADD_LOWER_PASS: _none("add a pass by adding a line to backend/<target>/pipeline.py"),
    K.TIR_NOALIAS: _none("kernel pointers are always __restrict__ unless annotated otherwise", True),
    K.CUDA_KERNELS_OUTPUT_DIR: _acts("CUDA: the generated .cu written to this directory"),
}
KEYS = {str(k.value): v for k, v in KEYS.items()}
del K

# spellings older releases used for the same switches
ALIASES = {
    "tir.disable_cse_tir": "tirx.disable_cse_tir",
    "tir.Simplify": "tirx.Simplify",
    "tir.disable_storage_rewrite": "tirx.disable_storage_rewrite",
    "tir.disable_vectorize": "tirx.disable_vectorize",
    "tir.use_async_copy": "tirx.use_async_copy",
    "tir.enable_debug": "tirx.enable_debug",
    "tir.merge_static_smem": "tirx.merge_static_smem",
    "tir.add_lower_pass": "tirx.add_lower_pass",
    "tir.noalias": "tirx.noalias",
    "tirx.enable_equiv_terms_in_cse_tir": "tir.enable_equiv_terms_in_cse_tir",
}

_DEPRECATED = {
    "tl.disable_tma_lower": "`tl.disable_tma_lower` is deprecated; use `T.copy(..., disable_tma=True)` per copy",
}

_warned: set[str] = set()
_SIMPLIFY_ACTS = ("enable_simplify_let_inline",)  # the tl.Simplify sub-keys transform/simplify.py reads


def reset_warnings() -> None:
    """Forget which keys already warned (tests)."""
    _warned.clear()


def normalize(configs: dict | None) -> dict:
    """Keys as strings (enum members → their value, older spellings → the current ones)."""
    out = {}
    for k, v in (configs or {}).items():
        s = str(getattr(k, "value", k))
        out[ALIASES.get(s, s)] = v
    if "tirx.use_async_copy" in out and "tl.enable_async_copy" not in out:  # one switch, two names
        out["tl.enable_async_copy"] = out["tirx.use_async_copy"]
    return out


def _stacklevel() -> int:
    """The stack level of the first frame outside this package, so a warning points at the user's line."""
    import sys

    pkg = os.path.dirname(os.path.abspath(__file__))
    f, level = sys._getframe(1), 1
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(pkg + os.sep):
        f, level = f.f_back, level + 1
    return level


def warn_once(tag: str, msg: str, category: type = PassConfigWarning) -> None:
    """Warn `msg` unless `tag` already warned in this process; attributed to the user's line."""
    if tag in _warned:
        return
    _warned.add(tag)
    warnings.warn(msg, category, stacklevel=_stacklevel())


def closest_key(key: str) -> str | None:
    """The known key (value string) nearest to `key`, matching member names too."""
    names = {m.name: m.value for m in PassConfigKey}
    pool = list(KEYS) + list(names)
    hit = difflib.get_close_matches(key, pool, n=1, cutoff=0.5)
    if not hit:
        hit = difflib.get_close_matches(key.lower(), [p.lower() for p in pool], n=1, cutoff=0.5)
        hit = [next(p for p in pool if p.lower() == hit[0])] if hit else []
    return names.get(hit[0], hit[0]) if hit else None


def check(configs: dict | None) -> dict:
    """`normalize(configs)`, warning about keys that have no effect here or that nobody defines."""
    cfg = normalize(configs)
    for key, value in cfg.items():
        info = KEYS.get(key)
        if info is None:
            near = closest_key(key)
            hint = f"; did you mean {near!r} (PassConfigKey.{PassConfigKey(near).name})?" if near else ""
            warn_once(
                "unknown:" + key,
                f"pass_configs key {key!r} is not a TileLang pass config{hint or '.'} It is ignored.",
            )
            continue
        if key in _DEPRECATED:
            warn_once("deprecated:" + key, _DEPRECATED[key], DeprecationWarning)
        if not info.acts and not _satisfied(value, info.ok):
            warn_once(
                "noeffect:" + key,
                f"pass config {key!r} (PassConfigKey.{PassConfigKey(key).name}) = {value!r} has no effect "
                f"in this compiler: {info.note}.",
            )
    for sub, value in (cfg.get("tl.Simplify") or {}).items() if isinstance(cfg.get("tl.Simplify"), dict) else ():
        sub = str(getattr(sub, "value", sub))
        if sub not in _SIMPLIFY_ACTS and value:
            warn_once(
                "noeffect:tl.Simplify." + sub,
                f"tl.Simplify sub-config {sub!r} = {value!r} has no effect in this compiler: "
                f"its simplifier reads only {', '.join(sorted(_SIMPLIFY_ACTS))}.",
            )
    return cfg


def _satisfied(value: Any, ok: tuple) -> bool:
    return any(type(value) in (bool, int) and value == o for o in ok)


def in_force(func: Any, ctx: Any) -> dict:
    """The pass configs a pass sees for `func` (a PrimFunc, or None) under `ctx` (a
    `transform.context.CompileContext`, a dict of its keys, or None): the function's own
    `pass_configs` attribute overridden by `ctx.pass_configs`, keys as strings."""
    from .transform.context import CompileContext

    cfg = dict((func.attrs.get("pass_configs") or {}) if func is not None else {})
    cfg.update(CompileContext.of(ctx).pass_configs)
    return normalize(cfg)
