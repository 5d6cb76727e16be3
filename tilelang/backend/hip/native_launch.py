"""The native (C) launcher for HIP kernels: the same compiled extension CUDA kernels launch
through (`backend/cuda/native_launch.py`, source `cuda/native/launcher.c`), given
`hipModuleLaunchKernel`'s address instead of `cuLaunchKernel`'s.

Requires: what the CUDA native launcher requires (a C compiler and `Python.h`; it links
against nothing but Python), and a loaded `runtime.HipModule`.
Guarantees: `launcher(...)` returns the C launcher for the module's kernel, called
`run(values, dyn)` for a fixed grid and `run(values, dyn, gx, gy, gz)` otherwise, which packs and
launches exactly what `HipModule.launcher`'s ctypes `run` does (same slot kinds, same stream
getter, errors raised by `HipModule.launch_failed`); None when the extension is unavailable
(`TILELANG_NATIVE_LAUNCH=0`, no compiler) — the caller then keeps the ctypes launcher.

Why one extension for both targets: the launcher packs the `kernelParams` array on its stack and
calls a function pointer of type `int (*)(void *f, unsigned gx, gy, gz, bx, by, bz, unsigned
shared, void *stream, void **params, void **extra)`, and `hipModuleLaunchKernel` has exactly that
C signature (hipError_t is an int-sized enum, hipFunction_t and hipStream_t are pointers).
`native/launch_abi.c` states this as compile-time assertions against ROCm's
`hip/hip_runtime_api.h`; the tests compile it wherever the headers are installed.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from ..kernel_args import ARG_KINDS, check_kinds, half_bits, stream_getter

ABI_CHECK_SOURCE = "native/launch_abi.c"  # relative to this directory


def extension() -> Any:
    """The loaded launcher extension (built on first use), or None; see `unavailable_reason`."""
    from ..cuda import native_launch

    return native_launch.extension()


def unavailable_reason() -> str | None:
    from ..cuda import native_launch

    return native_launch.unavailable_reason()


def prebuild() -> None:
    """Start building the extension in the background (the HIP compile then overlaps it)."""
    from ..cuda import native_launch

    native_launch.prebuild()


def launcher(module: Any, arg_types: list, n_params: int, block: tuple, grid: tuple | None) -> Callable | None:
    """The C launcher for `module` (a `runtime.HipModule`), or None where it is unavailable."""
    ext = extension()
    if ext is None:
        return None
    check_kinds(arg_types)
    kinds = "".join(ARG_KINDS[t].code for t in arg_types)
    sources = [i if i < n_params else -(i - n_params) - 1 for i in range(len(arg_types))]
    helpers = [half_bits if t in ("f16", "bf16") else None for t in arg_types]
    stream_fn, stream_arg = stream_getter(module.device)
    func = module.func.value if isinstance(module.func, ctypes.c_void_p) else int(module.func)
    return ext.Launcher(
        module.api.launch_kernel_address, func, tuple(int(b) for b in block), module.smem,
        None if grid is None else tuple(int(g) for g in grid),
        kinds, sources, helpers, stream_fn, stream_arg, module.launch_failed,
    )  # fmt: skip
