"""Text renderings of layouts for hovers, IR dumps and JSON (`summary`,
`describe`, `to_dict`). Pure functions of a Layout/Fragment; no state."""

from __future__ import annotations

from typing import Any

from ..ir.dtype import DataType
from .layout import Layout, _fmt_shape, prod


def _is_identity(layout: Layout) -> bool:
    return len(layout._index) == len(layout._vars) and all(a is b for a, b in zip(layout._index, layout._vars))


def layout_summary(layout: Layout) -> str:
    parts = [f"{_fmt_shape(layout.shape)} → {_fmt_shape(layout.output_shape)}"]
    sw = layout.meta.get("swizzle")
    if sw:
        parts.append(f"swizzle {sw}")
    elif layout.meta.get("padded"):
        parts.append(f"rows padded to {layout.output_shape[-1]} elements")
    elif _is_identity(layout):
        parts.append("row-major")
    return " · ".join(parts)


def fragment_summary(frag: Any, dtype: Any = None) -> str:
    T, L, R = frag.get_thread_size(), frag.locals_per_thread(), frag.replicate_size
    parts = []
    if frag.meta.get("origin"):
        parts.append(str(frag.meta["origin"]))
    grid = frag.meta.get("warp_grid")
    if T % 32 == 0:
        w = T // 32
        parts.append(
            f"{w} warp{'s' if w > 1 else ''}" + (f" {grid[0]}×{grid[1]}" if grid and tuple(grid) != (1, 1) else "")
        )
    else:
        parts.append(f"{T} threads")
    regs = f"{L} regs/thread"
    if dtype is not None:
        bits = DataType(dtype).bits
        if bits != 32:
            regs += f" ({-(-L * bits // 32)} × 32-bit)"
    parts.append(regs)
    if R > 1:
        parts.append(f"replicated ×{R}")
    return " · ".join(parts)


def _grid(shape: tuple, cell: dict, max_rows: int, max_cols: int) -> list[str]:
    """Rows = all but the last dim (flattened), columns = last dim; 1-D wraps."""
    if len(shape) == 1:
        n = shape[0]
        ncols = min(n, max_cols)
        row_keys = [(r,) for r in range(0, n, ncols)]
        labels = [f"{r[0]}+" for r in row_keys]
        cols = list(range(ncols))

        def key(rk, c):
            return (rk[0] + c,) if rk[0] + c < n else None

        head = [f"+{c}" for c in cols]
        total_rows, total_cols = len(row_keys), ncols
    else:
        lead = shape[:-1]
        total_rows, total_cols = prod(lead), shape[-1]
        row_keys = []
        for r in range(min(total_rows, max_rows)):
            idx, rem = [], r
            for d in reversed(lead):
                idx.append(rem % d)
                rem //= d
            row_keys.append(tuple(reversed(idx)))
        labels = [",".join(map(str, rk)) for rk in row_keys]
        cols = list(range(min(total_cols, max_cols)))

        def key(rk, c):
            return rk + (c,)

        head = [str(c) for c in cols]
    row_keys = row_keys[:max_rows]
    body = [[cell.get(key(rk, c), "") if key(rk, c) is not None else "" for c in cols] for rk in row_keys]
    w = max([len(x) for row in body for x in row] + [len(h) for h in head] + [1])
    lw = max(len(lb) for lb in labels[: len(row_keys)] + ["row"])
    more_cols = total_cols > len(cols)
    lines = [" " * lw + " │ " + " ".join(h.rjust(w) for h in head) + (" …" if more_cols else "")]
    lines.append("─" * lw + "─┼─" + "─" * ((w + 1) * len(cols)))
    for lb, row in zip(labels, body):
        lines.append(lb.rjust(lw) + " │ " + " ".join(x.rjust(w) for x in row) + (" …" if more_cols else ""))
    if total_rows > len(row_keys):
        lines.append(f"{'…'.rjust(lw)} │ ({total_rows - len(row_keys)} more rows)")
    return lines


def describe_fragment(frag: Any, max_rows: int = 16, max_cols: int = 8) -> str:
    cell = {e: f"T{t}:{loc}" for e, r, t, loc in frag.placements() if r == 0}
    out = [f"Fragment {_fmt_shape(frag.shape)} · {fragment_summary(frag)}"]
    out += _grid(frag.shape, cell, max_rows, max_cols)
    note = "cell = T<thread>:<register>"
    if frag.replicate_size > 1:
        note += f" of copy 0; each element is also held by {frag.replicate_size - 1} other thread(s)"
    out.append(note)
    t0 = frag.thread_elements(0)
    listed = " ".join("[" + ",".join(map(str, e)) + "]" for _, e in t0[:8])
    out.append(f"T0 holds {len(t0)}: {listed}{' …' if len(t0) > 8 else ''}")
    return "\n".join(out)


def describe_layout(layout: Layout, max_rows: int = 16, max_cols: int = 8) -> str:
    offs = layout.offsets()
    keys = _row_major_keys(layout.shape)
    cell = {k: str(o) for k, o in zip(keys, offs)}
    out = [f"Layout {layout_summary(layout)}"]
    out += _grid(layout.shape, cell, max_rows, max_cols)
    out.append("cell = physical offset (elements)")
    return "\n".join(out)


def _row_major_keys(shape: tuple) -> list:
    import itertools

    return list(itertools.product(*(range(d) for d in shape)))


def _strs(layout: Layout, *groups) -> list:
    return layout._expr_strs(*groups)


def layout_dict(layout: Layout) -> dict:
    names, idx = _strs(layout, layout._vars, layout._index)
    d = {
        "kind": "Layout",
        "input_shape": [_jsonable(x) for x in layout.shape],
        "output_shape": [_jsonable(x) for x in layout.output_shape],
        "forward_vars": names,
        "forward_index": idx,
        "summary": layout_summary(layout),
    }
    d.update({k: _jsonable(v) for k, v in layout.meta.items()})
    return d


def fragment_dict(frag: Any) -> dict:
    names, thr, idx = _strs(frag, frag._vars + (frag._rep,), (frag._thread,), frag._index)
    d = {
        "kind": "Fragment",
        "shape": [_jsonable(x) for x in frag.shape],
        "threads": frag.get_thread_size(),
        "locals_per_thread": frag.locals_per_thread(),
        "local_shape": list(frag.output_shape),
        "replicate": frag.replicate_size,
        "forward_vars": names[:-1],
        "thread": thr[0],
        "forward_index": idx,
        "summary": fragment_summary(frag),
    }
    d.update({k: _jsonable(v) for k, v in frag.meta.items()})
    return d


def _jsonable(v: Any) -> Any:
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return str(v)
