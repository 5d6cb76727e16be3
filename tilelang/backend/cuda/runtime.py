"""Loading cubins and launching kernels through the CUDA driver API (ctypes on libcuda).

Why ctypes rather than a binding package: the driver API surface we need is a
handful of functions, torch is the only core dependency (DESIGN.md), and the
call path must be cheap — argument buffers are prepared once per kernel and a
launch is one `cuLaunchKernel` on torch's current stream.

Contexts: kernels are loaded into the device's *primary* context, the one torch
uses; a host thread without a current context gets it bound on first use.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any

_lib = None
_lock = threading.Lock()
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CUDA_ERROR_INVALID_CONTEXT = 201

_CTYPES = {
    "ptr": ctypes.c_void_p,
    "i8": ctypes.c_int8,
    "u8": ctypes.c_uint8,
    "i16": ctypes.c_int16,
    "u16": ctypes.c_uint16,
    "i32": ctypes.c_int32,
    "u32": ctypes.c_uint32,
    "i64": ctypes.c_int64,
    "u64": ctypes.c_uint64,
    "bool": ctypes.c_bool,
    "f16": ctypes.c_uint16,  # passed as its bits
    "bf16": ctypes.c_uint16,
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
}


def _driver() -> Any:
    global _lib
    if _lib is None:
        with _lock:
            if _lib is None:
                lib = ctypes.CDLL("libcuda.so.1")
                _check(lib.cuInit(0), "cuInit", lib)
                _lib = lib
    return _lib


def _check(res: int, what: str, lib: Any = None) -> None:
    if res != 0:
        lib = lib if lib is not None else _lib
        msg = ctypes.c_char_p()
        if lib is not None:
            lib.cuGetErrorString(res, ctypes.byref(msg))
        text = msg.value.decode() if msg.value else "unknown"
        raise RuntimeError(f"CUDA driver error {res} in {what}: {text}")


def bind_primary_context(lib: Any, device: int) -> None:
    """Make `device`'s primary context current on this host thread if none is."""
    cur = ctypes.c_void_p()
    lib.cuCtxGetCurrent(ctypes.byref(cur))
    if cur.value:
        return
    dev = ctypes.c_int()
    _check(lib.cuDeviceGet(ctypes.byref(dev), device), "cuDeviceGet", lib)
    ctx = ctypes.c_void_p()
    _check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain", lib)
    _check(lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent", lib)


class CudaModule:
    """A loaded cubin with one kernel function, in the current device's primary context."""

    def __init__(self, cubin_path: str, kernel_name: str, dynamic_smem: int) -> None:
        import torch

        torch.cuda.init()
        self.device = torch.cuda.current_device()
        torch.empty(1, device=f"cuda:{self.device}")  # torch has created its primary context
        lib = _driver()
        self.lib = lib
        bind_primary_context(lib, self.device)
        with open(cubin_path, "rb") as f:
            data = f.read()
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

    def launcher(self, arg_types: list[str], n_params: int | None = None) -> Callable[..., None]:
        """`run(values, dyn, grid, block)` launching with `values` (the parameters: tensors for
        'ptr', Python numbers otherwise) followed by the ints `dyn`; `arg_types` gives the kind
        of each of them — 'ptr' or a scalar kind: 'i8' 'u8' 'i16' 'u16' 'i32' 'u32' 'i64'
        'u64' 'bool' 'f16' 'bf16' 'f32' 'f64' (16-bit floats are passed as their bits).
        `n_params`: how many of `arg_types` are parameters (the rest are `dyn`)."""
        import torch

        n = len(arg_types) if n_params is None else n_params
        slots = [_CTYPES[t]() for t in arg_types]
        params = (ctypes.c_void_p * max(1, len(slots)))(*[ctypes.cast(ctypes.byref(s), ctypes.c_void_p) for s in slots])
        ptrs = [(i, slots[i]) for i, t in enumerate(arg_types[:n]) if t == "ptr"]
        plain = [(i, slots[i]) for i, t in enumerate(arg_types[:n]) if t not in ("ptr", "f16", "bf16")]
        halves = [
            (i, slots[i], "float16" if t == "f16" else "bfloat16")
            for i, t in enumerate(arg_types[:n])
            if t in ("f16", "bf16")
        ]
        dyn_slots = slots[n:]
        lib, func, smem, device = self.lib, self.func, self.smem, self.device
        cu_launch = lib.cuLaunchKernel
        raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        current_stream = torch.cuda.current_stream
        void_p = ctypes.c_void_p

        def run(values: list, dyn: list, grid: tuple, block: tuple) -> None:
            for i, slot in ptrs:
                slot.value = values[i].data_ptr()
            for i, slot in plain:
                slot.value = values[i]
            if halves:
                from ..c.floatfmt import encode

                for i, slot, fmt in halves:
                    slot.value = encode(float(values[i]), fmt)
            for slot, d in zip(dyn_slots, dyn):
                slot.value = d
            stream = void_p(raw_stream(device) if raw_stream is not None else current_stream().cuda_stream)
            gx, gy, gz = grid
            bx, by, bz = block
            res = cu_launch(func, gx, gy, gz, bx, by, bz, smem, stream, params, None)
            if res == CUDA_ERROR_INVALID_CONTEXT:  # first launch from a new host thread
                bind_primary_context(lib, device)
                res = cu_launch(func, gx, gy, gz, bx, by, bz, smem, stream, params, None)
            if res != 0:
                _check(res, "cuLaunchKernel", lib)

        return run
