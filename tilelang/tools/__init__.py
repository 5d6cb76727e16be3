"""Developer tools.

- `plot_layout`: draw a Layout / Fragment to txt / png / pdf / svg files (matplotlib only for
  pictures, imported only when one is drawn).
- `lower_trace.lower_trace(func, passes, ...)`: the IR after every pass, diffs, times, an HTML page mapping source lines to
  what they became (`TL_LOWER_TRACE` uses it for every compile).
- `Analyzer(fn, device)`: the roofline of a kernel (FLOPs and global bytes from the IR).
- `pass_timing.pass_timing()`: which passes a compile spends its time in (`TL_PASS_TIMING=1`).
"""

from . import lower_trace, pass_timing  # modules: lower_trace.lower_trace(), pass_timing.pass_timing()
from .analyzer import AnalysisResult, Analyzer
from .plot_layout import plot_layout

__all__ = ["AnalysisResult", "Analyzer", "lower_trace", "pass_timing", "plot_layout"]
