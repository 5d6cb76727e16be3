"""Launch-time size checks that keep 32-bit index arithmetic honest (both backends).

`transform/widen_indices.py` compiles index arithmetic over an int32 dynamic dimension in 32
bits when the dimension stays at or below a limit `L`, and records `(k, name, L, parameter,
axis)` per such dimension in `attrs["index_limits"]`. Every dynamic dimension reaches the
kernel as an int64 and is narrowed there, so the launcher must refuse a larger value *before*
the launch: `guard_dynamic(launch, ...)` wraps a backend's `launch(values, dyn_values)` with
one generated comparison per limit (a few tens of nanoseconds); the error names the parameter,
the axis, the value and the limit, on one line.

`grid_guard` does the same for a CUDA grid that depends on dynamic dimensions and may exceed
the device's limits (`attrs["grid_check"]`): a grid that would be truncated when packed into
the launch's 32-bit fields never launches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import IndexLimitError
from ..ir.span import NO_SPAN, Span

CUDA_GRID_LIMITS = (2**31 - 1, 65535, 65535)
__all__ = ["IndexLimitError", "grid_guard", "guard_dynamic", "limits_meta"]


def limits_meta(func: Any) -> dict:
    """The JSON-able launch limits of a lowered PrimFunc (kept with the built kernel, so a
    disk-cache hit needs no lowering)."""
    out: dict = {}
    limits = func.attrs.get("index_limits") or ()
    if limits:
        out["index_limits"] = [list(r) for r in limits]
    if func.attrs.get("grid_check"):
        out["grid_check"] = True
    if out:
        out["kernel"] = func.name
        sp = func.span
        if sp is not NO_SPAN:
            out["span"] = [sp.file, sp.line, sp.col]
    return out


def _span(meta: dict) -> Span:
    s = meta.get("span")
    return Span(s[0], int(s[1]), int(s[2])) if s else NO_SPAN


def index_limit_error(meta: dict, k: int, value: int) -> IndexLimitError:
    for idx, name, limit, param, axis in meta.get("index_limits") or ():
        if idx == k:
            where = f"argument `{param}`: dimension {axis} is {name} = {value}" if param else f"{name} = {value}"
            return IndexLimitError(
                f"{where}, above {limit}, the largest size kernel `{meta.get('kernel', '?')}` indexes with 32-bit "
                "arithmetic",
                _span(meta),
                f'declare it T.dynamic("{name}", "int64") for 64-bit indices, or split the work',
            )
    raise AssertionError(f"no limit recorded for dynamic dimension {k}")


def guard_dynamic(launch: Callable[[list, list], None], meta: dict) -> Callable[[list, list], None]:
    """`launch` preceded by the dynamic-dimension checks of `meta` (itself when there are none)."""
    limits = meta.get("index_limits") or ()
    if not limits:
        return launch
    cond = " or ".join(f"dyn[{int(k)}] > {int(limit)}" for k, _, limit, _, _ in limits)
    src = (
        "def guarded(values, dyn):\n"
        f"    if {cond}:\n"
        "        fail(dyn)\n"
        "    inner(values, dyn)\n"
    )  # fmt: skip

    def fail(dyn: list) -> None:
        for k, _, limit, _, _ in limits:
            if dyn[k] > limit:
                raise index_limit_error(meta, k, dyn[k])

    ns: dict = {"inner": launch, "fail": fail}
    exec(compile(src, f"<limits {meta.get('kernel', '?')}>", "exec"), ns)  # noqa: S102
    return ns["guarded"]


def grid_guard(grid_fn: Callable[..., tuple], meta: dict) -> Callable[..., tuple]:
    """`grid_fn(values, dyn)` that raises when the grid exceeds CUDA's limits (itself when the
    pass proved it cannot)."""
    if not meta.get("grid_check"):
        return grid_fn
    gx, gy, gz = CUDA_GRID_LIMITS

    def checked(values: list, dyn: list) -> tuple:
        g = grid_fn(values, dyn)
        if g[0] > gx or g[1] > gy or g[2] > gz:
            axis = next(i for i, (n, lim) in enumerate(zip(g, CUDA_GRID_LIMITS)) if n > lim)
            raise IndexLimitError(
                f"the launch grid ({', '.join(str(n) for n in g)}) of kernel `{meta.get('kernel', '?')}` has "
                f"{g[axis]} blocks in {'xyz'[axis]}, more than CUDA's limit of {CUDA_GRID_LIMITS[axis]}",
                _span(meta),
                "use larger blocks, or put the largest grid dimension first (x allows 2^31 - 1 blocks)",
            )
        return g

    return checked
