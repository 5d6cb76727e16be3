"""How kernel parameters are packed for a GPU driver-API launch, shared by every launcher
(CUDA's `cuLaunchKernel`, HIP's `hipModuleLaunchKernel`: both take `void **kernelParams`, one
pointer per parameter to a buffer holding its value).

Requires: nothing beyond ctypes (torch only when a stream is asked for).
Guarantees: `ARG_KINDS` is the one table of parameter kinds — the launch metadata of every
GPU backend names kinds from it, the generated ctypes launchers store each slot with its
`store` statement and the C launcher (`cuda/native/launcher.c`) packs it by its `code` — so a
scalar reaches the kernel in the same width and encoding whichever target and launcher run it.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def stream_getter(device: int) -> tuple[Callable[..., int], int | None]:
    """`(fn, arg)`: `fn(arg)` (or `fn()` when arg is None) is the handle of torch's current
    stream on `device`, for both launchers (on a ROCm build of torch the same calls return the
    `hipStream_t`). The raw getter builds no Stream object; older torch builds lack it."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return (raw, device) if raw is not None else (current_stream_handle, None)


def check_kinds(arg_types: list) -> None:
    unknown = sorted({t for t in arg_types if t not in ARG_KINDS})
    if unknown:
        raise ValueError(f"unknown kernel parameter kind(s) {unknown}; known: {sorted(ARG_KINDS)}")


def current_stream_handle() -> int:
    import torch

    return torch.cuda.current_stream().cuda_stream


def half_bits(value: Any, fmt: str) -> int:
    """The bits of `value` as a 16-bit float of format `fmt` ("float16" | "bfloat16")."""
    from .c.floatfmt import encode

    return encode(float(value), fmt)


@dataclass(frozen=True)
class ArgKind:
    """How one kind of kernel parameter is passed: the ctypes type of its slot in the
    parameter buffer, and the Python statement that stores one call's value into the slot
    (`{slot}` and `{value}` are filled in; it may call the helpers in `STORE_HELPERS`).
    A new kind of parameter is one entry here (plus its helper, if it needs one)."""

    ctype: Any
    store: str
    code: str  # the slot's kind in the C launcher (cuda/native/launcher.c, pack_slot)


_PLAIN = "{slot}.value = {value}"
ARG_KINDS: dict[str, ArgKind] = {
    "ptr": ArgKind(ctypes.c_void_p, "{slot}.value = {value}.data_ptr()", "p"),
    "i8": ArgKind(ctypes.c_int8, _PLAIN, "b"),
    "u8": ArgKind(ctypes.c_uint8, _PLAIN, "B"),
    "i16": ArgKind(ctypes.c_int16, _PLAIN, "h"),
    "u16": ArgKind(ctypes.c_uint16, _PLAIN, "H"),
    "i32": ArgKind(ctypes.c_int32, _PLAIN, "i"),
    "u32": ArgKind(ctypes.c_uint32, _PLAIN, "I"),
    "i64": ArgKind(ctypes.c_int64, _PLAIN, "q"),
    "u64": ArgKind(ctypes.c_uint64, _PLAIN, "Q"),
    "bool": ArgKind(ctypes.c_bool, _PLAIN, "?"),
    "f32": ArgKind(ctypes.c_float, _PLAIN, "f"),
    "f64": ArgKind(ctypes.c_double, _PLAIN, "d"),
    "f16": ArgKind(ctypes.c_uint16, "{slot}.value = half_bits({value}, 'float16')", "e"),
    "bf16": ArgKind(ctypes.c_uint16, "{slot}.value = half_bits({value}, 'bfloat16')", "g"),
}
STORE_HELPERS: dict[str, Any] = {"half_bits": half_bits}


def grid_launcher(
    native: Callable | None,
    make_run: Callable[[], Callable],
    grid_fn: Callable,
    fixed: tuple | None,
    block: tuple,
    check_grid: Callable[[tuple], None] | None = None,
) -> Callable[[list, list], None]:
    """`launch(values, dyn)` over a module's launchers, the same for every GPU target: the C
    launcher `native` as it is when the grid is fixed (C all the way to the driver), or with the
    grid computed per call; otherwise the generated ctypes launcher `make_run()` (built only
    then), skipping empty grids. `check_grid` (HIP: the device's grid limits) sees each grid
    computed at call time; `fixed` (the grid when it depends on no argument) was checked when
    the kernel was loaded."""
    if native is not None and fixed is not None:
        return native  # called as native(values, dyn)
    if native is not None:

        def launch_native(values: list, dyn: list) -> None:
            g = grid_fn(values, dyn)
            if check_grid is not None:
                check_grid(g)
            native(values, dyn, *g)

        return launch_native
    run = make_run()
    if fixed is not None:

        def launch_fixed(values: list, dyn: list) -> None:
            run(values, dyn, fixed, block)

        return launch_fixed

    def launch(values: list, dyn: list) -> None:
        g = grid_fn(values, dyn)
        if g[0] > 0 and g[1] > 0 and g[2] > 0:
            if check_grid is not None:
                check_grid(g)
            run(values, dyn, g, block)

    return launch
