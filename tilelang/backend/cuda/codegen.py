"""CUDA C++ code generation.

Input: a PrimFunc after the CUDA pipeline (`pipeline.lower`): one
`KernelLaunch` whose body is a `For(kind="thread")` over `threadIdx.x`, no tile
ops, shared buffers flattened and placed (`attrs["smem_offsets"]`,
`attrs["smem_bytes"]`). Output: one readable translation unit

    extern "C" __global__ void __launch_bounds__(THREADS) <name>_kernel(params..., dyn dims...)

with parameters in `func.params` order (a buffer is a `T* __restrict__`, a
scalar is passed by value) followed by one `int64_t` per `func.dynamic_vars()`
(narrowed in the body when declared int32: the launcher has checked its limit);
one `extern __shared__ __align__(1024) uint8_t smem[]` block with every
shared buffer at its planned offset; register arrays as 16-byte aligned
local arrays; `// file:line` comments from spans; only the headers of our
library (`include/tl/*.h`) that the kernel calls. `CudaSource.line_spans`
maps generated lines back to user spans (nvcc errors are reported with them).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

from ...errors import UnsupportedError
from ...ir.buffer import Buffer
from ...ir.dtype import DataType
from ...ir.expr import (
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Compare,
    FloatImm,
    IntImm,
    Or,
    Ramp,
    Select,
    StringImm,
    Var,
    const_int,
)
from ...ir.function import PrimFunc
from ...ir.span import NO_SPAN, Span
from ...ir.stmt import (
    Allocate,
    Break,
    BufferStore,
    Continue,
    Evaluate,
    For,
    IfThenElse,
    KernelLaunch,
    LetStmt,
    SeqStmt,
    Stmt,
    TileOp,
    While,
)
from ...ir.visitor import free_vars_of
from ...transform.context import CompileContext
from ..cfamily import CMP as _CMP
from ..cfamily import LogicalOpsMixin, c_string, strip, wrap
from . import subbyte
from .ops import ALL_REDUCE_OP, BLOCK_BARRIER, all_reduce_fields
from .tensor_map import TENSOR_MAP_OP, collect_tensor_maps

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

_PREC = {"*": 13, "/": 13, "%": 13, "+": 12, "-": 12, "<<": 11, ">>": 11, "<": 10, "<=": 10, ">": 10, ">=": 10,
         "==": 9, "!=": 9, "&": 8, "^": 7, "|": 6, "&&": 5, "||": 4}  # fmt: skip
_BIN = {"add": "+", "sub": "-", "mul": "*", "div": "/", "bitand": "&", "bitor": "|", "bitxor": "^", "shl": "<<",
        "shr": ">>"}  # fmt: skip

_RESERVED = set(
    """auto break case char const continue default do double else enum extern float for goto if inline int long
    register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
    bool true false new delete this class template typename namespace using operator private public protected
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


def kernel_name(func: PrimFunc) -> str:
    k = func.attrs.get("kernel_index")  # the k-th T.Kernel of a multi-kernel function (split_kernels.py)
    return re.sub(r"[^0-9A-Za-z_]", "_", func.name) + "_kernel" + (f"_{int(k)}" if k else "")


@dataclass
class CudaSource:
    source: str
    entry: str
    threads: int
    smem_bytes: int
    line_spans: list = field(default_factory=list)

    def span_of_line(self, line: int) -> Span | None:
        i = min(max(line, 1), len(self.line_spans)) - 1
        while i >= 0:
            if self.line_spans[i] is not None:
                return self.line_spans[i]
            i -= 1
        return None


def generate(func: PrimFunc, ctx: CompileContext | None = None) -> CudaSource:
    return _Gen(func).run()


class _Gen(LogicalOpsMixin):
    def __init__(self, func: PrimFunc) -> None:
        self.func = func
        self.lines: list = []
        self.spans: list = []
        self.depth = 0
        self.names: dict = {}
        self.used: set = set(_RESERVED)
        self.cur_span: Span | None = None
        self.last_loc: tuple | None = None
        self.nonneg: set = set()
        self.headers: set = {"common.h"}
        self.vars_scalar: set = set()  # local.var buffers (plain scalars)
        self.smem_offsets = dict(func.attrs.get("smem_offsets", {}) or {})
        self.smem_bytes = int(func.attrs.get("smem_bytes", 0) or 0)
        self.shared_seen: dict = {}
        self.logical = dict(func.attrs.get("smem_logical_shape", {}) or {})
        self.threads = 1
        self.cluster = False
        self.tensor_maps: dict = {}  # TensorMapSpec JSON -> parameter name

    # -- output ----------------------------------------------------------------------
    def emit(self, text: str) -> None:
        self.lines.append("  " * self.depth + text if text else "")
        self.spans.append(self.cur_span)

    def at(self, span: Span | None) -> None:
        if span is None or span is NO_SPAN or not span.line:
            return
        self.cur_span = span
        loc = (span.file, span.line)
        if loc != self.last_loc:
            self.last_loc = loc
            self.emit(f"// {os.path.basename(span.file)}:{span.line}")

    def name(self, obj: Any) -> str:
        hit = self.names.get(id(obj))
        if hit is not None:
            return hit
        base = re.sub(r"[^0-9A-Za-z_]", "_", obj.name or "v")
        if base[0].isdigit():
            base = "_" + base
        if base.startswith("tl_") or base.startswith("__"):
            base = "u" + base
        n, k = base, 0
        while n in self.used:
            k += 1
            n = f"{base}_{k}"
        self.used.add(n)
        self.names[id(obj)] = n
        return n

    def use(self, fn: str) -> None:
        for header, prefixes in HEADERS:
            if fn.startswith(prefixes):
                self.headers.add(header)

    # -- translation unit ------------------------------------------------------------
    def run(self) -> CudaSource:
        f = self.func
        kernels = [s for s in _top(f.body) if isinstance(s, KernelLaunch)]
        if len(kernels) != 1:
            raise UnsupportedError("the CUDA backend compiles exactly one T.Kernel per function", f.span)
        k = kernels[0]
        self.threads = k.num_threads
        self.cluster = k.attrs.get("cluster_dims") is not None
        entry = kernel_name(f)
        self.used.add(entry)
        params = []
        for p in f.params:
            if isinstance(p, Buffer):
                params.append(f"{buffer_ctype(p.dtype)}* __restrict__ {self.name(p)}")
            else:
                params.append(f"{ctype(p.dtype)} {self.name(p)}")
        narrowed = []
        for v in f.dynamic_vars():
            # passed as int64 (runtime.py); an int32 one is narrowed after the launcher checked it
            if ctype(v.dtype) == "int64_t":
                params.append(f"int64_t {self.name(v)}")
            else:
                arg = self.fresh(f"{self.name(v)}_arg")
                params.append(f"int64_t {arg}")
                narrowed.append(f"const {ctype(v.dtype)} {self.name(v)} = ({ctype(v.dtype)}){arg};")
            self.nonneg.add(v)
        for spec in collect_tensor_maps(f.body):  # TMA descriptors, after everything else (runtime.py)
            self.tensor_maps[spec.to_json()] = tm = self.fresh(f"{spec.name}_tmap")
            params.append(f"const __grid_constant__ CUtensorMap {tm}")
            self.headers.add("tma.h")
        body_start = len(self.lines)
        self.depth = 1
        for line in narrowed:
            self.emit(line)
        self.kernel(k)
        self.depth = 0
        body = self.lines[body_start:]
        body_spans = self.spans[body_start:]
        self.lines, self.spans = [], []
        src_file = f.span.file if f.span is not NO_SPAN else "<unknown>"
        self.emit(f"// Generated by TileLang's CUDA backend from `{f.name}` ({os.path.basename(src_file)}).")
        self.emit(f"// Launch: grid ({', '.join(self.grid_text(g) for g in k.grid)}), block ({self.threads}), "
                  f"dynamic shared memory {self.smem_bytes} bytes.")  # fmt: skip
        for h in [h for h, _ in [("common.h", ())] + HEADERS if h in self.headers]:
            self.emit(f'#include "tl/{h}"')
        self.emit("")
        for src in f.attrs.get("import_source", ()):  # T.import_source, once each, before the kernel
            self.emit("// T.import_source")
            self.lines.extend(src.rstrip("\n").split("\n"))
            self.spans.extend([None] * (len(self.lines) - len(self.spans)))
            self.emit("")
        # setmaxnreg re-balances registers only when one block is resident per SM (explicit_hopper.py)
        blocks = k.attrs.get("min_blocks_per_sm")
        bounds = f"{self.threads}, {int(blocks)}" if blocks else self.threads
        self.emit(f'extern "C" __global__ void __launch_bounds__({bounds}) {entry}(')
        self.emit("    " + (",\n    ".join(params) if params else "void") + ") {")
        self.lines.extend(body)
        self.spans.extend(body_spans)
        self.emit("}")
        text = "\n".join(self.lines) + "\n"
        # a parameter list written with embedded newlines counts as several lines
        spans: list = []
        for line, sp in zip(self.lines, self.spans):
            spans.extend([sp] * (line.count("\n") + 1))
        return CudaSource(text, entry, self.threads, self.smem_bytes, spans)

    def grid_text(self, g: Any) -> str:
        return strip(self.expr(g))

    def kernel(self, k: KernelLaunch) -> None:
        self.at(k.span)
        if self.smem_bytes:
            self.emit("extern __shared__ __align__(1024) uint8_t smem[];")
        ras = k.attrs.get("rasterize")
        names = ("x", "y", "z")
        if ras is not None and len(k.block_vars) >= 2:
            panel, order = ras
            fn = "tl::rasterize2d_column" if order == "column" else "tl::rasterize2d_row"
            self.use(fn)
            blk = self.fresh("tl_block")
            self.emit(f"const dim3 {blk} = {fn}<{int(panel)}>();")
            for v, ax in zip(k.block_vars, names):
                self.emit(f"const int {self.name(v)} = (int){blk}.{ax};")
                self.nonneg.add(v)
        else:
            for v, ax in zip(k.block_vars, names):
                self.emit(f"const {ctype(v.dtype)} {self.name(v)} = blockIdx.{ax};")
                self.nonneg.add(v)
        self.body(k.body)

    def fresh(self, hint: str) -> str:
        n, k = hint, 0
        while n in self.used:
            k += 1
            n = f"{hint}_{k}"
        self.used.add(n)
        return n

    # -- statements -----------------------------------------------------------------------
    def body(self, s: Stmt | None) -> None:
        if s is None:
            return
        if isinstance(s, SeqStmt):
            for x in s.stmts:
                self.stmt(x)
        else:
            self.stmt(s)

    def block(self, s: Stmt | None) -> None:
        self.depth += 1
        self.body(s)
        self.depth -= 1

    def stmt(self, s: Stmt) -> None:
        self.at(s.span)
        fn = getattr(self, "s_" + type(s).__name__, None)
        if fn is None:
            if isinstance(s, TileOp):
                raise UnsupportedError(f"tile op {type(s).__name__} reached the CUDA code generator unlowered", s.span)
            raise UnsupportedError(f"the CUDA backend cannot generate {type(s).__name__}", s.span)
        fn(s)

    def s_SeqStmt(self, s: SeqStmt) -> None:
        self.emit("{")
        self.block(s)
        self.emit("}")

    def s_KernelLaunch(self, s: KernelLaunch) -> None:
        raise UnsupportedError("T.Kernel cannot be nested", s.span)

    def s_LetStmt(self, s: LetStmt) -> None:
        self.emit(f"const {ctype(s.var.dtype)} {self.name(s.var)} = {strip(self.expr(s.value))};")
        if s.var.dtype.is_integer and self.is_nonneg(s.value):
            self.nonneg.add(s.var)

    def s_Allocate(self, s: Allocate) -> None:
        b = s.buffer
        t = ctype(b.dtype) if b.scope == "local.var" else buffer_ctype(b.dtype)
        name = self.name(b)
        if b.scope == "local.var":
            self.vars_scalar.add(b)
            init = "" if s.init is None else f" = {strip(self.expr(s.init))}"
            self.emit(f"{t} {name}{init};")
            return
        if b.scope == "global" and s.annotations.get("view_of") is not None:  # a view: a pointer cast
            from ...transform.view_alias import alias_roots

            base = alias_roots(self.func.body, self.func.params)[b]
            self.emit(f"{t}* {name} = reinterpret_cast<{t}*>({self.name(base)});  // view of {base.name}")
            return
        if b.scope in ("shared", "shared.dyn", "shared.barrier"):  # a shared view: its base's offset
            off = self.shared_offset(b)
            shape = self.logical.get(b.name)
            note = f"  // logical shape {list(shape)}" if shape else ""
            self.emit(f"{t}* {name} = reinterpret_cast<{t}*>(smem + {off});{note}")
            return
        if b.scope == "local":
            n = 1
            for d in b.shape:
                c = const_int(d)
                if c is None:
                    raise UnsupportedError(f"local buffer `{b.name}` needs a constant size", s.span)
                n *= c
            if subbyte.is_packed(b):
                n = subbyte.storage_count(n)
            self.emit(f"alignas(16) {t} {name}[{n}];")
            return
        raise UnsupportedError(f"buffers in scope {b.scope} are not supported by the CUDA code generator", s.span)

    def shared_offset(self, b: Buffer) -> int:
        # plan_shared_memory names buffers in declaration order, suffixing repeats with _1, _2, ...
        k = self.shared_seen.get(b.name, 0)
        self.shared_seen[b.name] = k + 1
        key = b.name if k == 0 else f"{b.name}_{k}"
        if key not in self.smem_offsets:
            raise UnsupportedError(f"shared buffer `{b.name}` has no planned offset", b.span,
                                   "run plan_shared_memory before code generation")  # fmt: skip
        return int(self.smem_offsets[key])

    def s_For(self, s: For) -> None:
        v = self.name(s.var)
        t = ctype(s.var.dtype)
        if s.kind == "thread":
            self.emit(f"const {t} {v} = threadIdx.x;")
            self.nonneg.add(s.var)
            self.body(s.body)
            return
        start, ext = s.start, s.extent
        if self.is_nonneg(start):
            self.nonneg.add(s.var)
        if const_int(ext) == 1 and (s.step is None or const_int(s.step) == 1):
            self.emit("{")
            self.depth += 1
            if any(x is s.var for x in free_vars_of(s.body)):
                self.emit(f"const {t} {v} = {strip(self.expr(start))};")
            self.body(s.body)
            self.depth -= 1
            self.emit("}")
            return
        step = s.step if s.step is not None else IntImm(1, s.var.dtype)
        end = strip(self.expr(start + ext * step)) if const_int(step) != 1 else strip(self.expr(start + ext))
        st = "++" + v if const_int(step) == 1 else f"{v} += {strip(self.expr(step))}"
        if s.kind in ("unrolled", "vectorized"):
            factor = const_int(s.annotations.get("unroll_factor")) if s.kind == "unrolled" else None
            self.emit(f"#pragma unroll {factor}" if factor else "#pragma unroll")  # T.unroll(n, unroll_factor=f)
        cmp = "<" if const_int(step) is None or const_int(step) > 0 else ">"
        self.emit(f"for ({t} {v} = {strip(self.expr(start))}; {v} {cmp} {end}; {st}) {{")
        self.block(s.body)
        self.emit("}")

    def s_While(self, s: While) -> None:
        self.emit(f"while ({strip(self.expr(s.cond))}) {{")
        self.block(s.body)
        self.emit("}")

    def s_IfThenElse(self, s: IfThenElse) -> None:
        self.emit(f"if ({strip(self.expr(s.cond))}) {{")
        self.block(s.then_body)
        if s.else_body is not None:
            self.emit("} else {")
            self.block(s.else_body)
        self.emit("}")

    def s_Break(self, s: Break) -> None:
        self.emit("break;")

    def s_Continue(self, s: Continue) -> None:
        self.emit("continue;")

    def s_BufferStore(self, s: BufferStore) -> None:
        b = s.buffer
        value = s.value
        if value.dtype.element_of() is not b.dtype.element_of():
            from ...ir.expr import cast

            value = cast(value, b.dtype)
        if subbyte.is_packed(b) and b not in self.vars_scalar:
            self.emit(subbyte.store(self, b, s.indices, s.value))
            return
        self.emit(f"{self.ref(b, s.indices)} = {strip(self.expr(value))};")

    def s_Evaluate(self, s: Evaluate) -> None:
        v = s.value
        if isinstance(v, (IntImm, FloatImm)) or (isinstance(v, Call) and v.op == "tl.assume"):
            return  # T.assume: a fact for the passes, nothing to run
        self.emit(f"{strip(self.expr(v))};")

    # -- memory references -----------------------------------------------------------------------
    def ref(self, b: Buffer, indices: tuple) -> str:
        if b in self.vars_scalar:
            return self.name(b)
        if subbyte.is_packed(b):
            raise subbyte.no_address(b, self.cur_span)
        return f"{self.name(b)}[{strip(self.offset(b, indices))}]"

    def offset(self, b: Buffer, indices: tuple) -> str:
        idx = [self.expr(i) for i in indices]
        if not idx:
            return "0"
        wide = b.scope == "global" and self.needs_i64(b)
        if b.strides is not None:
            out = "0"
            for i, st in zip(idx, b.strides):
                term = f"(int64_t){wrap(i)} * {wrap(self.expr(st))}" if wide else f"{wrap(i)} * {wrap(self.expr(st))}"
                out = term if out == "0" else f"{out} + {term}"
            return out
        out = f"(int64_t){wrap(idx[0])}" if wide and len(idx) > 1 else idx[0]
        for i, d in zip(idx[1:], b.shape[1:]):
            out = f"{wrap(out)} * {wrap(self.expr(d))} + {i}"
        return out

    def needs_i64(self, b: Buffer) -> bool:
        n = 1
        for d in b.shape:
            c = const_int(d)
            if c is None:
                return True
            n *= c
        return n >= 2**31

    # -- expressions --------------------------------------------------------------------------------
    def expr(self, e: Any) -> str:
        fn = getattr(self, "e_" + type(e).__name__, None)
        if fn is None:
            raise UnsupportedError(f"the CUDA backend cannot generate expression {type(e).__name__}", self.cur_span)
        return fn(e)

    def e_Var(self, e: Var) -> str:
        return self.name(e)

    def e_IntImm(self, e: IntImm) -> str:
        v, dt = e.value, e.dtype
        if dt.is_bool:
            return "true" if v else "false"
        if dt.bits == 64:
            s = f"{v}ull" if dt.is_uint else (f"{v}ll" if v > -(2**63) else "(-9223372036854775807ll - 1)")
            return f"({s})" if v < 0 else s
        if dt.is_uint and dt.bits == 32:
            return f"{v}u"
        if v == -(2**31):
            return "(-2147483647 - 1)"
        s = str(v)
        if dt.bits < 32:
            return f"(({ctype(dt)}){s})"
        return f"({s})" if v < 0 else s

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

    def e_StringImm(self, e: StringImm) -> str:
        return c_string(e.value)

    def infix(self, e: Any) -> str | None:
        if isinstance(e, BinaryOp):
            dt = e.dtype
            if e.op in ("floordiv", "floormod"):
                if dt.is_integer and (dt.is_uint or (self.is_nonneg(e.a) and self.is_nonneg(e.b))):
                    return "/" if e.op == "floordiv" else "%"
                return None
            if dt.is_float and (e.op not in ("add", "sub", "mul", "div") or dt.is_float8):
                return None
            return _BIN.get(e.op)
        if isinstance(e, Compare):
            return _CMP[e.op]
        if isinstance(e, And):
            return "&&"
        if isinstance(e, Or):
            return "||"
        return None

    def operands(self, e: Any, op: str) -> tuple:
        p = _PREC[op]
        out = []
        for child, right in ((e.a, False), (e.b, True)):
            t = self.expr(child)
            cop = self.infix(child)
            if cop is not None and (
                _PREC[cop] > p or (_PREC[cop] == p and not right and op in ("+", "*", "&&", "||", "&", "|", "^", "-"))
            ):
                t = strip(t)
            out.append(t)
        return out[0], out[1]

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
        sym = self.infix(e)
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
        if op in _BIN:
            return f"({a} {_BIN[op]} {b})"
        raise UnsupportedError(f"unknown binary operator {op!r}", self.cur_span)

    def e_Select(self, e: Select) -> str:
        return f"({strip(self.expr(e.cond))} ? {self.expr(e.true_value)} : {self.expr(e.false_value)})"

    def e_Cast(self, e: Cast) -> str:
        src, dst = e.value.dtype, e.dtype
        x = self.expr(e.value)
        if src.element_of() is dst.element_of():
            return x
        if dst.is_bool:
            return f"({wrap(x)} != 0)" if not src.is_float or src.bits >= 32 else f"((float){wrap(x)} != 0.0f)"
        if dst.bits < 8:
            return subbyte.cast_to(self, dst, e.value, x)
        if src.bits < 8 and src.is_float:
            return f"tl::cvt<{ctype(dst)}>({strip(x)})" if dst.base != "float32" else x
        if dst.is_integer and src.is_integer:
            return f"(({ctype(dst)}){wrap(x)})"
        return f"tl::cvt<{ctype(dst)}>({strip(x)})"

    def e_BufferLoad(self, e: BufferLoad) -> str:
        if subbyte.is_packed(e.buffer) and e.buffer not in self.vars_scalar:
            return subbyte.load(self, e.buffer, e.indices)
        return self.ref(e.buffer, e.indices)

    def e_Ramp(self, e: Ramp) -> str:
        raise UnsupportedError("vector expressions are not generated by the CUDA backend", self.cur_span)

    def e_Broadcast(self, e: Broadcast) -> str:
        return self.expr(e.value)

    def e_Call(self, e: Call) -> str:
        op, dt, args = e.op, e.dtype, e.args
        if op == "tl.call":
            fn = args[0].value
            self.use(fn)
            return f"{fn}({', '.join(strip(self.expr(a)) for a in args[1:])})"
        if op == ALL_REDUCE_OP:
            self.use("tl::AllReduce")
            op_class, threads, scale, barrier = all_reduce_fields(e)
            extra = "" if barrier == BLOCK_BARRIER else "".join(f", {x}" for x in barrier)
            values = ", ".join(strip(self.expr(a)) for a in args[6:])
            return f"tl::AllReduce<{op_class}, {threads}, {scale}{extra}>::run({values})"
        if op in ("tl.call_extern", "tl.call_pure_extern"):  # T.call_extern: (name, void, *args)
            self.use(args[0].value)  # a tl:: function of our headers, called by name
            return f"{args[0].value}({', '.join(strip(self.expr(a)) for a in args[2:])})"
        if op.startswith("tl.philox_"):  # tl/philox.h (T.rng_*)
            self.use("tl::philox")
            return f"tl::{op[3:]}({', '.join(strip(self.expr(a)) for a in args)})"
        if op == TENSOR_MAP_OP:
            return f"(&{self.tensor_maps[args[0].value]})"
        if op == "tl.store_nibble_pair":
            return subbyte.store_pair(self, e)
        if op == "address_of":
            ld = args[0]
            if subbyte.is_packed(ld.buffer):
                return subbyte.address_of(self, ld)
            return f"(&{self.ref(ld.buffer, ld.indices)})"
        if op == "tl.sync_threads":
            return "__syncthreads()"
        if op == "tl.block_rank_in_cluster":
            from .explicit_hopper import cluster_rank_expr

            self.use("tl::cluster_")
            return cluster_rank_expr(self.cluster)
        if op == "tl.cp_async_commit":
            self.use("tl::cp_async")
            return "tl::cp_async_commit()"
        if op == "tl.cp_async_wait":
            self.use("tl::cp_async")
            n = const_int(args[0]) if args else 0
            return f"tl::cp_async_wait<{n}>()"
        if op.startswith("tl.atomic_"):
            kind = op[len("tl.atomic_") :]
            self.use("tl::atomic_")
            xs = [strip(self.expr(a)) for a in args]
            return f"tl::atomic_{kind}({', '.join(xs)})"
        if op == "tl.print":
            return self.printf(args)
        if op == "tl.assert_fail":
            self.use("tl::device_assert_fail")
            return f'tl::device_assert_fail({self.expr(args[0])}, "<kernel>", 0)'
        xs = [self.expr(a) for a in args]
        if op in ("infinity", "inf"):
            return f"tl::infinity<{ctype(dt)}>()"
        if op in ("isnan", "isinf", "isfinite"):
            return f"({op}((double){wrap(xs[0])}))"
        if op == "bitnot":
            return f"(~{wrap(xs[0])})"
        if op == "if_then_else":
            return f"({strip(xs[0])} ? {xs[1]} : {xs[2]})"
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
        raise UnsupportedError(
            f"intrinsic `{op}` is not supported by the CUDA backend", e.span if e.span.line else self.cur_span
        )

    def f32(self, a: Any) -> str:
        if a.dtype.base in ("float32", "tfloat32"):
            return self.expr(a)
        return f"tl::cvt<float>({strip(self.expr(a))})"

    def printf(self, args: tuple) -> str:
        prefix = args[0].value if isinstance(args[0], StringImm) else ""
        rest = list(args[1:])
        value = rest.pop() if rest and (len(rest) > 0) else None
        idx = rest
        fmt = "%s block=(%d,%d,%d) thread=%d"
        vals = [c_string(prefix), "(int)blockIdx.x", "(int)blockIdx.y", "(int)blockIdx.z", "(int)threadIdx.x"]
        if idx:
            fmt += " [" + ", ".join("%lld" for _ in idx) + "]"
            vals += [f"(long long)({strip(self.expr(i))})" for i in idx]
        if value is not None:
            dt = value.dtype
            if dt.is_float:
                fmt += " = %.9g"
                vals.append(
                    f"(double)tl::cvt<float>({strip(self.expr(value))})"
                    if dt.bits < 32
                    else f"(double)({strip(self.expr(value))})"
                )
            elif dt.is_bool:
                fmt += " = %d"
                vals.append(f"(int)({strip(self.expr(value))})")
            elif dt.is_uint:
                fmt += " = %llu"
                vals.append(f"(unsigned long long)({strip(self.expr(value))})")
            else:
                fmt += " = %lld"
                vals.append(f"(long long)({strip(self.expr(value))})")
        return f'printf("{fmt}\\n", {", ".join(vals)})'


def _top(body: Stmt) -> list:
    out = []
    for s in body.stmts if isinstance(body, SeqStmt) else (body,):
        if isinstance(s, SeqStmt):
            out.extend(_top(s))
        else:
            out.append(s)
    return out


__all__ = ["CudaSource", "generate", "kernel_name"]
