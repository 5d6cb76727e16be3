"""`tilelang.tools.plot_layout`: the public entry point that draws a Layout or Fragment to files.

`plot_layout(layout, save_directory="./tmp", name="layout", colormap=None,
verbose=False, formats="pdf")` writes `<save_directory>/<name>.<fmt>` for each
requested format: `txt` (the text grid of `describe()`, no matplotlib needed),
`png`, `pdf`, `svg` (the picture of `tilelang.layout.plot_layout`: fragments
coloured by thread and labelled `T<thread>:<register>`, layouts by physical
offset, or by shared-memory bank with the keyword `dtype=` — what a swizzle is
for); `"all"` is every format, and several may be given comma-separated or
as a list. matplotlib is imported only when a picture is drawn (the `[vis]`
extra). Returns the paths written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

FORMATS = ("txt", "png", "pdf", "svg")

# the text grid is written whole up to this many rows/columns (an inferred tile rarely exceeds it)
_TXT_LIMIT = 256


def parse_formats(formats: Any) -> list[str]:
    """`"png"`, `"txt,svg"`, `"all"`, `["png", "pdf"]` → a list of formats; unknown ones raise ValueError."""
    if formats is None or formats == "":
        return ["txt"]
    items = formats.split(",") if isinstance(formats, str) else list(formats)
    out: list[str] = []
    for f in items:
        f = str(f).strip().lower()
        for g in FORMATS if f == "all" else (f,):
            if g not in FORMATS:
                raise ValueError(f"unknown layout plot format {f!r}; choose from {', '.join(FORMATS)} or 'all'")
            if g not in out:
                out.append(g)
    return out


def layout_text(layout: Any) -> str:
    """The whole text grid of a Layout / Fragment (up to 256 rows and columns)."""
    return layout.describe(max_rows=_TXT_LIMIT, max_cols=_TXT_LIMIT)


def plot_layout(
    layout: Any,
    save_directory: Any = "./tmp",
    name: str = "layout",
    colormap: str | None = None,
    verbose: bool = False,
    formats: Any = "pdf",
    *,
    dtype: Any = None,
) -> list[str]:
    from ..layout import Layout
    from ..layout.plot import plot_layout as draw

    if not isinstance(layout, Layout):
        raise TypeError(f"plot_layout expects a T.Layout or T.Fragment, got {type(layout).__name__}")
    fmts = parse_formats(formats)
    d = Path(os.fspath(save_directory))
    d.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    if "txt" in fmts:
        p = d / f"{name}.txt"
        p.write_text(layout_text(layout) + "\n")
        written.append(str(p))
    pictures = [f for f in fmts if f != "txt"]
    if pictures:
        fig = draw(layout, None, dtype=dtype, colormap=colormap, title=f"{name}: {layout.summary()}")
        for f in pictures:
            p = d / f"{name}.{f}"
            fig.savefig(str(p), dpi=120)
            written.append(str(p))
    if verbose:
        print(layout_text(layout))
        for p in written:
            print(f"saved {p}")
    return written
