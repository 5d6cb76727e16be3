"""Layouts: where each element of a buffer lives.

- `Layout` — logical index -> physical index (shared-memory swizzles, padding).
- `Fragment` — element -> (thread, register), with replication (register tiles).
- `gemm` — mma.sync / wgmma operand and accumulator fragments, warp partitions.
- `swizzle` — TMA/wgmma-compatible 32/64/128-byte swizzles, `SwizzleMode`.
- `bank` — a bank-conflict model that proves the swizzles conflict-free.

All maps are IR expressions over placeholder vars (see `layout.py`); they are
simplified at construction and compiled to Python lambdas for evaluation.
"""

from .bank import bank_conflict_stats, bank_conflicts, is_vectorizable, ldmatrix_access, vector_access
from .basic import (
    make_blocked_fragment,
    make_fully_replicated_fragment,
    make_fully_replicated_layout_fragment,
    make_gemm_fragment_8x8,
    make_gemm_fragment_8x8_transposed,
)
from .fragment import Fragment
from .gemm import (
    WgmmaPlan,
    gemm_warp_partition,
    is_register_compatible,
    make_mma_accumulator_fragment,
    make_mma_atom,
    make_mma_operand_a_fragment,
    make_mma_operand_b_fragment,
    make_wgmma_accumulator_fragment,
    make_wgmma_atom,
    make_wgmma_operand_a_fragment,
    mma_instruction,
    mma_k,
    normalize_policy,
    plan_wgmma,
    wgmma_instruction_n,
    wgmma_k,
    wgmma_partition,
)
from .layout import Layout
from .plot import plot_layout
from .swizzle import (
    SwizzleMode,
    choose_swizzle_mode,
    detect_swizzle_mode,
    make_full_bank_swizzled_layout,
    make_half_bank_swizzled_layout,
    make_linear_layout,
    make_padded_layout,
    make_quarter_bank_swizzled_layout,
    make_swizzle_layout,
    make_swizzled_layout,
    swizzled_byte_offsets,
)

__all__ = [
    "Fragment",
    "Layout",
    "SwizzleMode",
    "bank_conflict_stats",
    "bank_conflicts",
    "choose_swizzle_mode",
    "detect_swizzle_mode",
    "gemm_warp_partition",
    "is_register_compatible",
    "is_vectorizable",
    "ldmatrix_access",
    "make_blocked_fragment",
    "make_full_bank_swizzled_layout",
    "make_fully_replicated_fragment",
    "make_fully_replicated_layout_fragment",
    "make_gemm_fragment_8x8",
    "make_gemm_fragment_8x8_transposed",
    "make_half_bank_swizzled_layout",
    "make_linear_layout",
    "make_mma_accumulator_fragment",
    "make_mma_atom",
    "make_mma_operand_a_fragment",
    "make_mma_operand_b_fragment",
    "make_padded_layout",
    "make_quarter_bank_swizzled_layout",
    "make_swizzle_layout",
    "make_swizzled_layout",
    "make_wgmma_accumulator_fragment",
    "make_wgmma_atom",
    "make_wgmma_operand_a_fragment",
    "plan_wgmma",
    "wgmma_instruction_n",
    "wgmma_k",
    "wgmma_partition",
    "WgmmaPlan",
    "mma_instruction",
    "mma_k",
    "normalize_policy",
    "plot_layout",
    "swizzled_byte_offsets",
    "vector_access",
]
