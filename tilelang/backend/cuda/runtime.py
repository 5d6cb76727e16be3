"""Loading cubins and launching kernels through the CUDA driver API (ctypes on libcuda).

Why ctypes rather than a binding package: the driver API surface we need is a
handful of functions, torch is the only core dependency (DESIGN.md), and the
call path must be cheap — the parameter buffer is allocated once per kernel,
the per-call code (`CudaModule.launcher`) is generated per kernel with one
store per parameter slot (`ARG_KINDS` says how each kind of parameter is
stored), and a launch is one `cuLaunchKernel` on torch's current stream.

Contexts: kernels are loaded into the device's *primary* context, the one torch
uses; a host thread without a current context gets it bound on first use.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any

from ..kernel_args import ARG_KINDS, ArgKind  # noqa: F401 - re-exported: the table every launcher packs by
from ..kernel_args import STORE_HELPERS as _STORE_HELPERS
from ..kernel_args import check_kinds as _check_kinds
from ..kernel_args import half_bits as _half_bits
from ..kernel_args import stream_getter as _stream_getter

_lib = None
_lock = threading.Lock()
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CUDA_ERROR_INVALID_CONTEXT = 201


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
        self.kernel_name = kernel_name

    def launcher(
        self, arg_types: list[str], n_params: int | None = None, tensor_maps: list | None = None
    ) -> Callable[..., None]:
        """`run(values, dyn, grid, block)` launching with `values` (the parameters: tensors for
        'ptr', Python numbers otherwise) followed by the ints `dyn`; `arg_types` gives the kind
        of each of them, a key of `ARG_KINDS` (16-bit floats are passed as their bits).
        `n_params`: how many of `arg_types` are parameters (the rest are `dyn`).
        `tensor_maps`: TMA descriptor specs (JSON, `tensor_map.py`), passed after everything
        else as 128-byte `CUtensorMap` values encoded from the tensors of their parameters.

        The parameter buffer and its slots are allocated here, once; `run` is generated
        Python with one store statement per slot and no loops, so a call costs the stores,
        the stream query and `cuLaunchKernel`."""
        n = len(arg_types) if n_params is None else n_params
        _check_kinds(arg_types)
        slots = [ARG_KINDS[t].ctype() for t in arg_types]
        encoders = _tensor_map_encoders(self.lib, tensor_maps)
        slots += [(ctypes.c_uint64 * 16)() for _ in encoders]  # CUtensorMap values
        params = (ctypes.c_void_p * max(1, len(slots)))(*[ctypes.cast(ctypes.byref(s), ctypes.c_void_p) for s in slots])
        lines = ["def run(values, dyn, grid, block):"]
        for i, t in enumerate(arg_types):
            value = f"values[{i}]" if i < n else f"dyn[{i - n}]"
            lines.append("    " + ARG_KINDS[t].store.format(slot=f"s{i}", value=value))
        for j, enc in enumerate(encoders):
            lines.append(f"    memmove(s{len(arg_types) + j}, tmap{j}.address(values[{enc.param}]), 128)")
        stream_fn, stream_arg = _stream_getter(self.device)
        lines += [
            f"    stream = void_p(stream_fn({'' if stream_arg is None else 'stream_arg'}))",
            "    res = cu_launch(func, *grid, *block, smem, stream, params, None)",
            "    if res:",
            "        relaunch(res, grid, block, stream, params)",
        ]
        namespace: dict[str, Any] = dict(_STORE_HELPERS)
        namespace.update({f"s{i}": s for i, s in enumerate(slots)})
        namespace.update(self._launch_namespace(params), stream_fn=stream_fn, stream_arg=stream_arg)
        namespace.update({f"tmap{j}": enc for j, enc in enumerate(encoders)}, memmove=ctypes.memmove)
        exec(compile("\n".join(lines), f"<launch {self.kernel_name}>", "exec"), namespace)  # noqa: S102
        run = namespace["run"]
        run.slots, run.params = slots, params  # the buffers stay alive as long as `run`
        return run

    def native_launcher(
        self, arg_types: list[str], n_params: int, tensor_maps: list | None, block: tuple, grid: tuple | None
    ) -> Callable[..., None] | None:
        """The C launcher (`native_launch`) for this kernel, or None where it does not apply
        (not built on this machine, or a cluster launch). Called `run(values, dyn)` when
        `grid` is fixed, else `run(values, dyn, gx, gy, gz)`; it launches exactly what
        `launcher(...)`'s `run` launches, with the same errors."""
        from . import native_launch

        if getattr(self, "launch_fn", None) is not None:
            return None  # cuLaunchKernelEx with cluster attributes: the ctypes path
        ext = native_launch.extension()
        if ext is None:
            return None
        _check_kinds(arg_types)
        encoders = _tensor_map_encoders(self.lib, tensor_maps)
        kinds = "".join(ARG_KINDS[t].code for t in arg_types) + "M" * len(encoders)
        sources = [i if i < n_params else -(i - n_params) - 1 for i in range(len(arg_types))]
        sources += [enc.param for enc in encoders]
        helpers = [_half_bits if t in ("f16", "bf16") else None for t in arg_types] + list(encoders)
        stream_fn, stream_arg = _stream_getter(self.device)

        def on_error(res: int, grid: tuple, block: tuple, stream: int, params: int) -> None:
            self._launch_failed(res, grid, block, ctypes.c_void_p(stream), ctypes.c_void_p(params))

        launch_address = ctypes.cast(self.lib.cuLaunchKernel, ctypes.c_void_p).value
        return ext.Launcher(
            launch_address, self.func.value, tuple(int(b) for b in block), self.smem,
            None if grid is None else tuple(int(g) for g in grid),
            kinds, sources, helpers, stream_fn, stream_arg, on_error,
        )  # fmt: skip

    def _cu_launch(self) -> Any:
        """`cuLaunchKernel`, or the cluster launch `cluster_launch_fn` set as `launch_fn`."""
        return getattr(self, "launch_fn", None) or self.lib.cuLaunchKernel

    def _launch_failed(self, res: int, grid: tuple, block: tuple, stream: Any, params: Any) -> None:
        """A launch (either launcher's) returned `res`: on a host thread without a current
        context the primary one is bound and the launch repeated; any other error raises."""
        if res == CUDA_ERROR_INVALID_CONTEXT:  # first launch from a new host thread
            bind_primary_context(self.lib, self.device)
            res = self._cu_launch()(self.func, *grid, *block, self.smem, stream, params, None)
        if res != 0:
            _check(res, f"cuLaunchKernel({self.kernel_name})", self.lib)

    def _launch_namespace(self, params: Any) -> dict[str, Any]:
        """Names the generated `run` uses besides the slots and the stream getter."""
        return {
            "cu_launch": self._cu_launch(),
            "func": self.func,
            "smem": self.smem,
            "params": params,
            "void_p": ctypes.c_void_p,
            "relaunch": self._launch_failed,
        }


def _tensor_map_encoders(lib: Any, specs: list | None) -> list:
    if not specs:
        return []
    from .tensor_map import TensorMapEncoder, TensorMapSpec

    return [TensorMapEncoder(lib, TensorMapSpec.from_json(s)) for s in specs]


# --------------------------------------------------------------------------
# Thread-block clusters (T.ClusterKernel, sm_90a): cuLaunchKernelEx with the
# cluster-dimension launch attribute
# --------------------------------------------------------------------------

CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4


class _LaunchAttribute(ctypes.Structure):
    # CUlaunchAttribute: a 4-byte id, padding to 8, then a 64-byte value union whose
    # clusterDim member is three unsigned ints
    _fields_ = [("id", ctypes.c_uint32), ("pad", ctypes.c_char * 4), ("value", ctypes.c_uint32 * 16)]


class _LaunchConfig(ctypes.Structure):
    # CUlaunchConfig
    _fields_ = [
        ("gridDimX", ctypes.c_uint32),
        ("gridDimY", ctypes.c_uint32),
        ("gridDimZ", ctypes.c_uint32),
        ("blockDimX", ctypes.c_uint32),
        ("blockDimY", ctypes.c_uint32),
        ("blockDimZ", ctypes.c_uint32),
        ("sharedMemBytes", ctypes.c_uint32),
        ("hStream", ctypes.c_void_p),
        ("attrs", ctypes.POINTER(_LaunchAttribute)),
        ("numAttrs", ctypes.c_uint32),
    ]


def cluster_launch_fn(module: CudaModule, cluster_dims: tuple) -> Callable[..., int]:
    """A function with `cuLaunchKernel`'s signature that launches `module`'s kernel in
    clusters of `cluster_dims` blocks (`cuLaunchKernelEx`); set it as `module.launch_fn`
    before building the launcher. Grid dimensions that are not multiples of the cluster
    shape are a `ValueError` (the driver would fail the launch less clearly)."""
    lib = module.lib
    launch_ex = lib.cuLaunchKernelEx
    launch_ex.argtypes = [ctypes.POINTER(_LaunchConfig), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    attr = _LaunchAttribute()
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    cx, cy, cz = (int(d) for d in cluster_dims)
    attr.value[0], attr.value[1], attr.value[2] = cx, cy, cz
    config = _LaunchConfig()
    config.attrs = ctypes.pointer(attr)
    config.numAttrs = 1
    ref = ctypes.byref(config)

    def launch(func: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, smem: int, stream: Any,
               params: Any, extra: Any) -> int:  # fmt: skip
        if gx % cx or gy % cy or gz % cz:
            raise ValueError(
                f"kernel `{module.kernel_name}`: grid ({gx}, {gy}, {gz}) is not a multiple of the cluster shape "
                f"({cx}, {cy}, {cz})"
            )
        config.gridDimX, config.gridDimY, config.gridDimZ = gx, gy, gz
        config.blockDimX, config.blockDimY, config.blockDimZ = bx, by, bz
        config.sharedMemBytes = smem
        config.hStream = stream.value if isinstance(stream, ctypes.c_void_p) else stream
        return launch_ex(ref, func, ctypes.cast(params, ctypes.c_void_p), extra)

    launch.keep = (attr, config)  # the structures live as long as the function
    return launch
