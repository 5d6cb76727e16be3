"""The CUDA dialect's expressions: literals, arithmetic (float8 and 4-bit types computed in
their carried type), casts through `tl::cvt`, intrinsic calls and `T.print`.

Requires: a `CudaDialect` (this is its expression half, a mixin over `CFamilyPrinter`).
Guarantees: every `tl::` function it prints is noted with `use`, so the header that defines
it is included; an intrinsic it cannot print is an `unsupported` error naming it.
"""

from __future__ import annotations

import math
from typing import Any

from ...errors import UnsupportedError
from ...ir.dtype import DataType
from ...ir.expr import BinaryOp, BufferLoad, Call, Cast, FloatImm, PrimExpr, Ramp, StringImm, const_int
from ..cfamily import BIN, c_string, strip, wrap
from ..cfamily.printer import CFamilyPrinter
from . import subbyte
from .cuda_types import CUDA_MATH, TL_MATH, ctype
from .ops import ALL_REDUCE_OP, BLOCK_BARRIER, all_reduce_fields
from .tensor_map import TENSOR_MAP_OP


class CudaExpressions(CFamilyPrinter):
    cluster: bool  # the kernel runs in thread-block clusters (CudaDialect.run)
    tensor_maps: dict  # TensorMapSpec JSON -> parameter name (CudaDialect.run)
    THREAD_INDEX = "threadIdx.x"
    BARRIER = "__syncthreads()"  # a barrier of every thread of the block

    def block_index(self, axis: str) -> str:
        """The block's index along grid axis `axis` ("x", "y", "z")."""
        return f"blockIdx.{axis}"

    def value_type(self, dt: DataType) -> str:
        return ctype(dt)

    def long_literal(self, text: str, v: int) -> str:
        return f"({text})" if v < 0 else text

    def short_literal(self, dt: DataType, v: int) -> str:
        return f"(({ctype(dt)}){v})"

    def e_FloatImm(self, e: FloatImm) -> str:
        v = e.value
        dt = e.dtype
        if dt.bits < 8:  # carried as float: the value rounded to float4_e2m1fn
            from ..c.floatfmt import round_to

            return self.e_FloatImm(FloatImm(round_to(v, dt.base), DataType("float32")))
        if math.isnan(v):
            f = "NAN"
        elif math.isinf(v):
            f = "INFINITY" if v > 0 else "(-INFINITY)"
        else:
            f = repr(float(v))
            if "e" not in f and "." not in f:
                f += ".0"
            if dt.base != "float64":
                f += "f"
            if v < 0:
                f = f"({f})"
        if dt.base in ("float32", "tfloat32"):
            return f
        if dt.base == "float64":
            return f if not math.isinf(v) and not math.isnan(v) else f"(double){f}"
        return f"tl::cvt<{ctype(dt)}>({strip(f)})"

    def binary_infix(self, e: BinaryOp) -> str | None:
        dt = e.dtype
        if e.op in ("floordiv", "floormod"):
            if dt.is_integer and (dt.is_uint or (self.is_nonneg(e.a) and self.is_nonneg(e.b))):
                return "/" if e.op == "floordiv" else "%"
            return None
        if dt.is_float and (e.op not in ("add", "sub", "mul", "div") or dt.is_float8):
            return None
        return BIN.get(e.op)

    def e_BinaryOp(self, e: BinaryOp) -> str:
        dt, op = e.dtype, e.op
        if dt.bits < 8 and op not in ("min", "max"):  # computed in the carried type, brought back to 4 bits
            wide = DataType("float32" if dt.is_float else "int32")
            inner = BinaryOp(op, Cast(e.a, wide), Cast(e.b, wide), wide)
            return subbyte.cast_to(self, dt, inner, self.expr(inner))
        if dt.is_float8:
            a, b = self.expr(e.a), self.expr(e.b)
            inner = BinaryOp(op, Cast(e.a, DataType("float32")), Cast(e.b, DataType("float32")), DataType("float32"))
            return f"tl::cvt<{ctype(dt)}>({strip(self.expr(inner))})"
        if op in ("min", "max"):
            return f"tl::{op}({strip(self.expr(e.a))}, {strip(self.expr(e.b))})"
        sym = self.binary_infix(e)
        if sym is not None:
            a, b = self.operands(e, sym)
            return f"({a} {sym} {b})"
        a, b = strip(self.expr(e.a)), strip(self.expr(e.b))
        if op in ("floordiv", "floormod"):
            if dt.is_float:
                if op == "floordiv":
                    return f"tl::floor({a} / {b})" if dt.bits != 16 else f"tl::floor(({a}) / ({b}))"
                return f"tl::floormod({a}, {b})"
            return f"tl::{op}<{ctype(dt)}>({a}, {b})"
        if op in BIN:
            return f"({a} {BIN[op]} {b})"
        raise UnsupportedError(f"unknown binary operator {op!r}", self.cur_span)

    def convert(self, value: PrimExpr, dst: DataType, x: str) -> str:
        src = value.dtype
        if dst.is_bool:
            return f"({wrap(x)} != 0)" if not src.is_float or src.bits >= 32 else f"((float){wrap(x)} != 0.0f)"
        if dst.bits < 8:
            return subbyte.cast_to(self, dst, value, x)
        if src.bits < 8 and src.is_float:
            return f"tl::cvt<{ctype(dst)}>({strip(x)})" if dst.base != "float32" else x
        if dst.is_integer and src.is_integer:
            return f"(({ctype(dst)}){wrap(x)})"
        return f"tl::cvt<{ctype(dst)}>({strip(x)})"

    def e_BufferLoad(self, e: BufferLoad) -> str:
        if subbyte.is_packed(e.buffer) and e.buffer not in self.scalar_bufs:
            return subbyte.load(self, e.buffer, e.indices)
        return self.ref(e.buffer, e.indices)

    def e_Ramp(self, e: Ramp) -> str:
        raise UnsupportedError("vector expressions are not generated by the CUDA backend", self.cur_span)

    CALLS = {
        "tl.call": "call_tl",
        ALL_REDUCE_OP: "call_all_reduce",
        "tl.call_extern": "call_extern",
        "tl.call_pure_extern": "call_extern",
        TENSOR_MAP_OP: "call_tensor_map",
        "tl.store_nibble_pair": "call_store_nibble_pair",
        "address_of": "call_address_of",
        "tl.sync_threads": "call_barrier",
        "tl.block_rank_in_cluster": "call_block_rank_in_cluster",
        "tl.cp_async_commit": "call_cp_async_commit",
        "tl.cp_async_wait": "call_cp_async_wait",
        "tl.print": "printf",
        "tl.assert_fail": "call_assert_fail",
        "if_then_else": "call_if_then_else",
    }
    CALL_PREFIXES = (("tl.philox_", "call_library"), ("tl.atomic_", "call_atomic"))  # tl/philox.h (T.rng_*)

    def call_tl(self, e: Call) -> str:
        """`tl.call`: (name, *args), a function of our headers."""
        fn = e.args[0].value
        self.use(fn)
        return f"{fn}({self.call_args(e, 1)})"

    def call_all_reduce(self, e: Call) -> str:
        self.use("tl::AllReduce")
        op_class, threads, scale, barrier = all_reduce_fields(e)
        extra = "" if barrier == BLOCK_BARRIER else "".join(f", {x}" for x in barrier)
        return f"tl::AllReduce<{op_class}, {threads}, {scale}{extra}>::run({self.call_args(e, 6)})"

    def call_tensor_map(self, e: Call) -> str:
        return f"(&{self.tensor_maps[e.args[0].value]})"

    def call_store_nibble_pair(self, e: Call) -> str:
        return subbyte.store_pair(self, e)

    def call_address_of(self, e: Call) -> str:
        if subbyte.is_packed(e.args[0].buffer):
            return subbyte.address_of(self, e.args[0])
        return super().call_address_of(e)

    def call_barrier(self, e: Call) -> str:
        return self.BARRIER

    def call_block_rank_in_cluster(self, e: Call) -> str:
        from .explicit_hopper import cluster_rank_expr

        self.use("tl::cluster_")
        return cluster_rank_expr(self.cluster)

    def call_cp_async_commit(self, e: Call) -> str:
        self.use("tl::cp_async")
        return "tl::cp_async_commit()"

    def call_cp_async_wait(self, e: Call) -> str:
        self.use("tl::cp_async")
        n = const_int(e.args[0]) if e.args else 0
        return f"tl::cp_async_wait<{n}>()"

    def call_atomic(self, e: Call) -> str:
        self.use("tl::atomic_")
        return f"tl::atomic_{e.op[len('tl.atomic_') :]}({self.call_args(e)})"

    def call_assert_fail(self, e: Call) -> str:
        self.use("tl::device_assert_fail")
        return f'tl::device_assert_fail({self.expr(e.args[0])}, "<kernel>", 0)'

    def call_other(self, e: Call) -> str:
        op, dt, args = e.op, e.dtype, e.args
        xs = [self.expr(a) for a in args]
        if op in ("infinity", "inf"):
            return f"tl::infinity<{ctype(dt)}>()"
        if op in ("isnan", "isinf", "isfinite"):
            return f"({op}((double){wrap(xs[0])}))"
        if op == "bitnot":
            return f"(~{wrap(xs[0])})"
        if op == "reinterpret":
            return f"tl::bit_cast<{ctype(dt)}>({strip(xs[0])})"
        if op == "fast_rcp":
            return f"tl::fast_rcp({strip(xs[0])})"
        if op in TL_MATH:
            if op == "abs" and not dt.is_float:
                return f"tl::abs({strip(xs[0])})"
            return f"tl::{op}({', '.join(strip(x) for x in xs)})"
        fns = CUDA_MATH.get(op)
        if fns is not None and dt.is_float:
            if dt.base == "float64":
                return f"{fns[1]}({', '.join(strip(x) for x in xs)})"
            inner = f"{fns[0]}({', '.join('(float)' + wrap(self.f32(a)) for a in args)})"
            return inner if dt.base in ("float32", "tfloat32") else f"tl::cvt<{ctype(dt)}>({inner})"
        raise self.unsupported_call(e)

    def f32(self, a: Any) -> str:
        if a.dtype.base in ("float32", "tfloat32"):
            return self.expr(a)
        return f"tl::cvt<float>({strip(self.expr(a))})"

    def printf_float(self, dt: DataType, x: str) -> tuple[str, str]:
        # 9 significant digits for every float format (the C dialect prints float64 with 17)
        return "%.9g", f"(double)tl::cvt<float>({x})" if dt.bits < 32 else f"(double)({x})"

    def printf(self, e: Call) -> str:
        """T.print: one printf naming the block and thread, then the indices and the value."""
        args = e.args
        prefix = args[0].value if isinstance(args[0], StringImm) else ""
        rest = list(args[1:])
        value = rest.pop() if rest and (len(rest) > 0) else None
        idx = rest
        fmt = "%s block=(%d,%d,%d) thread=%d"
        vals = [c_string(prefix)] + [f"(int){self.block_index(ax)}" for ax in "xyz"] + [f"(int){self.THREAD_INDEX}"]
        if idx:
            fmt += " [" + ", ".join("%lld" for _ in idx) + "]"
            vals += [f"(long long)({strip(self.expr(i))})" for i in idx]
        if value is not None:
            spec, arg = self.printf_conversion(value.dtype, strip(self.expr(value)))
            fmt += " = " + spec
            vals.append(arg)
        return f'printf("{fmt}\\n", {", ".join(vals)})'
