"""The recommender's internals: `Hint`, rasterization plans and the GEMM tile search."""

from .gemm import GemmProblem, GemmTileSearch, TileChoice, axis_candidates
from .hint import Hint, IntrinInfo
from .rasterization import NoRasterization, Rasterization2DColumn, Rasterization2DRow

__all__ = [
    "GemmProblem",
    "GemmTileSearch",
    "Hint",
    "IntrinInfo",
    "NoRasterization",
    "Rasterization2DColumn",
    "Rasterization2DRow",
    "TileChoice",
    "axis_candidates",
]
