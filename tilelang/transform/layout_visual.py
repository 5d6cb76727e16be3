"""layout_visual: draw every inferred fragment when `tl.layout_visualization_enable` is set.

Requires: a PrimFunc after `infer_layout` (`attrs["layout_map"]`). Guarantees:
the function is returned unchanged; with `tl.layout_visualization_enable`, each
`local.fragment` buffer's Fragment (colour = thread) and each shared buffer's
inferred layout (colour = shared-memory bank) is written by `tilelang.tools.plot_layout`
as `<dir>/<kernel>.<buffer>.<fmt>` for the formats of
`tl.layout_visualization_formats` (`txt` — the default —, `png`, `pdf`, `svg`,
`all`, or several comma-separated), and with `txt` its text grid is also
printed to stdout. `<dir>` is `<tl.dump_ir_path>/layouts` when
`tl.dump_ir_path` is given, else `./tmp` (plot_layout's default).

Where matplotlib is not installed, picture formats fall back to `txt` with a
warning (compiling never fails for a missing optional extra). On a target
whose pipeline infers no fragment layouts (C), the switch warns once.
"""

from __future__ import annotations

from pathlib import Path

from ..ir.function import PrimFunc
from ..pass_config import in_force, warn_once
from .context import CompileContext

ENABLE_KEY = "tl.layout_visualization_enable"
FORMATS_KEY = "tl.layout_visualization_formats"


def visualization_dir(cfg: dict) -> Path:
    dump = cfg.get("tl.dump_ir_path")
    return Path(dump) / "layouts" if dump else Path("./tmp")


def layout_visual(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    from ..layout import Fragment
    from ..tools.plot_layout import layout_text, parse_formats, plot_layout

    cfg = in_force(func, ctx)
    if not cfg.get(ENABLE_KEY):
        if cfg.get(FORMATS_KEY):
            _warn("formats", f"{FORMATS_KEY} has no effect without {ENABLE_KEY}=True")
        return func
    fmts = parse_formats(cfg.get(FORMATS_KEY))
    if "layout_map" not in func.attrs:
        _warn("nomap", f"{ENABLE_KEY}: this target's pipeline infers no fragment layouts; nothing is drawn")
        return func
    if any(f != "txt" for f in fmts):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            _warn(
                "nompl",
                f"{FORMATS_KEY}={cfg.get(FORMATS_KEY)!r} needs matplotlib (pip install matplotlib); writing txt only",
            )
            fmts = ["txt"]
    out = visualization_dir(cfg)
    for buf, layout in (func.attrs.get("layout_map") or {}).items():
        shared = buf.scope.startswith("shared")
        if not isinstance(layout, Fragment) and not shared:
            continue
        name = f"{func.name}.{buf.name}"
        # a shared tile's picture is its bank map (what its swizzle decides); a fragment's, its threads
        plot_layout(layout, out, name, formats=fmts, dtype=buf.dtype if shared else None)
        if "txt" in fmts:
            print(f"{buf.name} layout inference:\n{layout_text(layout)}")
    return func


def _warn(tag: str, msg: str) -> None:
    warn_once("layout_visual:" + tag, msg)
