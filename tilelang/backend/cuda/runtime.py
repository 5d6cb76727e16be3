"""Loading cubins and launching kernels through the CUDA driver API (ctypes on libcuda).

Why ctypes rather than a binding package: the driver API surface we need is
six functions, torch is the only core dependency (DESIGN.md), and the call
path must be cheap — argument buffers are prepared once per kernel and a
launch is one `cuLaunchKernel` on torch's current stream.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any

_lib = None
_lock = threading.Lock()
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


def _driver() -> Any:
    global _lib
    if _lib is None:
        with _lock:
            if _lib is None:
                lib = ctypes.CDLL("libcuda.so.1")
                _check(lib.cuInit(0), "cuInit")
                _lib = lib
    return _lib


def _check(res: int, what: str) -> None:
    if res != 0:
        lib = _lib
        msg = ctypes.c_char_p()
        if lib is not None:
            lib.cuGetErrorString(res, ctypes.byref(msg))
        raise RuntimeError(f"CUDA driver error {res} in {what}: {msg.value.decode() if msg.value else 'unknown'}")


class CudaModule:
    """A loaded cubin with one kernel function, bound to the current device's primary context."""

    def __init__(self, cubin_path: str, kernel_name: str, dynamic_smem: int) -> None:
        import torch

        torch.cuda.init()
        self.device = torch.cuda.current_device()
        torch.empty(1, device=f"cuda:{self.device}")  # torch has created and made current its primary context
        lib = _driver()
        self._bind_context(lib)
        data = open(cubin_path, "rb").read()
        self.module = ctypes.c_void_p()
        _check(
            lib.cuModuleLoadData(ctypes.byref(self.module), ctypes.c_char_p(data)), f"cuModuleLoadData({kernel_name})"
        )
        self.func = ctypes.c_void_p()
        _check(
            lib.cuModuleGetFunction(ctypes.byref(self.func), self.module, kernel_name.encode()), "cuModuleGetFunction"
        )
        if dynamic_smem > 48 * 1024:
            _check(
                lib.cuFuncSetAttribute(
                    self.func, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, ctypes.c_int(dynamic_smem)
                ),
                f"cuFuncSetAttribute(max dynamic shared memory = {dynamic_smem})",
            )
        self.smem = dynamic_smem
        self._launch = lib.cuLaunchKernel

    def launcher(self, arg_types: list[str]) -> Callable[[list, tuple, tuple], None]:
        """A function `launch(args, grid, block)`; `arg_types` are 'ptr', 'i32', 'i64', 'f32', 'f64'."""
        import torch

        ctor = {
            "ptr": ctypes.c_void_p,
            "i32": ctypes.c_int32,
            "i64": ctypes.c_int64,
            "f32": ctypes.c_float,
            "f64": ctypes.c_double,
        }
        slots = [ctor[t]() for t in arg_types]
        params = (ctypes.c_void_p * len(slots))(*[ctypes.cast(ctypes.byref(s), ctypes.c_void_p) for s in slots])
        launch, func, smem = self._launch, self.func, self.smem
        kinds = list(enumerate(arg_types))

        def run(args: list, grid: tuple, block: tuple) -> None:
            for (i, kind), a in zip(kinds, args):
                slots[i].value = a.data_ptr() if kind == "ptr" else a
            stream = torch.cuda.current_stream().cuda_stream
            res = launch(
                func,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                smem,
                ctypes.c_void_p(stream),
                params,
                None,
            )
            if res != 0:
                _check(res, "cuLaunchKernel")

        return run
