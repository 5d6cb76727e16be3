"""The C dialect's tables: storage and value types, math functions, reserved names.

Requires: nothing. Guarantees: one place that says how each dtype is stored and carried in
generated C (`storage_type`, `value_type`), which libm function computes each intrinsic,
and which block-level synchronisations are no-ops on the CPU.
"""

from __future__ import annotations

from ...errors import UnsupportedError
from ...ir.dtype import DataType
from ..cfamily.text import C_KEYWORDS

# fp16-like formats: suffix of the tl_cpu.h helpers
SMALL_FLOATS = {
    "float16": "f16",
    "bfloat16": "bf16",
    "float8_e4m3fn": "e4m3",
    "float8_e5m2": "e5m2",
    "float4_e2m1fn": "e2m1",  # packed two per byte (subbyte.py)
}

STORAGE = {
    "bool": "bool",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "float16": "uint16_t",
    "bfloat16": "uint16_t",
    "float8_e4m3fn": "uint8_t",
    "float8_e5m2": "uint8_t",
    "int4": "uint8_t",  # packed two per byte (subbyte.py)
    "uint4": "uint8_t",
    "float4_e2m1fn": "uint8_t",
    "float32": "float",
    "tfloat32": "float",
    "float64": "double",
    "handle": "void*",
}

# intrinsic -> (float function, double function); None: written inline below
MATH = {
    "exp": ("expf", "exp"),
    "exp2": ("exp2f", "exp2"),
    "log": ("logf", "log"),
    "log2": ("log2f", "log2"),
    "log10": ("log10f", "log10"),
    "log1p": ("log1pf", "log1p"),
    "expm1": ("expm1f", "expm1"),
    "sqrt": ("sqrtf", "sqrt"),
    "tanh": ("tanhf", "tanh"),
    "sin": ("sinf", "sin"),
    "cos": ("cosf", "cos"),
    "tan": ("tanf", "tan"),
    "sinh": ("sinhf", "sinh"),
    "cosh": ("coshf", "cosh"),
    "asin": ("asinf", "asin"),
    "acos": ("acosf", "acos"),
    "atan": ("atanf", "atan"),
    "asinh": ("asinhf", "asinh"),
    "acosh": ("acoshf", "acosh"),
    "atanh": ("atanhf", "atanh"),
    "erf": ("erff", "erf"),
    "floor": ("floorf", "floor"),
    "ceil": ("ceilf", "ceil"),
    "trunc": ("truncf", "trunc"),
    "round": ("nearbyintf", "nearbyint"),  # ties to even, like torch.round
    "nearbyint": ("nearbyintf", "nearbyint"),
    "pow": ("powf", "pow"),
    "fmod": ("fmodf", "fmod"),
    "atan2": ("atan2f", "atan2"),
    "hypot": ("hypotf", "hypot"),
    "copysign": ("copysignf", "copysign"),
    "nextafter": ("nextafterf", "nextafter"),
    "abs": ("fabsf", "fabs"),
    "fabs": ("fabsf", "fabs"),
}

# block-level synchronisation: a block runs on one CPU thread, so these are no-ops
NOOPS = {
    "sync_threads",
    "tl.sync_threads",
    "tvm_storage_sync",
    "__syncthreads",
    "tl.cp_async_commit",
    "tl.cp_async_wait",
    "tl.assume",  # a fact for the passes (language/extern.py), nothing to run
}

RESERVED = C_KEYWORDS | set(
    """_Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local bool true
    false NULL args main abs exp log sqrt floor ceil printf memcpy INFINITY NAN int8_t int16_t int32_t int64_t
    uint8_t uint16_t uint32_t uint64_t size_t""".split()
)

RESERVED |= {n for pair in MATH.values() for n in pair} | {
    "fminf",
    "fmaxf",
    "fmin",
    "fmax",
    "powf",
    "pow",
    "floorf",
    "isnan",
    "isinf",
    "isfinite",
    "expf",
    "sqrtf",
}


def storage_type(dt: DataType) -> str:
    """The C type a buffer of `dt` stores its elements as."""
    try:
        return STORAGE[dt.element_of()]
    except KeyError as err:
        raise UnsupportedError(f"dtype {dt} is not supported by the C backend") from err


def value_type(dt: DataType) -> str:
    """The C type an expression of `dt` is computed in."""
    if dt.bits == 4 and dt.is_integer:
        return "int32_t"
    return "float" if dt.base in SMALL_FLOATS else storage_type(dt)
