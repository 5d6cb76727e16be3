"""Developer tools: `plot_layout` (draw a Layout / Fragment to txt / png / pdf / svg files).

matplotlib is needed only for pictures and imported only when one is drawn.
"""

from .plot_layout import plot_layout

__all__ = ["plot_layout"]
