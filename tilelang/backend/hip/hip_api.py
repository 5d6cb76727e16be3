"""ctypes bindings to the HIP runtime (`libamdhip64`): the calls that load a code object and
launch a kernel from it, with the argument and result types of `hip/hip_runtime_api.h`.

Requires: a HIP runtime library; which one is `TILELANG_HIP_LIBRARY` (a path) when set — the
tests point it at a fake that records every call (`tests/hip/fake_hip/fake_amdhip64.c`) —
else `libamdhip64.so` as the dynamic loader finds it (ROCm installs it, a ROCm build of
torch ships one in `torch/lib`).
Guarantees: every binding has its exact C signature set (so ctypes never guesses an int
width), `hipInit(0)` has run once per library before any other call, and a failing call
raises `HipError` naming the call, the kernel it was for, the error code and HIP's own
name and description of it.

The enum values below are those of ROCm's headers (`hipDeviceAttribute_t`,
`hipFunction_attribute`); `tests/hip/test_hip_runtime.py` checks them against the installed
`/usr/include/hip` headers.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

ENV_LIBRARY = "TILELANG_HIP_LIBRARY"
LIBRARY_NAMES = ("libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5")

HIP_SUCCESS = 0
# hipDeviceAttribute_t
DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 26
DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 29  # Y and Z follow
DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 56
DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 74
DEVICE_ATTRIBUTE_WARP_SIZE = 87
# hipFunction_attribute
FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1

_c_uint = ctypes.c_uint
# name -> (restype, argtypes), as declared in hip/hip_runtime_api.h (hipError_t is a C enum: int)
_SIGNATURES: dict[str, tuple[Any, list]] = {
    "hipInit": (ctypes.c_int, [_c_uint]),
    "hipGetDevice": (ctypes.c_int, [ctypes.POINTER(ctypes.c_int)]),
    "hipSetDevice": (ctypes.c_int, [ctypes.c_int]),
    "hipDeviceGetAttribute": (ctypes.c_int, [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int]),
    "hipModuleLoadData": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]),
    "hipModuleGetFunction": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]),
    "hipFuncGetAttribute": (ctypes.c_int, [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_void_p]),
    "hipModuleLaunchKernel": (
        ctypes.c_int,
        [ctypes.c_void_p, *[_c_uint] * 7, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p],
    ),
    "hipGetErrorName": (ctypes.c_char_p, [ctypes.c_int]),
    "hipGetErrorString": (ctypes.c_char_p, [ctypes.c_int]),
}

_lock = threading.Lock()
_apis: dict[str, HipApi] = {}


class HipError(RuntimeError):
    """A HIP runtime call failed: `code` is its hipError_t, `call` the call."""

    def __init__(self, code: int, call: str, kernel: str, name: str, text: str) -> None:
        self.code, self.call, self.kernel = code, call, kernel
        for_kernel = f" for kernel `{kernel}`" if kernel else ""
        super().__init__(f"HIP error {code} ({name}: {text}) in {call}{for_kernel}")


class HipApi:
    """One loaded HIP runtime library with typed bindings (`api.lib.<name>`)."""

    def __init__(self, lib: Any, path: str) -> None:
        self.lib, self.path = lib, path
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise OSError(f"{path} is not a HIP runtime library: it has no {name}") from None
            fn.restype, fn.argtypes = restype, argtypes
        self.check(lib.hipInit(0), "hipInit(0)")

    def check(self, res: int, call: str, kernel: str = "") -> None:
        if res != HIP_SUCCESS:
            raise HipError(res, call, kernel, self._text("hipGetErrorName", res), self._text("hipGetErrorString", res))

    def _text(self, fn: str, res: int) -> str:
        raw = getattr(self.lib, fn)(res)
        return raw.decode(errors="replace") if raw else "unknown"

    def get_device(self) -> int:
        dev = ctypes.c_int()
        self.check(self.lib.hipGetDevice(ctypes.byref(dev)), "hipGetDevice")
        return dev.value

    def set_device(self, device: int) -> None:
        self.check(self.lib.hipSetDevice(device), f"hipSetDevice({device})")

    def device_attribute(self, attr: int, device: int, what: str) -> int:
        out = ctypes.c_int()
        self.check(self.lib.hipDeviceGetAttribute(ctypes.byref(out), attr, device), f"hipDeviceGetAttribute({what})")
        return out.value

    def load_module(self, image: bytes, kernel: str) -> ctypes.c_void_p:
        """`hipModuleLoadData` of `image` (a code object) on the current device."""
        module = ctypes.c_void_p()
        buf = ctypes.create_string_buffer(image, len(image))  # HIP reads it during the call only
        self.check(self.lib.hipModuleLoadData(ctypes.byref(module), buf), "hipModuleLoadData", kernel)
        return module

    def get_function(self, module: ctypes.c_void_p, kernel: str) -> ctypes.c_void_p:
        func = ctypes.c_void_p()
        self.check(self.lib.hipModuleGetFunction(ctypes.byref(func), module, kernel.encode()), "hipModuleGetFunction",
                   kernel)  # fmt: skip
        return func

    def function_attribute(self, func: ctypes.c_void_p, attr: int, what: str, kernel: str) -> int:
        out = ctypes.c_int()
        self.check(self.lib.hipFuncGetAttribute(ctypes.byref(out), attr, func), f"hipFuncGetAttribute({what})", kernel)
        return out.value

    @property
    def launch_kernel(self) -> Any:
        """`hipModuleLaunchKernel` (its C signature is `cuLaunchKernel`'s, parameter for parameter)."""
        return self.lib.hipModuleLaunchKernel

    @property
    def launch_kernel_address(self) -> int:
        return ctypes.cast(self.lib.hipModuleLaunchKernel, ctypes.c_void_p).value or 0


def library_path() -> str | None:
    """The library `api()` loads: `$TILELANG_HIP_LIBRARY`, else None (the loader's search)."""
    return os.environ.get(ENV_LIBRARY) or None


def api() -> HipApi:
    """The HIP runtime bindings for `library_path()`, loaded and initialised once per path.
    Raises OSError when no HIP runtime library can be loaded."""
    path = library_path()
    key = path or ""
    hit = _apis.get(key)
    if hit is not None:
        return hit
    with _lock:
        if key not in _apis:
            lib, where = _open(path)
            _apis[key] = HipApi(lib, where)
        return _apis[key]


def _open(path: str | None) -> tuple[Any, str]:
    if path is not None:
        return ctypes.CDLL(path), path
    tried = []
    for name in (*LIBRARY_NAMES, *_torch_library()):
        try:
            return ctypes.CDLL(name), name
        except OSError as err:
            tried.append(str(err))
    raise OSError(
        "no HIP runtime library (libamdhip64.so) could be loaded; install ROCm or set "
        f"{ENV_LIBRARY} to its path ({'; '.join(tried)})"
    )


def _torch_library() -> list:
    """The libamdhip64 a ROCm build of torch ships, when torch is one."""
    try:
        import torch
    except ImportError:
        return []
    if getattr(torch.version, "hip", None) is None:
        return []
    return [os.path.join(os.path.dirname(torch.__file__), "lib", "libamdhip64.so")]
