"""Carver: a tile-configuration recommender.

Describe the hardware (`arch`), describe the operator (`template`), and ask for
hints: `MatmulTemplate(M, N, K, ...).with_arch(CUDA("sm_80")).recommend_hints(topk)`.
Each `Hint` maps onto autotune configs with `hint.to_config()`. The carver is
independent of the compiler: it works from sizes, dtypes and hardware numbers.
"""

from .arch import (
    CDNA,
    CPU,
    CUDA,
    METAL,
    Metal,
    TileDevice,
    auto_infer_current_arch,
    get_arch,
    has_mma_support,
    is_ampere_arch,
    is_cdna_arch,
    is_cpu_arch,
    is_cuda_arch,
    is_hopper_arch,
    is_metal_arch,
    is_tensorcore_supported_precision,
)
from .roller import Hint
from .template import BaseTemplate, ElementwiseTemplate, GEMVTemplate, GeneralReductionTemplate, MatmulTemplate

__all__ = [
    "CDNA",
    "CPU",
    "CUDA",
    "METAL",
    "BaseTemplate",
    "ElementwiseTemplate",
    "GEMVTemplate",
    "GeneralReductionTemplate",
    "Hint",
    "MatmulTemplate",
    "Metal",
    "TileDevice",
    "auto_infer_current_arch",
    "get_arch",
    "has_mma_support",
    "is_ampere_arch",
    "is_cdna_arch",
    "is_cpu_arch",
    "is_cuda_arch",
    "is_hopper_arch",
    "is_metal_arch",
    "is_tensorcore_supported_precision",
]
