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
`threadgroup float4` array of the planned size (16-byte aligned) with every buffer at its
planned offset; registers are `thread` arrays; `simdgroup_matrix<T, 8, 8>` values for the
gemm (`gemm.py`); `threadgroup_barrier(mem_flags::mem_threadgroup)` and
`simdgroup_barrier(mem_flags::mem_threadgroup)`; reductions as `tl::AllReduce` (simd_shuffle_xor,
threadgroup scratch across SIMD-groups); atomics as `atomic_fetch_<op>_explicit` on the
element cast to `device atomic_float*` / `atomic_int*` / `atomic_uint*`, relaxed.
A launch uses a 1-D threadgroup of `threads` threads and the kernel's grid of threadgroups.

The printer is a dialect of the CUDA printer (`backend/cuda/codegen.py: _Gen`): statements,
operator precedence, index arithmetic and loops are shared; this class overrides only what
Metal spells differently."""

from __future__ import annotations

import os

from ...errors import UnsupportedError
from ...ir.buffer import Buffer
from ...ir.dtype import DataType
from ...ir.expr import BufferLoad, Call, Cast, FloatImm, IntImm, StringImm, const_int
from ...ir.function import PrimFunc
from ...ir.span import NO_SPAN
from ...ir.stmt import Allocate, For, KernelLaunch, LetStmt
from ...ir.visitor import free_vars_of
from ...transform.context import CompileContext
from ..cfamily import strip, wrap
from ..cuda.codegen import CUDA_MATH, TL_MATH, CudaSource, _Gen, _top, kernel_name
from ..cuda.ops import ALL_REDUCE_OP, BLOCK_BARRIER, all_reduce_fields
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
_ATOMIC_OPS = {"add": "add", "sub": "sub", "max": "max", "min": "min", "and": "and", "or": "or", "xor": "xor"}
ENTRY_ATTRS = ("tl_bid", "tl_tid", "tl_simd", "tl_lane")


def msl_type(dt: DataType) -> str:
    t = MSL_TYPES.get(str(dt.element_of()))
    if t is None or dt.lanes > 1:
        raise UnsupportedError(f"unsupported on Metal: dtype {dt}")
    return t


def generate(func: PrimFunc, ctx: CompileContext | None = None) -> CudaSource:
    """The MSL source of lowered `func` (a `CudaSource`: text, entry, threads, threadgroup bytes,
    the user span of every line)."""
    return MetalGen(func).run()


class MetalGen(_Gen):
    def __init__(self, func: PrimFunc) -> None:
        super().__init__(func)
        self.used.update(ENTRY_ATTRS)
        self.used.update({"kernel", "device", "threadgroup", "constant", "thread", "uint", "uchar", "ushort",
                          "ulong", "half", "bfloat", "metal", "simd_sum", "simdgroup_matrix", "atomic_int"})  # fmt: skip
        self.called: set = set()  # tl:: names emitted (which prelude sections the kernel needs)
        self.sg_mats: set = set()

    def use(self, fn: str) -> None:
        self.called.add(fn)

    # -- translation unit ----------------------------------------------------------------
    def run(self) -> CudaSource:
        f = self.func
        kernels = [s for s in _top(f.body) if isinstance(s, KernelLaunch)]
        if len(kernels) != 1:
            raise UnsupportedError("the Metal backend compiles exactly one T.Kernel per function", f.span)
        k = kernels[0]
        self.threads = k.num_threads
        entry = kernel_name(f)
        self.used.add(entry)
        params, narrowed = [], []
        slot = 0
        for p in f.params:
            if isinstance(p, Buffer):
                params.append(f"device {msl_type(p.dtype)}* {self.name(p)} [[buffer({slot})]]")
            else:
                params.append(f"constant {msl_type(p.dtype)}& {self.name(p)} [[buffer({slot})]]")
            slot += 1
        for v in f.dynamic_vars():  # passed as 64-bit (like CUDA); an int32 one is narrowed after the check
            if msl_type(v.dtype) == "long":
                params.append(f"constant long& {self.name(v)} [[buffer({slot})]]")
            else:
                arg = self.fresh(f"{self.name(v)}_arg")
                params.append(f"constant long& {arg} [[buffer({slot})]]")
                narrowed.append(f"const {msl_type(v.dtype)} {self.name(v)} = ({msl_type(v.dtype)}){arg};")
            self.nonneg.add(v)
            slot += 1
        params += ["uint3 tl_bid [[threadgroup_position_in_grid]]", "uint3 tl_tid [[thread_position_in_threadgroup]]",
                   "uint tl_simd [[simdgroup_index_in_threadgroup]]", "uint tl_lane [[thread_index_in_simdgroup]]"]  # fmt: skip
        body_start = len(self.lines)
        self.depth = 1
        for line in narrowed:
            self.emit(line)
        self.kernel(k)
        self.depth = 0
        body, body_spans = self.lines[body_start:], self.spans[body_start:]
        self.lines, self.spans = [], []
        src_file = f.span.file if f.span is not NO_SPAN else "<unknown>"
        self.emit(f"// Generated by TileLang's Metal backend from `{f.name}` ({os.path.basename(src_file)}).")
        self.emit(f"// Launch: grid ({', '.join(self.grid_text(g) for g in k.grid)}), threadgroup ({self.threads}), "
                  f"threadgroup memory {self.smem_bytes} bytes.")  # fmt: skip
        for line in prelude("\n".join(body)).rstrip("\n").split("\n"):
            self.emit(line)
        self.emit("")
        self.emit(f"kernel void {entry}(")
        self.emit("    " + ",\n    ".join(params) + ") {")
        self.lines.extend(body)
        self.spans.extend(body_spans)
        self.emit("}")
        text = "\n".join(self.lines) + "\n"
        spans: list = []
        for line, sp in zip(self.lines, self.spans):
            spans.extend([sp] * (line.count("\n") + 1))
        return CudaSource(text, entry, self.threads, self.smem_bytes, spans)

    def kernel(self, k: KernelLaunch) -> None:
        self.at(k.span)
        if self.smem_bytes:
            # float4 elements: the block is 16-byte aligned, every planned offset is a multiple of 16
            self.emit(f"threadgroup float4 tl_smem4[{-(-self.smem_bytes // 16)}];")
            self.emit("threadgroup uchar* smem = reinterpret_cast<threadgroup uchar*>(tl_smem4);")
        for v, ax in zip(k.block_vars, ("x", "y", "z")):  # T.use_swizzle only reorders blocks: not used here
            self.emit(f"const {msl_type(v.dtype)} {self.name(v)} = ({msl_type(v.dtype)})tl_bid.{ax};")
            self.nonneg.add(v)
        self.body(k.body)

    # -- statements -------------------------------------------------------------------------
    def s_LetStmt(self, s: LetStmt) -> None:
        self.emit(f"const {msl_type(s.var.dtype)} {self.name(s.var)} = {strip(self.expr(s.value))};")
        if s.var.dtype.is_integer and self.is_nonneg(s.value):
            self.nonneg.add(s.var)

    def s_Allocate(self, s: Allocate) -> None:
        b = s.buffer
        t = msl_type(b.dtype)
        name = self.name(b)
        if s.annotations.get(SIMDGROUP_MATRIX):
            self.vars_scalar.add(b)
            self.sg_mats.add(b)
            self.emit(f"simdgroup_matrix<{t}, 8, 8> {name};")
            return
        if b.scope == "local.var":
            self.vars_scalar.add(b)
            init = "" if s.init is None else f" = {strip(self.expr(s.init))}"
            self.emit(f"{t} {name}{init};")
            return
        if b.scope == "global" and s.annotations.get("view_of") is not None:
            from ...transform.view_alias import alias_roots

            base = alias_roots(self.func.body, self.func.params)[b]
            self.emit(f"device {t}* {name} = reinterpret_cast<device {t}*>({self.name(base)});  // view of {base.name}")
            return
        if b.scope in ("shared", "shared.dyn"):
            off = self.shared_offset(b)
            shape = self.logical.get(b.name)
            note = f"  // logical shape {list(shape)}" if shape else ""
            self.emit(f"threadgroup {t}* {name} = reinterpret_cast<threadgroup {t}*>(smem + {off});{note}")
            return
        if b.scope == "local":
            n = 1
            for d in b.shape:
                c = const_int(d)
                if c is None:
                    raise UnsupportedError(f"local buffer `{b.name}` needs a constant size", s.span)
                n *= c
            self.emit(f"{t} {name}[{n}];")
            return
        raise UnsupportedError(f"unsupported on Metal: buffers in scope {b.scope}", s.span)

    def s_For(self, s: For) -> None:
        if s.kind == "thread":
            self.emit(f"const {msl_type(s.var.dtype)} {self.name(s.var)} = ({msl_type(s.var.dtype)})tl_tid.x;")
            self.nonneg.add(s.var)
            self.body(s.body)
            return
        if const_int(s.extent) == 1 and (s.step is None or const_int(s.step) == 1):
            self.emit("{")
            self.depth += 1
            if any(x is s.var for x in free_vars_of(s.body)):
                self.emit(f"const {msl_type(s.var.dtype)} {self.name(s.var)} = {strip(self.expr(s.start))};")
            if self.is_nonneg(s.start):
                self.nonneg.add(s.var)
            self.body(s.body)
            self.depth -= 1
            self.emit("}")
            return
        super().s_For(s)  # other loops: as CUDA (`int64_t` is an MSL name too)

    # -- expressions ---------------------------------------------------------------------------
    def e_IntImm(self, e: IntImm) -> str:
        v, dt = e.value, e.dtype
        if dt.bits == 64 and not dt.is_bool:  # MSL has no `long long`: literals are cast
            return f"(({msl_type(dt)}){v})" if v > -(2**63) else "((long)(-9223372036854775807 - 1))"
        if dt.bits < 32 and not dt.is_bool:
            return f"(({msl_type(dt)}){v})"
        return super().e_IntImm(e)

    def e_FloatImm(self, e: FloatImm) -> str:
        if e.dtype.base in ("float16", "bfloat16"):
            return f"{msl_type(e.dtype)}({strip(self.e_FloatImm(FloatImm(e.value, DataType('float32'))))})"
        return super().e_FloatImm(e)

    def e_Cast(self, e: Cast) -> str:
        src, dst = e.value.dtype, e.dtype
        if src.element_of() is dst.element_of():
            return self.expr(e.value)
        x = self.expr(e.value)
        if dst.is_bool:
            return f"({wrap(x)} != 0)"
        return f"static_cast<{msl_type(dst)}>({strip(x)})"

    def ref(self, b: Buffer, indices: tuple) -> str:
        if b in self.vars_scalar:
            return self.name(b)
        return f"{self.name(b)}[{strip(self.offset(b, indices))}]"

    def offset(self, b: Buffer, indices: tuple) -> str:
        return super().offset(b, indices).replace("(int64_t)", "(long)")

    def e_Call(self, e: Call) -> str:
        op, args = e.op, e.args
        if op == "tl.sync_threads":
            return "threadgroup_barrier(mem_flags::mem_threadgroup)"
        if op == SG_BARRIER:
            return "simdgroup_barrier(mem_flags::mem_threadgroup)"
        if op == SG_LOAD:
            return f"simdgroup_load({self.expr(args[0])}, {strip(self.expr(args[1]))}, {strip(self.expr(args[2]))})"
        if op == SG_STORE:
            return f"simdgroup_store({self.expr(args[0])}, {strip(self.expr(args[1]))}, {strip(self.expr(args[2]))})"
        if op == SG_MMA:
            return "simdgroup_multiply_accumulate({})".format(", ".join(self.expr(a) for a in args))
        if op == SG_FILL:
            t = msl_type(args[0].dtype)
            return f"{self.expr(args[0])} = make_filled_simdgroup_matrix<{t}, 8, 8>({strip(self.expr(args[1]))})"
        if op == ALL_REDUCE_OP:
            op_class, threads, scale, barrier = all_reduce_fields(e)
            if barrier != BLOCK_BARRIER:
                raise UnsupportedError("unsupported on Metal: a reduction inside a T.ws region", self.cur_span)
            self.use("tl::AllReduce")
            values = [strip(self.expr(a)) for a in args[6:]]
            tail = f", {values[1]}, tl_tid.x" if len(values) > 1 else ""
            return f"tl::AllReduce<{op_class}, {threads}, {scale}>::run({values[0]}{tail})"
        if op == "tl.call":
            fn = args[0].value
            xs = [strip(self.expr(a)) for a in args[1:]]
            if fn.startswith("tl::shfl_lane<"):
                self.use(fn)
                return f"{fn}({', '.join(xs)}, tl_lane)"
            if fn.startswith("tl::cvt_pair<"):
                self.use(fn)
                inner = fn[len("tl::cvt_pair<") : -1]
                t = {"tl::half_t": "half", "tl::bfloat16_t": "bfloat"}.get(inner, inner)
                return f"tl::cvt_pair<{t}>({', '.join(xs)})"
            raise UnsupportedError(f"unsupported on Metal: `{fn}` (a CUDA library call)", self.cur_span)
        if op.startswith("tl.atomic_"):
            return self.atomic(op[len("tl.atomic_") :], args)
        if op in ("tl.print", "tl.assert_fail"):
            raise UnsupportedError(
                "unsupported on Metal: " + ("T.print (Metal has no printf)" if op == "tl.print" else
                                           "run-time assertions (tl.enable_bounds_check: Metal kernels cannot trap)"),
                self.cur_span, "debug on target='c' or target='cuda'")  # fmt: skip
        if op in ("tl.cp_async_commit", "tl.cp_async_wait", "tl.tensor_map", "tl.block_rank_in_cluster") or (
            op.startswith("tl.philox_") or op in ("tl.call_extern", "tl.call_pure_extern")
        ):
            raise UnsupportedError(f"unsupported on Metal: `{op}`", self.cur_span)
        dt = e.dtype
        if op in ("infinity", "inf"):
            return f"tl::infinity<{msl_type(dt)}>()"
        if op in ("isnan", "isinf", "isfinite"):
            return f"{op}(static_cast<float>({strip(self.expr(args[0]))}))"
        if op == "reinterpret":
            return f"as_type<{msl_type(dt)}>({strip(self.expr(args[0]))})"
        if op in ("erf", "log1p", "expm1", "hypot"):
            raise UnsupportedError(f"unsupported on Metal: `{op}` (no Metal standard-library function)",
                                   self.cur_span, "write it with exp / log")  # fmt: skip
        if op in TL_MATH:
            self.use(f"tl::{op}")
            return f"tl::{op}({', '.join(strip(self.expr(a)) for a in args)})"
        if op in CUDA_MATH and dt.is_float:
            inner = (
                f"metal::{METAL_MATH[op]}({', '.join('static_cast<float>(' + strip(self.expr(a)) + ')' for a in args)})"
            )
            return inner if dt.base == "float32" else f"static_cast<{msl_type(dt)}>({inner})"
        if op == "fast_rcp":
            self.use("tl::fast_rcp")
        return super().e_Call(e)

    def atomic(self, kind: str, args: tuple) -> str:
        """`atomic_fetch_<op>_explicit((device atomic_T*)&x, v, memory_order_relaxed)` (check_features
        allowed only 32-bit types, relaxed order, Metal's operations)."""
        base = _ATOMIC_OPS.get(kind)
        addr = args[0]
        if base is None or not (isinstance(addr, Call) and addr.op == "address_of"):
            raise UnsupportedError(f"unsupported on Metal: T.atomic_{kind}", self.cur_span)
        ld = addr.args[0]
        dt = ld.buffer.dtype
        at = {"float32": "atomic_float", "int32": "atomic_int", "uint32": "atomic_uint"}.get(str(dt))
        if at is None:
            raise UnsupportedError(f"unsupported on Metal: T.atomic_{kind} on {dt}", self.cur_span)
        space = "threadgroup" if ld.buffer.scope in ("shared", "shared.dyn") else "device"
        ptr = f"reinterpret_cast<{space} {at}*>(&{self.ref(ld.buffer, ld.indices)})"
        value = strip(self.expr(args[1]))
        return f"atomic_fetch_{base}_explicit({ptr}, {value}, memory_order_relaxed)"


_ = (BufferLoad, StringImm)
__all__ = ["MetalGen", "generate", "msl_type"]
