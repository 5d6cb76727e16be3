"""Loading AMDGPU code objects and launching their kernels through the HIP runtime
(`hipModuleLoadData`, `hipModuleGetFunction`, `hipModuleLaunchKernel` on torch's current
stream) — the HIP twin of `backend/cuda/runtime.py` + `cuda/backend.make_launcher`.

Requires: a `BuiltKernel` whose `lib_path` is a code object (an AMDGPU ELF, or a clang offload
bundle holding one) and whose `meta` is launch metadata in the CUDA backend's layout:
`entry` (kernel symbol), `threads` (block size), `smem` (dynamic LDS bytes), `args` (one
`kernel_args.ARG_KINDS` kind per parameter, then "i64" per dynamic dimension), `n_params`,
`grid` (`ir.int_tree` trees), optionally `arch` ("gfx90a") and the `launch_limits` records.
Guarantees: `load_code_object(built)` returns `launch(values, dyn)` that packs exactly what the
CUDA launchers pack for the same metadata (`kernel_args`: device pointers from `data_ptr()`,
scalars in their own width, 16-bit floats as their bits, dynamic dimensions as int64) and
launches on torch's current stream (on ROCm torch, `torch.cuda.current_stream().cuda_stream` is
the `hipStream_t`). Before anything runs on the device it refuses, with an error naming the
kernel: a code object that is not AMDGPU code, one built for another GPU than the device's, a
block larger than the device allows, LDS (static + dynamic) above the device's per-workgroup
limit, and — at each launch — a grid beyond the device's limits or with 2^32 or more work-items
in a dimension (HIP's own rule). Dynamic dimensions above a kernel's 32-bit index limits are
refused as on CUDA (`launch_limits.guard_dynamic`).

Why no dynamic-LDS attribute: CUDA needs `cuFuncSetAttribute` to opt in to more than 48 KB of
dynamic shared memory; AMD GPUs have no opt-in — a workgroup may use all the LDS the device
reports — so the load-time check against `hipDeviceAttributeMaxSharedMemoryPerBlock` is the
whole story. A code object is loaded once per device and content (a function split into several
kernels loads its one code object once, `backend/launch_plan.py`) and stays loaded for the
process, as CUDA modules do.
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import threading
from collections.abc import Callable
from typing import Any

from ...errors import IndexLimitError, UnsupportedError
from ..kernel_args import ARG_KINDS, STORE_HELPERS, check_kinds, grid_launcher, stream_getter
from ..launch_limits import guard_dynamic
from ..meta_schema import field, is_identifier, is_int, is_list_of
from ..registry import BuiltKernel
from ..target import gcn_arch_base
from . import hip_api

EM_AMDGPU = 224
OFFLOAD_BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
WORK_ITEMS_PER_DIMENSION = 1 << 32  # HIP launches fewer than 2^32 work-items per grid dimension
_TARGET_ID = re.compile(rb"amdgcn-amd-amdhsa--([A-Za-z0-9:+-]+)")  # in the code object's metadata note

_modules: dict[tuple, ctypes.c_void_p] = {}
_modules_lock = threading.Lock()


def load_code_object(built: BuiltKernel) -> Callable[[list, list], None]:
    """`launch(values, dyn)`: `values` are the parameters (torch tensors / Python scalars) in
    order, `dyn` the ints of the dynamic dimensions. Everything that does not change between
    calls is prepared here (module docstring)."""
    m = built.meta
    if not built.lib_path:
        raise UnsupportedError("this kernel was lowered without compiling; build it to launch it")
    from ..cuda.backend import grid_function

    n_params = int(m["n_params"])
    arg_types = list(m["args"])
    grid_fn = grid_function(m["grid"], n_params, len(arg_types) - n_params)
    block = (int(m["threads"]), 1, 1)
    mod = HipModule(built.lib_path, m["entry"], int(m["smem"]), block, m.get("arch"))
    fixed = grid_fn.fixed
    if fixed is not None and min(fixed) <= 0:
        return guard_dynamic(lambda values, dyn: None, m)
    if fixed is not None:
        mod.check_grid(fixed)
    return guard_dynamic(_launcher(mod, arg_types, n_params, block, grid_fn), m)


def _launcher(mod: HipModule, arg_types: list, n_params: int, block: tuple, grid_fn: Callable) -> Callable:
    from . import native_launch

    native = native_launch.launcher(mod, arg_types, n_params, block, grid_fn.fixed)
    return grid_launcher(
        native, lambda: mod.launcher(arg_types, n_params), grid_fn, grid_fn.fixed, block, mod.check_grid
    )


class HipModule:
    """One kernel function of a loaded code object, on torch's current HIP device."""

    def __init__(self, path: str, kernel_name: str, dynamic_lds: int, block: tuple, arch: str | None = None) -> None:
        import torch

        self.kernel_name, self.smem, self.block = kernel_name, dynamic_lds, tuple(int(b) for b in block)
        with open(path, "rb") as f:
            image = f.read()
        check_code_object(image, path, kernel_name)
        torch.cuda.init()
        self.device = torch.cuda.current_device()
        check_device_arch(code_object_arch(image), arch, self.device, kernel_name)
        self.api = api = hip_api.api()
        previous = api.get_device()
        if previous != self.device:  # a module loads onto the calling thread's current device
            api.set_device(self.device)
        try:
            self.module = _module(api, self.device, image, kernel_name)
            self.func = api.get_function(self.module, kernel_name)
        finally:
            if previous != self.device:
                api.set_device(previous)
        self._check_resources()
        self.grid_limits = tuple(
            api.device_attribute(hip_api.DEVICE_ATTRIBUTE_MAX_GRID_DIM_X + i, self.device, f"max grid dim {'xyz'[i]}")
            for i in range(3)
        )
        # the most blocks per dimension both rules allow: one comparison per axis at a launch
        self.max_blocks = tuple(
            min(limit, (WORK_ITEMS_PER_DIMENSION - 1) // b) for limit, b in zip(self.grid_limits, self.block)
        )

    def _check_resources(self) -> None:
        api, dev, name = self.api, self.device, self.kernel_name
        threads = self.block[0] * self.block[1] * self.block[2]
        max_threads = api.device_attribute(hip_api.DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev, "max threads per block")
        if threads > max_threads:
            raise UnsupportedError(
                f"kernel `{name}` has {threads} threads per block, more than the {max_threads} device {dev} allows"
            )
        static = api.function_attribute(self.func, hip_api.FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "static LDS", name)
        limit = api.device_attribute(hip_api.DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, dev, "LDS per workgroup")
        if static + self.smem > limit:
            raise UnsupportedError(
                f"kernel `{name}` needs {static + self.smem} bytes of LDS ({static} static + {self.smem} dynamic), "
                f"more than the {limit} bytes a workgroup can have on device {dev}",
                None,
                "use smaller tiles or fewer pipeline stages",
            )

    def check_grid(self, grid: tuple) -> None:
        """Raise IndexLimitError unless HIP can launch `grid` blocks of this kernel's block."""
        mx, my, mz = self.max_blocks
        if grid[0] <= mx and grid[1] <= my and grid[2] <= mz:
            return
        for axis in range(3):
            blocks, limit = int(grid[axis]), self.grid_limits[axis]
            items = blocks * self.block[axis]
            if blocks > limit or items >= WORK_ITEMS_PER_DIMENSION:
                raise IndexLimitError(
                    f"the launch grid ({', '.join(str(int(g)) for g in grid)}) of kernel `{self.kernel_name}` has "
                    f"{blocks} blocks ({items} work-items) in {'xyz'[axis]}: HIP allows at most {limit} blocks and "
                    f"fewer than 2^32 work-items per dimension",
                    None,
                    "use larger blocks or split the work",
                )

    def launcher(self, arg_types: list[str], n_params: int) -> Callable[..., None]:
        """`run(values, dyn, grid, block)` through ctypes, launching with `values` (the parameters:
        tensors for 'ptr', Python numbers otherwise) followed by the ints `dyn`. The parameter
        buffer is allocated here, once; `run` is generated with one store per slot and no loops."""
        check_kinds(arg_types)
        slots = [ARG_KINDS[t].ctype() for t in arg_types]
        params = (ctypes.c_void_p * max(1, len(slots)))(*[ctypes.cast(ctypes.byref(s), ctypes.c_void_p) for s in slots])
        lines = ["def run(values, dyn, grid, block):"]
        for i, t in enumerate(arg_types):
            value = f"values[{i}]" if i < n_params else f"dyn[{i - n_params}]"
            lines.append("    " + ARG_KINDS[t].store.format(slot=f"s{i}", value=value))
        stream_fn, stream_arg = stream_getter(self.device)
        lines += [
            f"    stream = stream_fn({'' if stream_arg is None else 'stream_arg'})",
            "    res = hip_launch(func, *grid, *block, smem, stream, params, None)",
            "    if res:",
            "        failed(res, grid, block, stream, 0)",
        ]
        namespace: dict[str, Any] = dict(STORE_HELPERS)
        namespace.update({f"s{i}": s for i, s in enumerate(slots)})
        namespace.update(
            hip_launch=self.api.launch_kernel, func=self.func, smem=self.smem, params=params,
            stream_fn=stream_fn, stream_arg=stream_arg, failed=self.launch_failed,
        )  # fmt: skip
        exec(compile("\n".join(lines), f"<hip launch {self.kernel_name}>", "exec"), namespace)  # noqa: S102
        run = namespace["run"]
        run.slots, run.params = slots, params  # the buffers stay alive as long as `run`
        return run

    def launch_failed(self, res: int, grid: tuple, block: tuple, stream: int, params: int) -> None:
        """A launch (either launcher's) returned `res`: raise HipError with the launch's shape."""
        shape = f"grid {tuple(grid)}, block {tuple(block)}, {self.smem} B dynamic LDS, stream {stream:#x}"
        self.api.check(res, f"hipModuleLaunchKernel({shape})", self.kernel_name)


def _module(api: hip_api.HipApi, device: int, image: bytes, kernel_name: str) -> ctypes.c_void_p:
    """The module of `image` on `device`, loaded on first use."""
    key = (api.path, device, hashlib.sha256(image).digest())
    with _modules_lock:
        module = _modules.get(key)
        if module is None:
            module = _modules[key] = api.load_module(image, kernel_name)
    return module


def check_code_object(image: bytes, path: str, kernel_name: str) -> None:
    """Raise UnsupportedError unless `image` is AMDGPU device code HIP can load: an ELF64 whose
    machine is EM_AMDGPU, or a clang offload bundle (which hipModuleLoadData unpacks)."""
    if image.startswith(OFFLOAD_BUNDLE_MAGIC):
        return
    if image[:4] == b"\x7fELF" and len(image) >= 20 and image[4] == 2:
        machine = int.from_bytes(image[18:20], "little")
        if machine == EM_AMDGPU:
            return
        what = f"an ELF for machine {machine}, not AMDGPU ({EM_AMDGPU})"
    else:
        what = "not an ELF code object"
    raise UnsupportedError(f"the code object of kernel `{kernel_name}` ({path}) is {what}")


def code_object_arch(image: bytes) -> str | None:
    """The processor an AMDGPU ELF code object is for, from the target ID its metadata note
    records ("amdgcn-amd-amdhsa--gfx90a:xnack-" → "gfx90a"); None for a bundle (HIP picks the
    entry that matches the device) or when no target ID is found."""
    if image.startswith(OFFLOAD_BUNDLE_MAGIC):
        return None
    found = _TARGET_ID.search(image)
    return gcn_arch_base(found.group(1).decode()) if found else None


def check_device_arch(code_arch: str | None, built_for: str | None, device: int, kernel_name: str) -> None:
    """Raise UnsupportedError when torch's device `device` is not the processor the code object
    is for (`code_arch`, else the `built_for` target): hipModuleLoadData would fail with a less
    telling error. A code object compiled for a proxy (gfx942 built as gfx940 by a clang before
    LLVM 17: a gfx942 device does not load it) names both."""
    import torch

    props = torch.cuda.get_device_properties(device)
    have = gcn_arch_base(getattr(props, "gcnArchName", "") or "")
    want = code_arch or (gcn_arch_base(built_for) if built_for else None)
    if not have or not want or have == want:
        return
    target = f" (the target was {built_for})" if built_for and gcn_arch_base(built_for) != want else ""
    raise UnsupportedError(
        f"the code object of kernel `{kernel_name}` is for {want}{target}, but device {device} is a {have}",
        None,
        f'build it with target={{"kind": "hip", "arch": "{have}"}} (or target="auto") with a clang that supports {have}',
    )


def check_launch_meta(meta: dict) -> None:
    """Raise ValueError unless `meta` is launch metadata `load_code_object` can use (the backend's
    `check_meta` for disk-cache entries); the field that is wrong is named."""
    from ..cuda.backend import grid_function

    field(meta, "entry", is_identifier, "a C identifier")
    field(meta, "threads", lambda x: is_int(x, 1, 1025), "an int in [1, 1024]")
    field(meta, "smem", lambda x: is_int(x, 0, 1 << 31), "a byte count")
    args = field(meta, "args", lambda x: is_list_of(x, lambda k: type(k) is str and k in ARG_KINDS), "parameter kinds")
    n_params = field(meta, "n_params", lambda x: is_int(x, 0, len(args) + 1), "at most the number of args")
    grid_function(field(meta, "grid", lambda x: type(x) is list, "a list"), n_params, len(args) - n_params)
    field(meta, "arch", lambda x: x is None or type(x) is str, "an arch name", optional=True)
