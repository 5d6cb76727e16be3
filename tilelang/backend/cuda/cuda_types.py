"""The CUDA dialect's tables: C++ types of the dtypes, the headers of our device library
(`include/tl/*.h`) and the names they provide, the math functions, reserved names.

Requires: nothing. Guarantees: one place that says how each dtype is spelled in CUDA C++
(`ctype`, `buffer_ctype`) and which header a `tl::` function needs.
"""

from __future__ import annotations

from ...errors import UnsupportedError
from ...ir.dtype import DataType
from ..cfamily.text import C_KEYWORDS

CTYPES = {
    "bool": "bool",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int",
    "int64": "int64_t",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "float16": "tl::half_t",
    "bfloat16": "tl::bfloat16_t",
    "float8_e4m3fn": "tl::fp8_e4m3_t",
    "float8_e5m2": "tl::fp8_e5m2_t",
    "int4": "int",  # carried types; buffers hold packed bytes (buffer_ctype, subbyte.py)
    "uint4": "int",
    "float4_e2m1fn": "float",
    "float32": "float",
    "tfloat32": "float",
    "float64": "double",
    "handle": "void*",
}

# header of our library -> name prefixes whose use requires it
HEADERS = [
    ("gemm.h", ("tl::gemm_",)),
    ("gemm_sm90.h", ("tl::wgmma_gemm_",)),
    ("cp_async.h", ("tl::cp_async",)),
    ("copy.h", ("tl::copy_vec", "tl::ld", "tl::st")),
    ("reduce.h", ("tl::AllReduce", "tl::warp_reduce", "tl::shfl")),
    ("atomic.h", ("tl::atomic_",)),
    ("debug.h", ("tl::device_print", "tl::device_assert_fail")),
    ("rasterize.h", ("tl::rasterize",)),
    ("regs.h", ("tl::cvt_pair",)),
    ("tma.h", ("tl::tma_",)),
    ("mbarrier.h", ("tl::mbarrier", "tl::fence_barrier_init")),
    ("sync.h", ("tl::fence_proxy_async", "tl::named_barrier", "tl::cluster_")),
    ("wgmma.h", ("tl::wgmma_wait",)),
    ("setmaxnreg.h", ("tl::warpgroup_reg",)),
    ("philox.h", ("tl::philox",)),
    (
        "subbyte.h",
        ("tl::ld_i4", "tl::ld_u4", "tl::st_nib", "tl::wrap_", "tl::e2m1", "tl::round_e2m1", "tl::f32_to_e2m1"),
    ),
]

# intrinsics our common.h overloads for float / double / half / bfloat16
TL_MATH = {"exp2", "exp", "log", "log2", "log10", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "cos", "erf", "floor",
           "ceil", "trunc", "round", "pow", "abs"}  # fmt: skip
# the rest: CUDA math library (float / double versions), computed in float for 16-bit types
CUDA_MATH = {
    "exp10": ("exp10f", "exp10"), "log1p": ("log1pf", "log1p"), "expm1": ("expm1f", "expm1"), "tan": ("tanf", "tan"),
    "sinh": ("sinhf", "sinh"), "cosh": ("coshf", "cosh"), "asin": ("asinf", "asin"), "acos": ("acosf", "acos"),
    "atan": ("atanf", "atan"), "asinh": ("asinhf", "asinh"), "acosh": ("acoshf", "acosh"), "atanh": ("atanhf", "atanh"),
    "nearbyint": ("rintf", "rint"), "fmod": ("fmodf", "fmod"), "atan2": ("atan2f", "atan2"),
    "hypot": ("hypotf", "hypot"), "copysign": ("copysignf", "copysign"), "nextafter": ("nextafterf", "nextafter"),
    "fabs": ("fabsf", "fabs"),
}  # fmt: skip

RESERVED = C_KEYWORDS | set(
    """bool true false new delete this class template typename namespace using operator private public protected
    virtual friend alignas smem tl min max abs exp log sqrt printf threadIdx blockIdx blockDim gridDim dim3 half
    float2 float4 int2 int4 uint2 uint4 asm""".split()
)


def ctype(dt: DataType) -> str:
    try:
        t = CTYPES[dt.element_of()]
    except KeyError as err:
        raise UnsupportedError(f"dtype {dt} is not supported by the CUDA backend") from err
    if dt.lanes > 1:
        raise UnsupportedError(f"vector dtype {dt} in generated CUDA code")
    return t


def buffer_ctype(dt: DataType) -> str:
    """The element type of a buffer's storage: bytes for the packed 4-bit types."""
    return "uint8_t" if dt.bits < 8 else ctype(dt)
