"""The C dialect's expressions: literals, arithmetic on carried small floats, casts,
intrinsic calls and the stored form of values (see `codegen.py` for the mapping).

Requires: a `CDialect` (this is its expression half, a mixin over `CFamilyPrinter`).
Guarantees: float16 / bfloat16 / float8 results are rounded to their dtype (`tl_round_*`),
integer results narrower than int are brought back to their width, floor division has floor
semantics, and stores of small floats convert exactly (or copy the bits when they can).
"""

from __future__ import annotations

from ...errors import UnsupportedError
from ...ir.buffer import Buffer
from ...ir.dtype import DataType
from ...ir.expr import BinaryOp, BufferLoad, Call, Cast, FloatImm, PrimExpr, Ramp, Select
from ..cfamily import BIN, strip, wrap
from ..cfamily.printer import CFamilyPrinter
from . import subbyte
from .c_types import MATH, NOOPS, SMALL_FLOATS, storage_type, value_type
from .floatfmt import c_float_literal, encode


class CExpressions(CFamilyPrinter):
    lane: str | None  # the lane variable of the enclosing vectorized store (CDialect.vector_loop)

    def value_type(self, dt: DataType) -> str:
        return value_type(dt)

    def e_FloatImm(self, e: FloatImm) -> str:
        return c_float_literal(e.value, e.dtype.base)

    def small(self, dt: DataType, text: str) -> str:
        """Round a float-carried result to a small float dtype."""
        h = SMALL_FLOATS.get(dt.base)
        return f"tl_round_{h}({strip(text)})" if h else text

    def binary_infix(self, e: BinaryOp) -> str | None:
        dt = e.dtype
        if dt.is_float:
            return BIN[e.op] if e.op in ("add", "sub", "mul", "div") and dt.base not in SMALL_FLOATS else None
        if dt.is_integer and dt.bits < 32:
            return None
        if e.op in ("floordiv", "floormod"):
            if dt.is_uint or dt.is_bool or (self.is_nonneg(e.a) and self.is_nonneg(e.b)):
                return "/" if e.op == "floordiv" else "%"
            return None
        return BIN.get(e.op)

    def e_BinaryOp(self, e: BinaryOp) -> str:
        dt, op = e.dtype, e.op
        if op in BIN and (
            self.binary_infix(e) is not None or dt.base in SMALL_FLOATS or (dt.is_integer and dt.bits < 32)
        ):
            a, b = self.operands(e, BIN[op])
        else:
            a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_float:
            dbl = dt.bits == 64
            if op in ("add", "sub", "mul", "div"):
                return self.small(dt, f"({a} {BIN[op]} {b})")
            if op in ("min", "max"):
                return f"{'f' + op if dbl else 'f' + op + 'f'}({strip(a)}, {strip(b)})"
            if op == "floordiv":
                return self.small(dt, f"{'floor' if dbl else 'floorf'}({a} / {b})")
            if op == "floormod":
                return self.small(dt, f"tl_floormod_{'f64' if dbl else 'f32'}({strip(a)}, {strip(b)})")
            raise UnsupportedError(f"`{op}` is not defined on {dt}", e.span if e.span.line else self.cur_span)
        if op in ("min", "max"):
            return self.narrow(dt, f"tl_{op}_{self.int_suffix(dt)}({strip(a)}, {strip(b)})")
        if op in ("floordiv", "floormod"):
            if dt.is_uint or dt.is_bool or (self.is_nonneg(e.a) and self.is_nonneg(e.b)):
                a, b = self.operands(e, "/")
                return self.narrow(dt, f"({a} {'/' if op == 'floordiv' else '%'} {b})")
            return self.narrow(dt, f"tl_{op}_{'i64' if dt.bits == 64 else 'i32'}({strip(a)}, {strip(b)})")
        if op in BIN:
            return self.narrow(dt, f"({a} {BIN[op]} {b})")
        raise UnsupportedError(f"unknown binary operator {op!r}", self.cur_span)

    def int_suffix(self, dt: DataType) -> str:
        if dt.bits == 64:
            return "u64" if dt.is_uint else "i64"
        return "u32" if dt.is_uint and dt.bits == 32 else "i32"

    def narrow(self, dt: DataType, text: str) -> str:
        """C promotes integers narrower than int; bring the result back to dt."""
        if dt.is_integer and dt.bits == 4:
            return f"tl_wrap_{'i' if dt.is_int else 'u'}4({strip(text)})"
        if dt.is_integer and dt.bits < 32:
            return f"(({storage_type(dt)}){text})"
        return text

    def convert(self, value: PrimExpr, dst: DataType, x: str) -> str:
        src = value.dtype
        if dst.is_bool:
            return f"({x} != 0)"
        h = SMALL_FLOATS.get(dst.base)
        if h:
            if src.is_float and src.bits == 64:
                return f"tl_round_{h}_f64({strip(x)})"
            if src.is_integer and src.bits >= 32 or src.is_float and src.base not in SMALL_FLOATS and src.bits > 32:
                return f"tl_round_{h}_f64((double)({strip(x)}))"
            if src.is_integer or src.is_bool:
                return f"tl_round_{h}((float)({strip(x)}))"
            return f"tl_round_{h}({strip(x)})"
        if dst.bits == 4:
            return self.narrow(dst, x if src.is_integer or src.is_bool else f"(int64_t)({strip(x)})")
        if dst.is_float:
            if value_type(src) == value_type(dst):
                return x  # e.g. float16 -> float32: the value is already held as float
            return f"(({value_type(dst)}){x})"
        return f"(({storage_type(dst)}){x})"

    CALLS = {
        "address_of": "call_address_of",
        **{op: "call_noop" for op in NOOPS},
        "tl.call_extern": "call_extern",
        "tl.call_pure_extern": "call_extern",
        "tl.gemm_f32": "call_library",  # tl_gemm.h
        "tl.gemm_f64": "call_library",
        "if_then_else": "call_if_then_else",
    }
    CALL_PREFIXES = (
        ("tl.atomic_", "call_atomic"),
        ("tl.philox_", "call_library"),  # tl_philox.h (T.rng_*)
        ("tl.", "call_unsupported"),
    )

    def call_noop(self, e: Call) -> str:
        return "(void)0"

    def call_unsupported(self, e: Call) -> str:
        raise self.unsupported_call(e)

    def call_atomic(self, e: Call) -> str:
        vdt = e.args[1].dtype
        suffix = {"float32": "f32", "float64": "f64", **SMALL_FLOATS}.get(vdt.base)
        if suffix is None:
            suffix = ("u" if vdt.is_uint else "i") + str(vdt.bits)
        return f"tl_atomic_{e.op[len('tl.atomic_') :]}_{suffix}({self.call_args(e)})"

    def call_other(self, e: Call) -> str:
        op, dt, args = e.op, e.dtype, e.args
        xs = [self.expr(a) for a in args]
        if op in ("infinity", "inf"):
            return "INFINITY"
        if op in ("isnan", "isinf", "isfinite"):
            return f"({op}({strip(xs[0])}) != 0)"
        if op == "bitnot":
            return self.narrow(dt, f"(~{xs[0]})")
        if op == "reinterpret":
            return self.reinterpret(args[0], dt)
        if op == "abs" and not dt.is_float:
            if dt.is_uint:
                return xs[0]
            return self.narrow(dt, f"tl_abs_{'i64' if dt.bits == 64 else 'i32'}({strip(xs[0])})")
        fn = MATH.get(op)
        if fn is None and dt.is_float and op in ("rsqrt", "sigmoid", "exp10"):
            return self.small(dt, self.composite_math(op, dt.bits == 64, xs[0]))
        if fn is None:
            raise self.unsupported_call(e)
        text = f"{fn[1] if dt.bits == 64 and dt.is_float else fn[0]}({', '.join(strip(x) for x in xs)})"
        if op in ("abs", "fabs", "floor", "ceil", "trunc", "round", "nearbyint", "copysign"):
            return text  # exact on values of the format
        return self.small(dt, text)

    @staticmethod
    def composite_math(op: str, dbl: bool, x: str) -> str:
        """rsqrt, sigmoid and exp10, which libm does not have, from the functions it has."""
        one = "1.0" if dbl else "1.0f"
        if op == "rsqrt":
            return f"({one} / {'sqrt' if dbl else 'sqrtf'}({strip(x)}))"
        if op == "sigmoid":
            return f"({one} / ({one} + {'exp' if dbl else 'expf'}(-{x})))"
        return f"{'pow(10.0' if dbl else 'powf(10.0f'}, {strip(x)})"

    def reinterpret(self, value: PrimExpr, dt: DataType) -> str:
        src = value.dtype
        x = strip(self.expr(value))
        if src.bits != dt.bits:
            raise UnsupportedError(f"cannot reinterpret {src} as {dt}: different widths", self.cur_span)
        h = SMALL_FLOATS.get(src.base)
        if h:
            bits = f"tl_f32_to_{h}({x})"
        elif src.base == "float32":
            bits = f"tl_f32_bits({x})"
        elif src.base == "float64":
            bits = f"tl_f64_bits({x})"
        else:
            bits = f"(uint{src.bits}_t)({x})"
        h = SMALL_FLOATS.get(dt.base)
        if h:
            return f"tl_{h}_to_f32((uint{dt.bits}_t){bits})"
        if dt.base == "float32":
            return f"tl_bits_f32({bits})"
        if dt.base == "float64":
            return f"tl_bits_f64({bits})"
        return f"(({storage_type(dt)}){bits})"

    def e_BufferLoad(self, e: BufferLoad) -> str:
        buf = e.buffer
        if subbyte.is_packed(buf) and buf not in self.scalar_bufs:
            return subbyte.load(self, buf, e.indices)
        ref = self.ref(buf, e.indices)
        h = SMALL_FLOATS.get(buf.dtype.base)
        if h and buf not in self.scalar_bufs:
            return f"tl_{h}_to_f32({ref})"
        return ref

    def e_Ramp(self, e: Ramp) -> str:
        if self.lane is None:
            raise UnsupportedError("vector expression outside a vectorized store", self.cur_span)
        return f"({self.expr(e.base)} + {self.expr(e.stride)} * {self.lane})"

    def store_value(self, buf: Buffer, value: PrimExpr) -> str:
        """A C expression of `buf`'s storage type holding `value`."""
        dt = buf.dtype
        if value.dtype.element_of() is not dt.element_of():
            from ...ir.expr import cast

            value = cast(value, dt)
        h = SMALL_FLOATS.get(dt.base)
        if buf in self.scalar_bufs or not h:
            return strip(self.expr(value))
        raw = self.raw(value, dt)
        if raw is not None:
            return raw
        return f"tl_f32_to_{h}({strip(self.expr(value))})"

    def raw(self, value: PrimExpr, dt: DataType) -> str | None:
        """The storage bits of a small-float `value` without converting, if possible."""
        if (
            isinstance(value, BufferLoad)
            and value.buffer.dtype is dt
            and value.buffer not in self.scalar_bufs
            and not subbyte.is_packed(value.buffer)
        ):
            return self.ref(value.buffer, value.indices)
        if isinstance(value, FloatImm):
            return hex(encode(value.value, dt.base))
        if isinstance(value, Cast) and value.dtype.element_of() is dt.element_of():
            src = value.value.dtype
            h = SMALL_FLOATS[dt.base]
            if src.base == "float64":
                return f"tl_f64_to_{h}({strip(self.expr(value.value))})"
            if src.base in ("float32", "tfloat32") or src.base in SMALL_FLOATS:
                return f"tl_f32_to_{h}({strip(self.expr(value.value))})"
        if isinstance(value, Select):
            t, f = self.raw(value.true_value, dt), self.raw(value.false_value, dt)
            if t is not None and f is not None:
                return f"({strip(self.expr(value.cond))} ? {t} : {f})"
        return None

    @staticmethod
    def add(a: str, b: str) -> str:
        if a == "0":
            return b
        if b == "0":
            return a
        return f"{a} + {b}"

    @staticmethod
    def mul(a: str, b: str) -> str:
        if a == "0" or b == "0":
            return "0"
        if b == "1":
            return a
        if a == "1":
            return b
        return f"{wrap(a)} * {wrap(b)}"
