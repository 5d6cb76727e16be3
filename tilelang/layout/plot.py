"""`plot_layout`: draw a Fragment (colour = thread) or Layout (colour = bank) to an image.

matplotlib is optional and imported only here, on call."""

from __future__ import annotations

import itertools
from typing import Any

from .layout import Layout


def _import_matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as err:
        raise ImportError(
            "plot_layout needs matplotlib, which is not installed — `pip install matplotlib` "
            "(or use .describe() for a text rendering)"
        ) from err
    return Figure, FigureCanvasAgg


def plot_layout(
    layout: Layout,
    path: Any = None,
    *,
    dtype: Any = None,
    max_rows: int = 64,
    max_cols: int = 64,
    title: str = "",
    colormap: str | None = None,
):
    """Render the first `max_rows` × `max_cols` elements of a 1-D/2-D layout.

    Fragments: each cell is coloured by thread and labelled `T<thread>:<register>`
    (small tiles). Layouts: coloured by shared-memory bank of the element's
    first byte when `dtype` is given, else by physical offset. Saves to `path`
    (format from the suffix) when given; returns the matplotlib Figure. `colormap`
    overrides the matplotlib colormap."""
    from .fragment import Fragment

    Figure, Canvas = _import_matplotlib()
    shape = tuple(layout.shape)
    if len(shape) > 2:
        raise ValueError(f"plot_layout draws 1-D or 2-D layouts; slice this {len(shape)}-D one first")
    rows, cols = (1, shape[0]) if len(shape) == 1 else shape
    R, C = min(rows, max_rows), min(cols, max_cols)
    val = [[0.0] * C for _ in range(R)]
    text = [[""] * C for _ in range(R)]
    if isinstance(layout, Fragment):
        where = {e: (t, loc) for e, r, t, loc in layout.placements() if r == 0}
        for i, j in itertools.product(range(R), range(C)):
            t, loc = where[(j,) if len(shape) == 1 else (i, j)]
            val[i][j], text[i][j] = t, f"T{t}:{loc}"
        label, cmap = "thread", "tab20"
    else:
        from .swizzle import _elem_bytes

        offs = layout.offsets()
        b = _elem_bytes(__import__("tilelang.ir.dtype", fromlist=["DataType"]).DataType(dtype)) if dtype else None
        for i, j in itertools.product(range(R), range(C)):
            o = offs[j if len(shape) == 1 else i * cols + j]
            val[i][j] = (o * b // 4) % 32 if b else o
            text[i][j] = str(val[i][j])
        label, cmap = ("bank" if b else "offset"), ("tab20" if b else "viridis")
    fig = Figure(figsize=(max(4, C * 0.45), max(3, R * 0.35)))
    Canvas(fig)
    ax = fig.add_subplot(1, 1, 1)
    im = ax.imshow(val, cmap=colormap or cmap, aspect="auto", interpolation="nearest")
    if R * C <= 256:  # labels are slow to lay out; larger plots are colour only
        for i, j in itertools.product(range(R), range(C)):
            ax.text(j, i, text[i][j], ha="center", va="center", fontsize=6)
    ax.set_xlabel("column")
    ax.set_ylabel("row")
    ax.set_title(title or layout.summary())
    fig.colorbar(im, ax=ax, label=label)
    if path is not None:
        fig.savefig(str(path), dpi=120)
    return fig
