"""MSL (Metal Shading Language) code generation: the CUDA printer's statements and expressions
with Metal's kernel entry, address spaces, types, barriers, SIMD-group functions and atomics.

Input: a PrimFunc after the Metal pipeline (`pipeline.lower`): one `KernelLaunch` whose body is
a `For(kind="thread")`, no tile ops, threadgroup buffers flattened and placed
(`attrs["smem_offsets"]`, `attrs["smem_bytes"]`). Output: one self-contained MSL source

    #include <metal_stdlib>
    using namespace metal;
    <the prelude sections the kernel uses (prelude.py)>
    kernel void <name>_kernel(device T* A [[buffer(0)]], ..., constant int& n [[buffer(k)]],
        constant long& <dynamic dim> [[buffer(k + 1)]], ...,
        uint3 tl_bid [[threadgroup_position_in_grid]], uint3 tl_tid [[thread_position_in_threadgroup]],
        uint tl_simd [[simdgroup_index_in_threadgroup]], uint tl_lane [[thread_index_in_simdgroup]])

Buffers are `device` pointers and scalars `constant` references, one `[[buffer(i)]]` each in
`func.params` order, then one `long` per `func.dynamic_vars()` (narrowed in the body when
declared int32: the launcher checked its limit); threadgroup memory is one
`threadgroup float4` array of the planned size (16-byte aligned) with every buffer a
`threadgroup` pointer at its planned offset — buffers the planner placed on the same bytes share
them; registers are `thread` arrays; `simdgroup_matrix<T, 8, 8>` values for the
gemm (`gemm.py`); `threadgroup_barrier(mem_flags::mem_threadgroup)` and
`simdgroup_barrier(mem_flags::mem_threadgroup)`; reductions as `tl::AllReduce` (simd_shuffle_xor,
threadgroup scratch across SIMD-groups); atomics as `atomic_fetch_<op>_explicit` on the
element cast to `device atomic_float*` / `atomic_int*` / `atomic_uint*`, relaxed.
A launch uses a 1-D threadgroup of `threads` threads and the kernel's grid of threadgroups.

The printer is a dialect of the C-family printer (`backend/cfamily`), derived from the CUDA
dialect (`backend/cuda/codegen.py: CudaDialect`) whose thread model it shares: statements,
operator precedence, index arithmetic and loops are the shared printer's; this class sets the
dialect's tables and hooks (types, literals, conversions, entry signature, threadgroup memory,
thread / threadgroup indices, barrier, call handlers) to Metal's spelling."""

from __future__ import annotations

from typing import Any

from ...errors import UnsupportedError
from ...ir.buffer import Buffer
from ...ir.dtype import DataType
from ...ir.expr import Call, FloatImm, PrimExpr
from ...ir.function import PrimFunc
from ...ir.stmt import Allocate, KernelLaunch
from ...transform.context import CompileContext
from ..cfamily import strip, wrap
from ..cuda.codegen import CUDA_MATH, TL_MATH, CudaDialect, CudaSource
from ..cuda.ops import BLOCK_BARRIER, all_reduce_fields
from .check_features import MetalUnsupportedError
from .gemm import SG_BARRIER, SG_FILL, SG_LOAD, SG_MMA, SG_STORE, SIMDGROUP_MATRIX
from .prelude import prelude

MSL_TYPES = {
    "bool": "bool",
    "int8": "char",
    "int16": "short",
    "int32": "int",
    "int64": "long",
    "uint8": "uchar",
    "uint16": "ushort",
    "uint32": "uint",
    "uint64": "ulong",
    "float16": "half",
    "bfloat16": "bfloat",
    "float32": "float",
}
# the metal:: name of a CUDA math function (computed in float for half / bfloat)
METAL_MATH = {
    "exp10": "exp10", "tan": "tan", "sinh": "sinh", "cosh": "cosh", "asin": "asin", "acos": "acos",
    "atan": "atan", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "nearbyint": "rint", "fmod": "fmod",
    "atan2": "atan2", "copysign": "copysign", "nextafter": "nextafter", "fabs": "fabs",
}  # fmt: skip
NO_METAL_FUNCTION = ("erf", "log1p", "expm1", "hypot")
_ATOMIC_OPS = ("add", "sub", "max", "min", "and", "or", "xor")
_ATOMIC_TYPES = {"float32": "atomic_float", "int32": "atomic_int", "uint32": "atomic_uint"}
ENTRY_ATTRS = (
    "uint3 tl_bid [[threadgroup_position_in_grid]]",
    "uint3 tl_tid [[thread_position_in_threadgroup]]",
    "uint tl_simd [[simdgroup_index_in_threadgroup]]",
    "uint tl_lane [[thread_index_in_simdgroup]]",
)
SHARED_SCOPES = ("shared", "shared.dyn")
MAX_BUFFERS = 31  # [[buffer(0)]] .. [[buffer(30)]]: the argument table of a Metal compute function


def msl_type(dt: DataType) -> str:
    t = MSL_TYPES.get(str(dt.element_of()))
    if t is None or dt.lanes > 1:
        raise MetalUnsupportedError(f"dtype {dt}")
    return t


def generate(func: PrimFunc, ctx: CompileContext | None = None, fast_math: bool = False) -> CudaSource:
    """The MSL source of lowered `func` (a `CudaSource`: text, entry, threads, threadgroup bytes,
    the user span of every line); `fast_math`: the prelude's float math is `metal::fast::`."""
    gen = MetalDialect(func)
    gen.fast_math = fast_math
    return gen.run()


class MetalDialect(CudaDialect):
    TARGET = "Metal"
    INT64_LITERAL = ("((long){})", "((ulong){})")  # MSL has no `long long`: 64-bit literals are cast
    THREAD_INDEX = "(int)tl_tid.x"
    BARRIER = "threadgroup_barrier(mem_flags::mem_threadgroup)"
    RESERVED = CudaDialect.RESERVED | frozenset(
        """kernel device threadgroup constant thread uchar ushort uint ulong half bfloat metal simd_sum
        simdgroup_matrix atomic_int atomic_uint atomic_float tl_bid tl_tid tl_simd tl_lane tl_smem4 smem""".split()
    )
    CALLS = {
        **CudaDialect.CALLS,
        SG_LOAD: "call_simdgroup_load",
        SG_STORE: "call_simdgroup_store",
        SG_MMA: "call_simdgroup_mma",
        SG_FILL: "call_simdgroup_fill",
        SG_BARRIER: "call_simdgroup_barrier",
        "tl.print": "call_print",
        "tl.assert_fail": "call_assert_fail",
        "tl.call_extern": "call_not_on_metal",
        "tl.call_pure_extern": "call_not_on_metal",
        "tl.cp_async_commit": "call_not_on_metal",
        "tl.cp_async_wait": "call_not_on_metal",
        "tl.block_rank_in_cluster": "call_not_on_metal",
        "tl.store_nibble_pair": "call_not_on_metal",
    }
    CALL_PREFIXES = (("tl.philox_", "call_not_on_metal"), ("tl.atomic_", "call_atomic"))

    def __init__(self, func: PrimFunc) -> None:
        super().__init__(func)
        self.body_text = ""  # the kernel body, for the prelude's sections
        self.slot = 0  # the next [[buffer(i)]]
        self.fast_math = False

    def use(self, fn: str) -> None:
        """No headers: the prelude sections are chosen from the kernel text (prelude.py)."""

    # -- types and literals -------------------------------------------------------------
    def value_type(self, dt: DataType) -> str:
        return msl_type(dt)

    def short_literal(self, dt: DataType, v: int) -> str:
        return f"(({msl_type(dt)}){v})"

    def e_FloatImm(self, e: FloatImm) -> str:
        if e.dtype.base in ("float16", "bfloat16"):
            return f"{msl_type(e.dtype)}({strip(super().e_FloatImm(FloatImm(e.value, DataType('float32'))))})"
        return super().e_FloatImm(e)

    def convert(self, value: PrimExpr, dst: DataType, x: str) -> str:
        if dst.is_bool:
            return f"({wrap(x)} != 0)"
        return f"static_cast<{msl_type(dst)}>({strip(x)})"

    # -- translation unit -------------------------------------------------------------------
    def run(self) -> CudaSource:
        src = super().run()
        head, rest = src.source.split("\n", 2)[:2], src.source.split("\n", 2)[2]
        launch = (
            head[1].replace("), block (", "), threadgroup (").replace("dynamic shared memory", "threadgroup memory")
        )
        src.source = "\n".join([head[0], launch, rest])
        return src

    def include_lines(self) -> list[str]:
        return prelude(self.body_text, self.fast_math).rstrip("\n").split("\n")

    def param_decl(self, p: Any) -> str:
        slot, self.slot = self.slot, self.slot + 1
        if isinstance(p, Buffer):
            return f"device {msl_type(p.dtype)}* {self.name(p)} [[buffer({slot})]]"
        return f"constant {msl_type(p.dtype)}& {self.name(p)} [[buffer({slot})]]"

    def entry_head(self, entry: str, params: list[str], k: KernelLaunch) -> None:
        """`kernel void`: buffers and scalars (param_decl), then the dynamic dimensions — passed as
        64-bit values like CUDA's (`int64_t name` in `params`) — as `constant long&`, then the
        position attributes."""
        out = []
        for p in params:
            if "[[buffer(" not in p:
                if not p.startswith("int64_t "):
                    raise MetalUnsupportedError(f"kernel parameter `{p}`", k.span)
                p = f"constant long& {p[len('int64_t ') :]} [[buffer({self.slot})]]"
                self.slot += 1
            out.append(p)
        if self.slot > MAX_BUFFERS:
            raise MetalUnsupportedError(f"{self.slot} kernel arguments (tensors, scalars and dynamic "
                                   f"dimensions); a Metal kernel takes at most {MAX_BUFFERS} buffers", k.span,
                                   "pass fewer tensors, or pack scalars into one tensor")  # fmt: skip
        self.emit(f"kernel void {entry}(")
        self.emit("    " + ",\n    ".join(out + list(ENTRY_ATTRS)) + ") {")

    def block_index(self, axis: str) -> str:
        return f"(int)tl_bid.{axis}"

    def kernel(self, k: KernelLaunch) -> None:
        if k.attrs.get("rasterize") is not None:  # T.use_swizzle only reorders blocks: not used here
            from dataclasses import replace

            from ...ir.node import FrozenDict

            k = replace(k, attrs=FrozenDict({a: v for a, v in k.attrs.items() if a != "rasterize"}))
        start = len(self.lines)
        super().kernel(k)
        self.body_text = "\n".join(self.lines[start:])

    def shared_decl(self) -> str:
        """The threadgroup memory block: `float4` elements, so it is 16-byte aligned (the planner's
        offsets are multiples of 16); every buffer is a `threadgroup` pointer at its offset."""
        pad = "\n" + self.INDENT * self.depth
        return (f"threadgroup float4 tl_smem4[{-(-self.smem_bytes // 16)}];{pad}"
                "threadgroup uchar* smem = reinterpret_cast<threadgroup uchar*>(tl_smem4);")  # fmt: skip

    # -- statements ---------------------------------------------------------------------------
    GLOBAL_SPACE = "device "
    SHARED_SPACE = "threadgroup "
    SHARED_VIEW_SCOPES = SHARED_SCOPES  # no mbarriers on Metal (check_features rejects them)
    LOCAL_ALIGN = ""

    def allocation_type(self, b: Buffer) -> str:
        return msl_type(b.dtype)

    def unsupported_scope(self, b: Buffer, span: Any) -> UnsupportedError:
        return MetalUnsupportedError(f"buffers in scope {b.scope}", span)

    def s_Allocate(self, s: Allocate) -> None:
        if s.annotations.get(SIMDGROUP_MATRIX):
            self.scalar_bufs.add(s.buffer)
            self.emit(f"simdgroup_matrix<{msl_type(s.buffer.dtype)}, 8, 8> {self.name(s.buffer)};")
            return
        super().s_Allocate(s)

    # -- calls ----------------------------------------------------------------------------------
    def call_simdgroup_load(self, e: Call) -> str:
        return f"simdgroup_load({self.call_args(e)})"

    def call_simdgroup_store(self, e: Call) -> str:
        return f"simdgroup_store({self.call_args(e)})"

    def call_simdgroup_mma(self, e: Call) -> str:
        return f"simdgroup_multiply_accumulate({self.call_args(e)})"

    def call_simdgroup_fill(self, e: Call) -> str:
        mat, value = e.args
        return (
            f"{self.expr(mat)} = make_filled_simdgroup_matrix<{msl_type(mat.dtype)}, 8, 8>({strip(self.expr(value))})"
        )

    def call_simdgroup_barrier(self, e: Call) -> str:
        return "simdgroup_barrier(mem_flags::mem_threadgroup)"

    def call_all_reduce(self, e: Call) -> str:
        """`tl::AllReduce` of the prelude: shuffles, and across SIMD-groups a threadgroup scratch
        and this thread's index."""
        op_class, threads, scale, barrier = all_reduce_fields(e)
        if barrier != BLOCK_BARRIER:
            raise MetalUnsupportedError("a reduction inside a T.ws region", self.cur_span)
        values = [strip(self.expr(a)) for a in e.args[6:]]
        tail = f", {values[1]}, tl_tid.x" if len(values) > 1 else ""
        return f"tl::AllReduce<{op_class}, {threads}, {scale}>::run({values[0]}{tail})"

    def call_tl(self, e: Call) -> str:
        fn = e.args[0].value
        if fn.startswith("tl::shfl_lane<"):  # T.shfl_*: the prelude's, with this lane's index
            return f"{fn}({self.call_args(e, 1)}, tl_lane)"
        if fn.startswith("tl::cvt_pair<"):  # two float registers into a pair of half / bfloat
            inner = fn[len("tl::cvt_pair<") : -1]
            t = {"tl::half_t": "half", "tl::bfloat16_t": "bfloat"}.get(inner, inner)
            return f"tl::cvt_pair<{t}>({self.call_args(e, 1)})"
        raise MetalUnsupportedError(f"`{fn}` (a CUDA library call)", self.cur_span)

    def call_atomic(self, e: Call) -> str:
        """`atomic_fetch_<op>_explicit((device atomic_T*)&x, v, memory_order_relaxed)` (check_features
        allowed only 32-bit types, relaxed order, Metal's operations)."""
        kind = e.op[len("tl.atomic_") :]
        addr = e.args[0]
        if kind not in _ATOMIC_OPS or not (isinstance(addr, Call) and addr.op == "address_of"):
            raise MetalUnsupportedError(f"T.atomic_{kind}", self.cur_span)
        ld = addr.args[0]
        at = _ATOMIC_TYPES.get(str(ld.buffer.dtype))
        if at is None or ld.buffer.scope != "global":
            raise MetalUnsupportedError(f"T.atomic_{kind} on {ld.buffer.scope} {ld.buffer.dtype}",
                                   self.cur_span)  # fmt: skip
        ptr = f"reinterpret_cast<device {at}*>(&{self.ref(ld.buffer, ld.indices)})"
        return f"atomic_fetch_{kind}_explicit({ptr}, {strip(self.expr(e.args[1]))}, memory_order_relaxed)"

    def call_print(self, e: Call) -> str:
        raise MetalUnsupportedError("T.print (Metal has no printf)", self.cur_span,
                               "debug on target='c' or target='cuda'")  # fmt: skip

    def call_assert_fail(self, e: Call) -> str:
        raise MetalUnsupportedError("run-time assertions (Metal kernels cannot trap)", self.cur_span,
                               "check with tl.enable_bounds_check on target='c' or target='cuda'")  # fmt: skip

    def call_not_on_metal(self, e: Call) -> str:
        raise MetalUnsupportedError(f"`{e.op}`", self.cur_span, "compile for target='cuda'")

    def call_other(self, e: Call) -> str:
        op, dt, args = e.op, e.dtype, e.args
        if op in ("infinity", "inf"):
            return f"tl::infinity<{msl_type(dt)}>()"
        if op in ("isnan", "isinf", "isfinite"):
            return f"{op}(static_cast<float>({strip(self.expr(args[0]))}))"
        if op == "reinterpret":
            return f"as_type<{msl_type(dt)}>({strip(self.expr(args[0]))})"
        if op in NO_METAL_FUNCTION:
            raise MetalUnsupportedError(f"`{op}` (no Metal standard-library function)",
                                   self.cur_span, "write it with exp / log")  # fmt: skip
        if op in TL_MATH:
            return f"tl::{op}({self.call_args(e)})"
        if op in CUDA_MATH and dt.is_float:
            inner = (
                f"metal::{METAL_MATH[op]}({', '.join('static_cast<float>(' + strip(self.expr(a)) + ')' for a in args)})"
            )
            return inner if dt.base == "float32" else f"static_cast<{msl_type(dt)}>({inner})"
        return super().call_other(e)


__all__ = ["MetalDialect", "generate", "msl_type"]
