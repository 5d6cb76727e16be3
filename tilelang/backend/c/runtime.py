"""Loading and calling compiled C kernels (ctypes).

The entry ABI is `int32_t <entry>(void** args)`: one pointer per parameter
(a buffer's data pointer; a pointer to a scalar's value stored in its dtype),
then one pointer to an int64 per dynamic dimension (`func.dynamic_vars()`
order). A nonzero return means a `T.device_assert` failed; the library's
`const char* tl_last_error(void)` has the message.

- `load(artifact)` → `call(args)` taking a ctypes `void*` array;
- `make_launcher(artifact)` → `launch(values, dyn_values)`: packs torch
  tensors / Python scalars and dynamic dimension values (what the JIT's
  launch adapter passes) and calls the kernel;
- `CKernel(artifact)(*args)`: the same from a plain argument list, reading
  dynamic dimensions from tensor shapes (used by tests and benchmarks).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any

from ...ir.buffer import Buffer
from ...ir.dtype import DataType
from ...ir.expr import Var
from .floatfmt import encode

_LIBS: dict[str, ctypes.CDLL] = {}
_LOCK = threading.Lock()


class DeviceAssertError(RuntimeError):
    """A `T.device_assert` failed while the kernel ran (message: where and which block)."""


def _lib(path: str) -> ctypes.CDLL:
    with _LOCK:
        lib = _LIBS.get(path)
        if lib is None:
            lib = ctypes.CDLL(path)
            _LIBS[path] = lib
        return lib


def load_entry(lib_path: str, entry: str) -> Callable[[Any], None]:
    """A callable running `entry` of the library at `lib_path` on a ctypes `void*` array."""
    lib = _lib(lib_path)
    fn = getattr(lib, entry)
    fn.restype = ctypes.c_int32
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    last_error = lib.tl_last_error
    last_error.restype = ctypes.c_char_p
    last_error.argtypes = []

    def call(args) -> None:
        if fn(args) != 0:
            raise DeviceAssertError((last_error() or b"device_assert failed").decode("utf-8", "replace"))

    call.entry = entry  # type: ignore[attr-defined]
    return call


def load(artifact) -> Callable[[Any], None]:
    """A callable running the kernel on a ctypes `void*` array (see the module doc)."""
    return load_entry(artifact.lib_path, artifact.entry)


def arg_spec(func) -> tuple[list, int]:
    """JSON-able description of the entry's arguments: `[["buffer"|"scalar", dtype], ...]`
    for the parameters, and the number of dynamic dimensions that follow."""
    return [["buffer" if isinstance(p, Buffer) else "scalar", str(p.dtype)] for p in func.params], len(
        func.dynamic_vars()
    )


_CTYPES = {
    "bool": ctypes.c_bool,
    "int8": ctypes.c_int8,
    "int16": ctypes.c_int16,
    "int32": ctypes.c_int32,
    "int64": ctypes.c_int64,
    "uint8": ctypes.c_uint8,
    "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32,
    "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float,
    "tfloat32": ctypes.c_float,
    "float64": ctypes.c_double,
    "float16": ctypes.c_uint16,
    "bfloat16": ctypes.c_uint16,
    "float8_e4m3fn": ctypes.c_uint8,
    "float8_e5m2": ctypes.c_uint8,
}


def scalar_box(dtype: Any, value: Any) -> ctypes._SimpleCData:
    """A ctypes object holding `value` stored as `dtype` (small floats as their bits)."""
    dt = DataType(dtype)
    ct = _CTYPES[dt.base]
    if dt.base in ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"):
        return ct(encode(float(value), dt.base))
    if dt.is_float:
        return ct(float(value))
    if dt.is_bool:
        return ct(bool(value))
    v = int(value) & ((1 << dt.bits) - 1)  # wrap like a C conversion
    if dt.is_int and v >= 1 << (dt.bits - 1):
        v -= 1 << dt.bits
    return ct(v)


def make_launcher(artifact, func=None) -> Callable[[list, list], None]:
    """`launch(values, dyn_values)` for a built artifact (see `launcher`)."""
    from ..launch_limits import guard_dynamic, limits_meta

    func = func if func is not None else artifact.lowered
    spec, n_dyn = arg_spec(func)
    return guard_dynamic(launcher(artifact.lib_path, artifact.entry, spec, n_dyn), limits_meta(func))


def launcher(lib_path: str, entry: str, spec: list, n_dyn: int) -> Callable[[list, list], None]:
    """`launch(values, dyn_values)`: `values[i]` is a torch tensor (buffer
    parameter) or a Python scalar (scalar parameter); `dyn_values` are the ints
    of the dynamic dimensions. Checks nothing (the JIT adapter already did)."""
    call = load_entry(lib_path, entry)
    kinds = [(kind == "buffer", DataType(dt)) for kind, dt in spec]
    arr_t = ctypes.c_void_p * (len(kinds) + n_dyn)

    def launch(values: list, dyn_values: list) -> None:
        arr = arr_t()
        keep = []
        for i, ((is_buf, dt), v) in enumerate(zip(kinds, values)):
            if is_buf:
                arr[i] = v.data_ptr()
            else:
                box = scalar_box(dt, v)
                keep.append(box)
                arr[i] = ctypes.addressof(box)
        base = len(kinds)
        for k, d in enumerate(dyn_values):
            box = ctypes.c_int64(int(d))
            keep.append(box)
            arr[base + k] = ctypes.addressof(box)
        call(arr)

    return launch


class CKernel:
    """Run a built kernel with all parameters given positionally (tensors for
    buffers, Python numbers for scalars); dynamic dimensions are read from the
    shapes of the tensors whose dimension is exactly that variable."""

    def __init__(self, artifact, func=None) -> None:
        self.artifact = artifact
        self.func = func if func is not None else artifact.lowered
        self.launch = make_launcher(artifact, self.func)
        self.dyn = self.func.dynamic_vars()
        self.source: dict = {}
        for i, p in enumerate(self.func.params):
            if isinstance(p, Buffer):
                for k, d in enumerate(p.shape):
                    if isinstance(d, Var) and d not in self.source:
                        self.source[d] = (i, k)
        missing = [v.name for v in self.dyn if v not in self.source]
        if missing:
            raise ValueError(f"dynamic dimension(s) {missing} cannot be read from a tensor shape")

    def __call__(self, *args: Any) -> None:
        if len(args) != len(self.func.params):
            raise TypeError(f"kernel `{self.func.name}` takes {len(self.func.params)} arguments, got {len(args)}")
        for p, a in zip(self.func.params, args):
            if isinstance(p, Buffer):
                if a.dtype != p.dtype.as_torch() or not a.is_contiguous() or a.device.type != "cpu":
                    raise TypeError(f"argument `{p.name}` must be a contiguous CPU tensor of {p.dtype}")
        dyn = [args[self.source[v][0]].shape[self.source[v][1]] for v in self.dyn]
        self.launch(list(args), dyn)
