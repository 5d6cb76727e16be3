"""Launching Metal kernels on `mps` tensors through torch (`torch.mps.compile_shader`, torch ≥ 2.6).

No Metal binding package: torch compiles the MSL source into a library whose kernels are
attributes, callable as `lib.<entry>(*args, threads=..., group_size=...)`. torch binds the
i-th argument at buffer index i (a tensor as its MTLBuffer at the tensor's offset, a Python
int as 8 bytes, a float as a 4-byte float, narrower scalars through `arg_casts`), so the
kernel's `[[buffer(i)]]` numbering must follow the launch-metadata argument order, which the
Metal code generator guarantees. `threads` is the TOTAL number of threads per dimension (torch
calls `dispatchThreads:threadsPerThreadgroup:`) and `group_size` the threads of one
threadgroup: a grid of (gx, gy, gz) threadgroups of T threads is `threads=(gx*T, gy, gz)`,
`group_size=(T, 1, 1)`.

What a load prepares once (`MetalLaunch`): the compiled library and kernel function, the grid
function over the scalar parameters and dynamic dimensions (the same `ir.int_tree` data as
the CUDA backend's metadata, `cuda/backend.py: grid_function`), the per-argument conversion
(tensor / int / float, and the cast narrower scalars need), and the launch-time checks: every
tensor on `mps`, a threadgroup within the kernel's `max_threads_per_threadgroup`.

This path needs Apple hardware; CI tests the call sequence against a fake `torch.mps`
(tests/metal/test_runtime.py) and the generated MSL itself in the CPU harness
(tests/metal/msl_host.h).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import TileLangError, UnsupportedError
from ..registry import BuiltKernel


class MetalCompileError(TileLangError):
    kind = "Metal compile error"


# launch-metadata scalar kind → (Python conversion, torch's `arg_casts` name or None when the
# default binding already has the kernel's width: int → 8 bytes, float → 4-byte float)
ARG_KINDS: dict[str, tuple[Callable[[Any], Any], str | None]] = {
    "i8": (int, "int8"),
    "u8": (int, "uint8"),
    "i16": (int, "int16"),
    "u16": (int, "int16"),  # same bits
    "i32": (int, "int32"),
    "u32": (int, "int32"),  # same bits (two's complement narrowing)
    "i64": (int, None),
    "u64": (int, None),
    "bool": (int, "uint8"),
    "f32": (float, None),
    "f16": (float, "fp16"),
    "bf16": (float, "bf16"),
}
# the torch dtype of a one-element tensor carrying a narrow scalar when torch has no `arg_casts`
_CAST_DTYPES = {"int8": "int8", "uint8": "uint8", "int16": "int16", "int32": "int32", "fp16": "float16",
                "bf16": "bfloat16"}  # fmt: skip


def mps_module() -> Any:
    """`torch.mps` when this torch can compile Metal shaders on an available MPS device; else
    an UnsupportedError saying which part is missing."""
    import torch

    mps = getattr(torch, "mps", None)
    if mps is None or not hasattr(mps, "compile_shader"):
        raise UnsupportedError(
            f"running Metal kernels needs torch.mps.compile_shader (torch >= 2.6); this is torch {torch.__version__}",
            None,
            "upgrade torch, or compile with target='c' to run on the CPU",
        )
    if not torch.backends.mps.is_available():
        raise UnsupportedError(
            "running Metal kernels needs an Apple GPU (torch.backends.mps.is_available() is False)",
            None,
            "use target='c' (CPU) here; target='metal' kernels can still be lowered and their MSL inspected",
        )
    return mps


# compiled libraries by source digest: the kernels of one joined library (several T.Kernel
# blocks, `build_joined`) are loaded one by one and share one compile
_LIBRARIES: dict[str, Any] = {}


def compile_library(source: str, entry: str) -> Any:
    """The kernel `entry` of MSL `source`, compiled by torch for the MPS device."""
    import hashlib

    mps = mps_module()
    key = hashlib.sha256(source.encode()).hexdigest()
    lib = _LIBRARIES.get(key)
    if lib is None:
        try:
            lib = mps.compile_shader(source)
        except Exception as err:  # noqa: BLE001 - torch raises RuntimeError with the Metal compiler's log
            raise MetalCompileError(f"the Metal compiler rejected kernel `{entry}`:\n{err}") from err
        _LIBRARIES[key] = lib
    try:
        return getattr(lib, entry)
    except Exception as err:  # noqa: BLE001
        raise MetalCompileError(f"the compiled Metal library has no kernel `{entry}`") from err


def _accepts_arg_casts(fn: Any) -> bool:
    """Whether this torch's compiled kernels take `arg_casts=` (added after 2.6)."""
    doc = getattr(type(fn).__call__, "__doc__", None) or getattr(fn.__call__, "__doc__", None) or ""
    return "arg_casts" in doc


class MetalLaunch:
    """One loaded Metal kernel: `launch(values, dyn_values)` with the parameters (mps tensors,
    Python numbers) in order followed by the ints of the dynamic dimensions."""

    def __init__(self, source: str, meta: dict) -> None:
        import torch

        from ..cuda.backend import grid_function

        self.entry = str(meta["entry"])
        self.fn = compile_library(source, self.entry)
        kinds = list(meta["args"])
        unknown = sorted({k for k in kinds if k != "ptr" and k not in ARG_KINDS})
        if unknown:
            raise UnsupportedError(f"kernel `{self.entry}`: Metal has no scalar parameter of kind(s) {unknown}")
        self.kinds = kinds
        self.n_params = int(meta["n_params"])
        threads = meta["threads"]
        self.group = tuple(int(t) for t in ([threads] if isinstance(threads, int) else threads)) + (1, 1)
        self.group = self.group[:3]
        limit = getattr(self.fn, "max_threads_per_threadgroup", None)
        total = self.group[0] * self.group[1] * self.group[2]
        if isinstance(limit, int) and total > limit:
            raise UnsupportedError(
                f"kernel `{self.entry}` needs {total} threads per threadgroup; this GPU's pipeline allows {limit}",
                None,
                "use fewer threads in T.Kernel(..., threads=...)",
            )
        self.grid_fn = grid_function(meta["grid"], self.n_params, len(kinds) - self.n_params)
        casts = {i: ARG_KINDS[k][1] for i, k in enumerate(kinds) if k != "ptr" and ARG_KINDS[k][1] is not None}
        self.casts: dict[int, str] | None = casts or None
        self.cast_tensors = bool(casts) and not _accepts_arg_casts(self.fn)
        self.torch = torch

    def _args(self, values: list, dyn: list) -> list:
        out = []
        for i, kind in enumerate(self.kinds):
            v = values[i] if i < self.n_params else dyn[i - self.n_params]
            if kind == "ptr":
                if not isinstance(v, self.torch.Tensor) or v.device.type != "mps":
                    where = v.device if isinstance(v, self.torch.Tensor) else type(v).__name__
                    raise ValueError(f"kernel `{self.entry}`: argument {i} must be a tensor on mps, got {where}")
                out.append(v)
                continue
            v = ARG_KINDS[kind][0](v)
            cast = self.casts.get(i) if self.casts else None
            if cast is not None and self.cast_tensors:  # bound as a buffer: `constant T&` reads it the same
                v = scalar_buffer(v, getattr(self.torch, _CAST_DTYPES[cast]))
            out.append(v)
        return out

    def __call__(self, values: list, dyn: list) -> None:
        gx, gy, gz = self.grid_fn(values, dyn)
        if gx <= 0 or gy <= 0 or gz <= 0:
            return
        tx, ty, tz = self.group
        keywords: dict[str, Any] = {"threads": (gx * tx, gy * ty, gz * tz), "group_size": (tx, ty, tz)}
        if self.casts and not self.cast_tensors:
            keywords["arg_casts"] = self.casts
        self.fn(*self._args(values, dyn), **keywords)


def scalar_buffer(value: Any, dtype: Any) -> Any:
    """A one-element `mps` tensor holding a scalar of `dtype` (for torch without `arg_casts`)."""
    import torch

    return torch.tensor([value], dtype=dtype, device="mps")


def make_launcher(built: BuiltKernel) -> Callable[[list, list], None]:
    """`launch(values, dyn_values)` for a built Metal kernel (its MSL source and launch
    metadata: entry, threads, args, n_params, grid), with the dynamic-dimension limits of
    `launch_limits.guard_dynamic`."""
    from ..launch_limits import guard_dynamic

    if not built.kernel_source:
        raise UnsupportedError("this Metal kernel has no MSL source to compile")
    return guard_dynamic(MetalLaunch(built.kernel_source, built.meta), built.meta)
