"""Operator templates that recommend tile configurations (`recommend_hints`)."""

from .base import BaseTemplate
from .elementwise import ElementwiseTemplate
from .gemv import GEMVTemplate
from .matmul import MatmulTemplate
from .reduction import GeneralReductionTemplate

__all__ = ["BaseTemplate", "ElementwiseTemplate", "GEMVTemplate", "GeneralReductionTemplate", "MatmulTemplate"]
