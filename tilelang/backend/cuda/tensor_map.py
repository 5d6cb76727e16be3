"""Host-side TMA tensor maps: what `cuTensorMapEncodeTiled` is called with.

A kernel that copies with TMA takes one `const __grid_constant__ CUtensorMap`
parameter per (global tensor, box, swizzle) it uses. The lowered IR names such a
map with `tensor_map_ref(spec)`: a `Call("tl.tensor_map", (StringImm(json),))`
whose JSON is a `TensorMapSpec` — which kernel parameter the tensor is, its
dtype and rank, the box (elements per dimension, innermost first) and the
shared-memory swizzle. The code generator turns each distinct spec into a
parameter (`collect_tensor_maps` fixes their order), the launcher encodes them
from the actual torch tensors (`encode_args` here, pure Python; the driver call
is in `runtime.py`).

Everything is innermost-dimension-first, as the driver API wants it:
`global_dim[0]` is the contiguous dimension, `global_strides[i]` is the byte
stride of dimension `i + 1`. Out-of-bounds box elements read as zeros
(`oobFill = NONE`) and are skipped on stores.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...ir.dtype import DataType
from ...ir.expr import Call, StringImm
from ...ir.visitor import collect

TENSOR_MAP_OP = "tl.tensor_map"

# CUtensorMapDataType (cuda.h); other 1-byte types (int8, fp8, bool) travel as raw bytes.
DATA_TYPE_ENUM = {
    "uint8": 0,
    "uint16": 1,
    "int16": 1,
    "uint32": 2,
    "int32": 3,
    "uint64": 4,
    "int64": 5,
    "float16": 6,
    "float32": 7,
    "float64": 8,
    "bfloat16": 9,
    "tfloat32": 11,
}
INTERLEAVE_NONE = 0
L2_PROMOTION_256B = 3  # CU_TENSOR_MAP_L2_PROMOTION_L2_256B: whole sectors for the L2 fill
OOB_FILL_ZEROS = 0  # CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: out-of-bounds elements are zero
MAX_RANK = 5
MAX_BOX = 256
GLOBAL_ALIGN = 16  # bytes: base address and every stride


@dataclass(frozen=True)
class TensorMapSpec:
    """The compile-time half of a tensor map (the tensor's address, sizes and strides come at launch)."""

    param: int  # index of the tensor in the kernel's parameters
    name: str  # the parameter's name (for messages and readable code)
    dtype: str
    box: tuple  # elements per dimension, innermost first, len == rank
    swizzle: int  # CUtensorMapSwizzle: 0 none, 1/2/3 = 32/64/128-byte

    @property
    def rank(self) -> int:
        return len(self.box)

    def to_json(self) -> str:
        return json.dumps(
            {
                "param": self.param,
                "name": self.name,
                "dtype": self.dtype,
                "box": list(self.box),
                "swizzle": self.swizzle,
            },
            sort_keys=True,
        )

    @staticmethod
    def from_json(text: str | dict) -> TensorMapSpec:
        d = json.loads(text) if isinstance(text, str) else text
        return TensorMapSpec(int(d["param"]), str(d["name"]), str(d["dtype"]), tuple(int(x) for x in d["box"]),
                             int(d["swizzle"]))  # fmt: skip


@dataclass(frozen=True)
class TensorMapArgs:
    """The arguments of `cuTensorMapEncodeTiled` after the output pointer."""

    data_type: int
    rank: int
    global_address: int
    global_dim: tuple
    global_strides: tuple  # bytes, rank - 1 entries
    box_dim: tuple
    element_strides: tuple
    interleave: int
    swizzle: int
    l2_promotion: int
    oob_fill: int


def data_type_enum(dtype: Any) -> int | None:
    """`CUtensorMapDataType` of a dtype, None when TMA cannot move it."""
    dt = DataType(dtype)
    if dt.lanes != 1:
        return None
    hit = DATA_TYPE_ENUM.get(str(dt))
    return 0 if hit is None and dt.bits == 8 else hit


def tensor_map_ref(spec: TensorMapSpec) -> Call:
    """The IR expression standing for `&<the map's kernel parameter>`."""
    return Call(TENSOR_MAP_OP, (StringImm(spec.to_json()),), DataType("handle"))


def collect_tensor_maps(node: Any) -> list:
    """Distinct specs referenced under `node`, in first-use order (= kernel parameter order)."""
    out: dict = {}
    for c in collect(node, lambda n: isinstance(n, Call) and n.op == TENSOR_MAP_OP):
        out.setdefault(c.args[0].value, None)
    return [TensorMapSpec.from_json(t) for t in out]


def encode_args(spec: TensorMapSpec, shape: tuple, strides: tuple, data_ptr: int) -> TensorMapArgs:
    """Arguments for a tensor with `shape` / `strides` (elements, outermost first, as torch gives them)
    at `data_ptr`. Raises ValueError with the reason when TMA cannot address it."""
    dt = DataType(spec.dtype)
    enum = data_type_enum(dt)
    if enum is None:
        raise ValueError(f"TMA cannot copy elements of dtype {dt}")
    elem = dt.bytes
    rank = len(shape)
    if rank != spec.rank or not 1 <= rank <= MAX_RANK:
        raise ValueError(f"tensor `{spec.name}` has rank {rank}, the kernel's tensor map expects {spec.rank}")
    if strides[-1] != 1 and shape[-1] != 1:
        raise ValueError(f"tensor `{spec.name}` is not contiguous along its last dimension")
    if data_ptr % GLOBAL_ALIGN:
        raise ValueError(
            f"tensor `{spec.name}` starts at an address that is not {GLOBAL_ALIGN}-byte aligned (0x{data_ptr:x})"
        )
    dims = tuple(int(d) for d in reversed(shape))
    byte_strides = tuple(int(s) * elem for s in reversed(strides))[1:]
    for i, s in enumerate(byte_strides):
        if s % GLOBAL_ALIGN:
            raise ValueError(
                f"tensor `{spec.name}`: the stride of dimension {rank - 2 - i} is {s} bytes, "
                f"not a multiple of {GLOBAL_ALIGN}"
            )
    if any(d == 0 for d in dims):
        raise ValueError(f"tensor `{spec.name}` is empty")
    if any(not 1 <= b <= MAX_BOX for b in spec.box) or spec.box[0] * elem % 16:
        raise ValueError(f"box {list(spec.box)} is not a valid TMA box for {dt}")
    return TensorMapArgs(
        data_type=enum,
        rank=rank,
        global_address=int(data_ptr),
        global_dim=dims,
        global_strides=byte_strides,
        box_dim=tuple(spec.box),
        element_strides=(1,) * rank,
        interleave=INTERLEAVE_NONE,
        swizzle=spec.swizzle,
        l2_promotion=L2_PROMOTION_256B,
        oob_fill=OOB_FILL_ZEROS,
    )


__all__ = [
    "TENSOR_MAP_OP",
    "TensorMapArgs",
    "TensorMapEncoder",
    "TensorMapSpec",
    "collect_tensor_maps",
    "data_type_enum",
    "encode_args",
    "tensor_map_ref",
]


class TensorMapEncoder:
    """Encodes one spec's tensor map for the tensors a kernel is launched with, through the
    driver (`lib`: libcuda via ctypes). Maps are cached by (address, shape, strides), so a
    launch with tensors seen before costs a dictionary lookup; `address(tensor)` is the host
    address of the 128-byte map, which `cuLaunchKernel` copies into the parameter."""

    CACHE_LIMIT = 256

    def __init__(self, lib: Any, spec: TensorMapSpec) -> None:
        self.lib = lib
        self.spec = spec
        self.param = spec.param
        self.cache: dict = {}

    def address(self, tensor: Any) -> int:
        key = (tensor.data_ptr(), tensor.shape, tensor.stride())
        hit = self.cache.get(key)
        if hit is None:
            hit = self._encode(key)
        return hit[1]

    def _encode(self, key: tuple) -> tuple:
        import ctypes

        ptr, shape, strides = key
        try:
            a = encode_args(self.spec, tuple(shape), tuple(strides), ptr)
        except ValueError as e:
            raise RuntimeError(
                f"cannot launch: {e}. This kernel reads `{self.spec.name}` with TMA; pass a contiguous tensor "
                "(e.g. `.contiguous()` / `.clone()`) whose address and row strides are multiples of 16 bytes"
            ) from None
        raw = ctypes.create_string_buffer(128 + 64)  # CUtensorMap: 128 bytes, 64-byte aligned
        addr = (ctypes.addressof(raw) + 63) // 64 * 64
        r = a.rank
        res = self.lib.cuTensorMapEncodeTiled(
            ctypes.c_void_p(addr),
            ctypes.c_int(a.data_type),
            ctypes.c_uint32(r),
            ctypes.c_void_p(a.global_address),
            (ctypes.c_uint64 * r)(*a.global_dim),
            (ctypes.c_uint64 * max(1, r - 1))(*(a.global_strides or (0,))),
            (ctypes.c_uint32 * r)(*a.box_dim),
            (ctypes.c_uint32 * r)(*a.element_strides),
            ctypes.c_int(a.interleave),
            ctypes.c_int(a.swizzle),
            ctypes.c_int(a.l2_promotion),
            ctypes.c_int(a.oob_fill),
        )
        if res != 0:
            raise RuntimeError(f"cuTensorMapEncodeTiled failed with CUDA error {res} for `{self.spec.name}` ({a})")
        if len(self.cache) >= self.CACHE_LIMIT:
            self.cache.clear()
        hit = (raw, addr)
        self.cache[key] = hit
        return hit
