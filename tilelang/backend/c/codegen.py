"""C code generation for the CPU ("c") target.

Input: a PrimFunc after the c pipeline (no tile ops left; `tl.*` intrinsic
calls allowed). Output: one C11 translation unit with a single exported
entry

    int32_t tl_kernel_<name>(void** args)

whose `args` are, in order, each parameter (a buffer's data pointer; a
pointer to a scalar's value of its dtype) and then each dynamic dimension
(pointer to an int64). It returns 0, or 1 after a failed `T.device_assert`
(the message is in `tl_last_error()`).

Mapping:
- the grid becomes `#pragma omp parallel for collapse(n)` over the block
  indices (blocks are independent); a block's statements run in order, so a
  `T.Parallel` loop is a plain loop (the compiler vectorizes it);
- shared / fragment / local buffers are per-block arrays, 64-byte aligned, on
  the stack up to 64 KiB each (and 512 KiB in all), beyond that in
  `static _Thread_local` storage; `local.var` buffers are scalar variables;
- float16 / bfloat16 / float8 are stored as uint16_t / uint8_t and carried as
  float in expressions; every arithmetic result, math call and cast of such a
  dtype is rounded to it (`tl_round_*`), so results match the dtype's own
  arithmetic; stores convert exactly;
- integer floordiv / floormod have floor semantics (`tl_floordiv_*`), with
  plain `/` and `%` when both sides are provably non-negative;
- `// file:line` comments give the source line of the statements below them;
  `CSource.line_spans` maps every generated line back to its span.
"""

from __future__ import annotations

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
    PrimExpr,
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
from ...transform.context import CompileContext
from ..cfamily import CMP as _CMP
from ..cfamily import LogicalOpsMixin, c_string, strip, wrap
from . import subbyte
from .floatfmt import c_float_literal, encode, round_to

STACK_LIMIT = 64 * 1024  # bytes of one buffer on the stack
STACK_BUDGET = 512 * 1024  # bytes of all stack buffers of a kernel
PARALLEL_MIN_WORK = 1 << 16  # estimated operations below which a launch stays on one thread

# fp16-like formats: suffix of the tl_cpu.h helpers
SMALL_FLOATS = {
    "float16": "f16",
    "bfloat16": "bf16",
    "float8_e4m3fn": "e4m3",
    "float8_e5m2": "e5m2",
    "float4_e2m1fn": "e2m1",  # packed two per byte (subbyte.py)
}

_STORAGE = {
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
_MATH = {
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
_NOOPS = {
    "sync_threads",
    "tl.sync_threads",
    "tvm_storage_sync",
    "__syncthreads",
    "tl.cp_async_commit",
    "tl.cp_async_wait",
    "tl.assume",  # a fact for the passes (language/extern.py), nothing to run
}

_C_RESERVED = set(
    """auto break case char const continue default do double else enum extern float for goto if inline int long
    register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
    _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local bool true
    false NULL args main abs exp log sqrt floor ceil printf memcpy INFINITY NAN int8_t int16_t int32_t int64_t
    uint8_t uint16_t uint32_t uint64_t size_t""".split()
)

_C_RESERVED |= {n for pair in _MATH.values() for n in pair} | {
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

# C precedence of the infix operators we print (higher binds tighter)
_PREC = {
    "*": 13,
    "/": 13,
    "%": 13,
    "+": 12,
    "-": 12,
    "<<": 11,
    ">>": 11,
    "<": 10,
    "<=": 10,
    ">": 10,
    ">=": 10,
    "==": 9,
    "!=": 9,
    "&": 8,
    "^": 7,
    "|": 6,
    "&&": 5,
    "||": 4,
}

_BIN = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "div": "/",
    "bitand": "&",
    "bitor": "|",
    "bitxor": "^",
    "shl": "<<",
    "shr": ">>",
}


def storage_type(dt: DataType) -> str:
    try:
        return _STORAGE[dt.element_of()]
    except KeyError as err:
        raise UnsupportedError(f"dtype {dt} is not supported by the C backend") from err


def value_type(dt: DataType) -> str:
    """The C type an expression of `dt` is computed in."""
    if dt.bits == 4 and dt.is_integer:
        return "int32_t"
    return "float" if dt.base in SMALL_FLOATS else storage_type(dt)


def _ident(name: str) -> str:
    s = re.sub(r"[^0-9A-Za-z_]", "_", name or "v")
    if s[0].isdigit():
        s = "_" + s
    if s.startswith("tl_") or s.startswith("__"):
        s = "u" + s
    return s


@dataclass
class CSource:
    source: str
    entry: str
    line_spans: list = field(default_factory=list)  # generated line i (1-based) -> Span | None at [i - 1]

    def span_of_line(self, line: int) -> Span | None:
        """The user span of the statement that generated line `line`."""
        i = min(max(line, 1), len(self.line_spans)) - 1
        while i >= 0:
            if self.line_spans[i] is not None:
                return self.line_spans[i]
            i -= 1
        return None


def _work(s: Any) -> int:
    """A rough static count of the operations a statement performs (loops with
    unknown trip counts count 64 iterations)."""
    if isinstance(s, SeqStmt):
        return sum(_work(x) for x in s.stmts)
    if isinstance(s, For):
        n = const_int(s.extent)
        return (n if n is not None else 64) * _work(s.body)
    if isinstance(s, While):
        return 64 * _work(s.body)
    if isinstance(s, IfThenElse):
        return _work(s.then_body) + (_work(s.else_body) if s.else_body is not None else 0)
    if isinstance(s, Evaluate) and isinstance(s.value, Call) and s.value.op.startswith("tl.gemm"):
        dims = [const_int(a) for a in s.value.args[:3]]
        return dims[0] * dims[1] * dims[2] if None not in dims else 1 << 20
    return 1


def entry_name(func: PrimFunc) -> str:
    k = func.attrs.get("kernel_index")  # the k-th T.Kernel of a multi-kernel function (split_kernels.py)
    return "tl_kernel_" + re.sub(r"[^0-9A-Za-z_]", "_", func.name) + (f"_{int(k)}" if k else "")


def generate(func: PrimFunc, ctx: CompileContext | None = None) -> CSource:
    """C source of `func` (see the module docstring)."""
    return _CGen(func).run()


class _CGen(LogicalOpsMixin):
    def __init__(self, func: PrimFunc) -> None:
        self.func = func
        self.lines: list[str] = []
        self.spans: list[Span | None] = []
        self.depth = 0
        self.names: dict[int, str] = {}
        self.used: set[str] = set(_C_RESERVED)
        self.last_loc: tuple | None = None
        self.cur_span: Span | None = None
        self.nonneg: set[Var] = set()
        self.scalar_bufs: set[Buffer] = set()
        self.lane: str | None = None
        self.block_names: list[str] = ["0", "0", "0"]
        self.uses_assert = False
        self.uses_print = False
        self.stack_bytes = 0
        self.fresh_id = 0

    # -- output ------------------------------------------------------------------
    def emit(self, text: str) -> None:
        self.lines.append("    " * self.depth + text if text else "")
        self.spans.append(self.cur_span)

    def at(self, span: Span | None) -> None:
        """Note the source line of the statements that follow (a `// file:line` comment)."""
        if span is None or span is NO_SPAN or not span.line:
            return
        self.cur_span = span
        loc = (span.file, span.line)
        if loc != self.last_loc:
            self.last_loc = loc
            self.emit(f"// {os.path.basename(span.file)}:{span.line}")

    def name(self, obj: Var | Buffer) -> str:
        hit = self.names.get(id(obj))
        if hit is not None:
            return hit
        return self.fresh(obj.name, obj)

    def fresh(self, hint: str, obj: Any = None, internal: bool = False) -> str:
        base = hint if internal else _ident(hint)
        n, k = base, 0
        while n in self.used:
            k += 1
            n = f"{base}_{k}"
        self.used.add(n)
        if obj is not None:
            self.names[id(obj)] = n
        return n

    # -- the translation unit --------------------------------------------------------
    def run(self) -> CSource:
        f = self.func
        entry = entry_name(f)
        self.used.add(entry)
        src_file = f.span.file if f.span is not NO_SPAN else "<unknown>"
        self.emit(f"// Generated by TileLang's C backend from `{f.name}` ({src_file}).")
        self.emit(f"// Entry: int32_t {entry}(void** args)")
        for i, p in enumerate(f.params):
            what = (
                f"{p.dtype}[{', '.join(str(d) for d in p.shape)}] data pointer"
                if isinstance(p, Buffer)
                else f"pointer to {p.dtype}"
            )
            self.emit(f"//   args[{i}]: {p.name} — {what}")
        dyn = f.dynamic_vars()
        for k, v in enumerate(dyn):
            self.emit(f"//   args[{len(f.params) + k}]: {v.name} — pointer to int64 (dynamic dimension)")
        self.emit("#define TL_CPU_DEFINE_RUNTIME")
        self.emit('#include "tl_cpu.h"')
        self.emit("")
        if f.attrs.get("import_source"):  # T.import_source: CUDA device functions compile as C
            from .extern_source import prelude

            self.lines.extend(prelude(f.attrs["import_source"]))
            self.spans.extend([None] * (len(self.lines) - len(self.spans)))
        self.emit(f"TL_EXPORT int32_t {entry}(void** args) {{")
        self.depth += 1
        for i, p in enumerate(f.params):
            if isinstance(p, Buffer):
                st = storage_type(p.dtype)
                self.emit(f"{st}* {self.name(p)} = ({st}*)args[{i}];")
            else:
                self.emit(f"const {value_type(p.dtype)} {self.name(p)} = {self.scalar_arg(p.dtype, f'args[{i}]')};")
        for k, v in enumerate(dyn):
            t = value_type(v.dtype)
            self.emit(f"const {t} {self.name(v)} = ({t})(*(const int64_t*)args[{len(f.params) + k}]);")
            self.nonneg.add(v)
        self.emit("tl__reset_error();")
        self.top_level(f.body)
        if self.uses_print:
            self.emit("fflush(stdout);")
        self.emit("return tl__error_raised() ? 1 : 0;")
        self.depth -= 1
        self.emit("}")
        text = "\n".join(self.lines) + "\n"
        return CSource(text, entry, list(self.spans))

    def scalar_arg(self, dt: DataType, ptr: str) -> str:
        h = SMALL_FLOATS.get(dt.base)
        if h:
            return f"tl_{h}_to_f32(*(const {storage_type(dt)}*){ptr})"
        return f"*(const {storage_type(dt)}*){ptr}"

    def top_level(self, body: Stmt) -> None:
        launches = 0
        for s in body.stmts if isinstance(body, SeqStmt) else (body,):
            if isinstance(s, KernelLaunch):
                launches += 1
                self.kernel(s)
            elif isinstance(s, SeqStmt):
                self.top_level(s)
            else:
                self.stmt(s)
        if launches > 1:
            raise UnsupportedError("the C backend compiles one T.Kernel per function", self.func.span)

    def kernel(self, k: KernelLaunch) -> None:
        self.at(k.span)
        names = ["bx", "by", "bz"]
        dims = []
        for i, (g, v) in enumerate(zip(k.grid, k.block_vars)):
            gname = self.fresh(f"tl_grid_{'xyz'[i]}", internal=True)
            self.emit(f"const int64_t {gname} = (int64_t)({self.expr(g)});")
            dims.append((gname, v, self.fresh(f"tl_{names[i]}", internal=True)))
        total = " * ".join(d[0] for d in dims) if dims else "1"
        collapse = f" collapse({len(dims)})" if len(dims) > 1 else ""
        # fork threads only when there is enough work to pay for it (static estimate per block)
        work = max(1, min(_work(k.body), PARALLEL_MIN_WORK))
        cond = f"{total} > 1" if work >= PARALLEL_MIN_WORK else f"{total} * {work} >= {PARALLEL_MIN_WORK}"
        self.emit(f"#pragma omp parallel for{collapse} schedule(guided) if ({cond})")
        opened = 0
        for gname, _, iname in reversed(dims):
            self.emit(f"for (int64_t {iname} = 0; {iname} < {gname}; ++{iname}) {{")
            self.depth += 1
            opened += 1
        self.emit("if (tl__error_raised()) continue;")
        for i, (_, v, iname) in enumerate(dims):
            t = value_type(v.dtype)
            vname = self.name(v)
            self.emit(f"const {t} {vname} = ({t}){iname};")
            self.nonneg.add(v)
            self.block_names[i] = vname
        self.emit("{")
        self.depth += 1
        self.body(k.body)
        self.depth -= 1
        self.emit("}")
        if self.uses_assert:
            self.emit("tl_block_end:;")
        for _ in range(opened):
            self.depth -= 1
            self.emit("}")

    # -- statements -------------------------------------------------------------------
    def body(self, s: Stmt | None) -> None:
        """The statements of a braced block (a SeqStmt's elements inline)."""
        if s is None:
            return
        if isinstance(s, SeqStmt):
            for x in s.stmts:
                self.stmt(x)
        else:
            self.stmt(s)

    def stmt(self, s: Stmt) -> None:
        self.at(s.span)
        fn = getattr(self, "s_" + type(s).__name__, None)
        if fn is None:
            if isinstance(s, TileOp):
                raise UnsupportedError(
                    f"tile op {type(s).__name__} reached the C code generator unlowered",
                    s.span,
                    "run lower_tile_ops first (tilelang.backend.c.pipeline.lower)",
                )
            raise UnsupportedError(f"the C backend cannot generate {type(s).__name__}", s.span)
        fn(s)

    def s_SeqStmt(self, s: SeqStmt) -> None:
        self.emit("{")
        self.depth += 1
        self.body(s)
        self.depth -= 1
        self.emit("}")

    def s_KernelLaunch(self, s: KernelLaunch) -> None:
        raise UnsupportedError("T.Kernel cannot be nested", s.span)

    def s_LetStmt(self, s: LetStmt) -> None:
        t = value_type(s.var.dtype)
        self.emit(f"const {t} {self.name(s.var)} = {strip(self.expr(s.value))};")
        if s.var.dtype.is_integer and self.is_nonneg(s.value):
            self.nonneg.add(s.var)

    def s_Allocate(self, s: Allocate) -> None:
        b = s.buffer
        if b.scope == "shared.barrier":
            self.emit(f"/* {b.name}: barrier (no-op on the CPU) */")
            return
        name = self.name(b)
        if s.annotations.get("view_of") is not None:  # a view (language/views.py): the base's storage
            from ...transform.view_alias import alias_roots

            base = alias_roots(self.func.body, self.func.params)[b]
            st = storage_type(b.dtype)
            if b.dtype.element_of() is not base.dtype.element_of():  # C's aliasing rules: say it may alias
                alias_t = self.fresh(f"tl_{name}_t", internal=True)
                self.emit(f"typedef {st} __attribute__((__may_alias__)) {alias_t};")
                st = alias_t
            self.emit(f"{st}* {name} = ({st}*){self.name(base)};  // view of {base.name}")
            return
        if b.scope == "local.var":
            self.scalar_bufs.add(b)
            init = strip(self.expr(s.init)) if s.init is not None else ("false" if b.dtype.is_bool else "0")
            self.emit(f"{value_type(b.dtype)} {name} = {init};")
            return
        st = storage_type(b.dtype)
        dims = [const_int(d) for d in b.shape]
        if any(d is None for d in dims):
            n = " * ".join(f"(int64_t)({self.expr(d)})" for d in b.shape)
            if subbyte.is_packed(b):
                n = subbyte.storage_count_expr(n)
            self.emit(f"{st} {name}[{n}] TL_ALIGN(64);")
        else:
            count = 1
            for d in dims:
                count *= d
            if subbyte.is_packed(b):
                count = subbyte.storage_count(count)
            nbytes = count * max(1, b.dtype.bits // 8)
            if nbytes <= STACK_LIMIT and self.stack_bytes + nbytes <= STACK_BUDGET:
                self.stack_bytes += nbytes
                self.emit(f"{st} {name}[{count}] TL_ALIGN(64);  // {b.scope} {b.dtype}{list(dims)}")
            else:
                self.emit(
                    f"static _Thread_local {st} {name}[{count}] TL_ALIGN(64);  // {b.scope} {b.dtype}{list(dims)}"
                )
        if s.init is not None:
            i = self.fresh("i")
            n = " * ".join(f"(int64_t)({self.expr(d)})" for d in b.shape)
            put = (
                f"tl_st_nib({name}, {i}, {subbyte.code_of(self, b.dtype, s.init)})"
                if subbyte.is_packed(b)
                else f"{name}[{i}] = {self.store_value(b, s.init)}"
            )
            self.emit(f"for (int64_t {i} = 0; {i} < {n}; ++{i}) {put};")

    def s_BufferStore(self, s: BufferStore) -> None:
        lanes = max([s.value.dtype.lanes] + [i.dtype.lanes for i in s.indices])
        if lanes > 1:
            self.vector_loop(lanes, lambda: self._store(s))
            return
        self._store(s)

    def _store(self, s: BufferStore) -> None:
        if subbyte.is_packed(s.buffer) and s.buffer not in self.scalar_bufs:
            self.emit(subbyte.store(self, s.buffer, s.indices, s.value))
            return
        self.emit(f"{self.ref(s.buffer, s.indices)} = {self.store_value(s.buffer, s.value)};")

    def vector_loop(self, lanes: int, emit_body) -> None:
        lane = self.fresh("tl_lane", internal=True)
        self.emit(f"for (int32_t {lane} = 0; {lane} < {lanes}; ++{lane}) {{")
        self.depth += 1
        outer, self.lane = self.lane, lane
        try:
            emit_body()
        finally:
            self.lane = outer
        self.depth -= 1
        self.emit("}")

    def s_Evaluate(self, s: Evaluate) -> None:
        v = s.value
        if isinstance(v, Call) and v.op == "tl.assert_fail":
            self.uses_assert = True
            msg = v.args[0].value if v.args and isinstance(v.args[0], StringImm) else "device_assert failed"
            bx, by, bz = self.block_names
            self.emit(f"{{ tl__set_error({c_string(msg)}, (long){bx}, (long){by}, (long){bz}); goto tl_block_end; }}")
            return
        if isinstance(v, Call) and v.op == "tl.print":
            self.print_call(v)
            return
        if isinstance(v, (IntImm, FloatImm)):
            return
        text = self.expr(v)
        self.emit(f"{text};" if isinstance(v, Call) else f"(void)({text});")

    def s_For(self, s: For) -> None:
        v = s.var
        t = value_type(v.dtype)
        vn = self.name(v)
        start = self.expr(s.start)
        step = None if s.step is None or const_int(s.step) == 1 else s.step
        if s.kind == "pipelined":
            stages = s.annotations.get("num_stages")
            self.emit(f"// T.Pipelined(num_stages={stages}): a serial loop on the CPU")
        if s.kind == "unrolled":
            n = const_int(s.extent)
            self.emit(f"#pragma GCC unroll {n if n is not None and n <= 64 else 8}")
        if self.is_nonneg(s.start) and (step is None or self.is_nonneg(step)):
            self.nonneg.add(v)
        if step is None:
            if isinstance(s.extent, (IntImm, Var)) and isinstance(s.start, IntImm) and s.start.value == 0:
                head = f"for ({t} {vn} = 0; {vn} < {self.expr(s.extent)}; ++{vn}) {{"
            else:
                end = self.fresh(f"{vn}_end")
                head = (
                    f"for ({t} {vn} = {start}, {end} = {self.add(start, self.expr(s.extent))}; {vn} < {end}; ++{vn}) {{"
                )
            self.emit(head)
            self.depth += 1
        else:
            k = self.fresh(f"{vn}_iter")
            n = self.fresh(f"{vn}_count")
            self.emit(f"for ({t} {k} = 0, {n} = {self.expr(s.extent)}; {k} < {n}; ++{k}) {{")
            self.depth += 1
            self.emit(f"const {t} {vn} = {self.add(start, f'{k} * {self.expr(step)}')};")
        self.body(s.body)
        self.depth -= 1
        self.emit("}")

    def s_While(self, s: While) -> None:
        self.emit(f"while ({self.expr(s.cond)}) {{")
        self.depth += 1
        self.body(s.body)
        self.depth -= 1
        self.emit("}")

    def s_IfThenElse(self, s: IfThenElse) -> None:
        self.emit(f"if ({strip(self.expr(s.cond))}) {{")
        self.depth += 1
        self.body(s.then_body)
        self.depth -= 1
        if s.else_body is not None:
            self.emit("} else {")
            self.depth += 1
            self.body(s.else_body)
            self.depth -= 1
        self.emit("}")

    def s_Break(self, s: Break) -> None:
        self.emit("break;")

    def s_Continue(self, s: Continue) -> None:
        self.emit("continue;")

    def print_call(self, c: Call) -> None:
        self.uses_print = True
        prefix = c.args[0].value if c.args and isinstance(c.args[0], StringImm) else ""
        rest = list(c.args[1:])
        fmt = prefix.replace("%", "%%")
        vals: list[str] = []
        if rest:
            value = rest.pop()
            if rest:
                fmt += "[" + ", ".join("%lld" for _ in rest) + "]"
                vals += [f"(long long)({self.expr(i)})" for i in rest]
            fmt += " = " if prefix or rest else ""
            dt = value.dtype
            if dt.is_float:
                fmt += "%.17g" if dt.bits == 64 else "%.9g"
                vals.append(f"(double)({self.expr(value)})")
            elif dt.is_bool:
                fmt += "%d"
                vals.append(f"(int)({self.expr(value)})")
            elif dt.is_uint:
                fmt += "%llu"
                vals.append(f"(unsigned long long)({self.expr(value)})")
            else:
                fmt += "%lld"
                vals.append(f"(long long)({self.expr(value)})")
        fmt += "  [block %ld, %ld, %ld]\n"
        vals += [f"(long)({b})" for b in self.block_names]
        self.emit(f"printf({c_string(fmt)}, {', '.join(vals)});")

    # -- buffers ----------------------------------------------------------------------
    def ref(self, buf: Buffer, indices: tuple) -> str:
        """The C lvalue of `buf[indices]` (storage type)."""
        if buf in self.scalar_bufs:
            return self.name(buf)
        if subbyte.is_packed(buf):
            raise subbyte.no_address(buf, self.cur_span)
        return f"{self.name(buf)}[{strip(self.offset(buf, indices))}]"

    def offset(self, buf: Buffer, indices: tuple) -> str:
        idx = [self.expr(i) for i in indices]
        wide = self.needs_i64(buf)
        if buf.strides is not None:
            terms = [self.mul(f"(int64_t){i}" if wide else i, self.expr(st)) for i, st in zip(idx, buf.strides)]
            out = "0"
            for t in terms:
                out = self.add(out, t)
            return out
        if not idx:
            return "0"
        out = f"(int64_t){idx[0]}" if wide and len(idx) > 1 else idx[0]
        for i, d in zip(idx[1:], buf.shape[1:]):
            out = self.add(self.mul(out, self.expr(d)), i)
        return out

    def needs_i64(self, buf: Buffer) -> bool:
        n = 1
        for d in buf.shape:
            c = const_int(d)
            if c is None:
                return True
            n *= c
        return n >= 2**31

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

    # -- expressions -----------------------------------------------------------------
    def expr(self, e: Any) -> str:
        fn = getattr(self, "e_" + type(e).__name__, None)
        if fn is None:
            raise UnsupportedError(f"the C backend cannot generate expression {type(e).__name__}", self.cur_span)
        return fn(e)

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

    def e_Var(self, e: Var) -> str:
        return self.name(e)

    def e_IntImm(self, e: IntImm) -> str:
        v, dt = e.value, e.dtype
        if dt.is_bool:
            return "true" if v else "false"
        if dt.is_uint:
            return f"UINT64_C({v})" if dt.bits == 64 else (f"{v}u" if dt.bits == 32 else str(v))
        if dt.bits == 64:
            return f"INT64_C({v})" if v > -(2**63) else "(-INT64_C(9223372036854775807) - 1)"
        if v == -(2**31):
            return "(-2147483647 - 1)"
        return f"({v})" if v < 0 else str(v)

    def e_FloatImm(self, e: FloatImm) -> str:
        return c_float_literal(e.value, e.dtype.base)

    def e_StringImm(self, e: StringImm) -> str:
        return c_string(e.value)

    def small(self, dt: DataType, text: str) -> str:
        """Round a float-carried result to a small float dtype."""
        h = SMALL_FLOATS.get(dt.base)
        return f"tl_round_{h}({strip(text)})" if h else text

    def infix_op(self, e: Any) -> str | None:
        """The C operator `e` prints as at its top level (None: an atom such as a call)."""
        if isinstance(e, BinaryOp):
            dt = e.dtype
            if dt.is_float:
                return _BIN[e.op] if e.op in ("add", "sub", "mul", "div") and dt.base not in SMALL_FLOATS else None
            if dt.is_integer and dt.bits < 32:
                return None
            if e.op in ("floordiv", "floormod"):
                if dt.is_uint or dt.is_bool or (self.is_nonneg(e.a) and self.is_nonneg(e.b)):
                    return "/" if e.op == "floordiv" else "%"
                return None
            return _BIN.get(e.op)
        if isinstance(e, Compare):
            return _CMP[e.op]
        if isinstance(e, And):
            return "&&"
        if isinstance(e, Or):
            return "||"
        return None

    def operands(self, e: Any, op: str) -> tuple[str, str]:
        """Both operands of infix `op`, without parentheses precedence makes redundant."""
        p = _PREC[op]
        out = []
        for child, right in ((e.a, False), (e.b, True)):
            t = self.expr(child)
            cop = self.infix_op(child)
            if cop is not None and (
                _PREC[cop] > p or (_PREC[cop] == p and not right and op in ("+", "-", "*", "&&", "||", "&", "|", "^"))
            ):
                t = strip(t)
            out.append(t)
        return out[0], out[1]

    def e_BinaryOp(self, e: BinaryOp) -> str:
        dt, op = e.dtype, e.op
        if op in _BIN and (self.infix_op(e) is not None or dt.base in SMALL_FLOATS or (dt.is_integer and dt.bits < 32)):
            a, b = self.operands(e, _BIN[op])
        else:
            a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_float:
            dbl = dt.bits == 64
            if op in ("add", "sub", "mul", "div"):
                return self.small(dt, f"({a} {_BIN[op]} {b})")
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
        if op in _BIN:
            return self.narrow(dt, f"({a} {_BIN[op]} {b})")
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

    def e_Select(self, e: Select) -> str:
        return f"({strip(self.expr(e.cond))} ? {self.expr(e.true_value)} : {self.expr(e.false_value)})"

    def e_Cast(self, e: Cast) -> str:
        src, dst = e.value.dtype, e.dtype
        x = self.expr(e.value)
        if src.element_of() is dst.element_of():
            return x
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

    def e_Call(self, e: Call) -> str:
        op, dt = e.op, e.dtype
        args = e.args
        if op == "address_of":
            ld = args[0]
            return f"(&{self.ref(ld.buffer, ld.indices)})"
        if op.startswith("tl.atomic_"):
            vdt = args[1].dtype
            suffix = {"float32": "f32", "float64": "f64", **SMALL_FLOATS}.get(vdt.base)
            if suffix is None:
                suffix = ("u" if vdt.is_uint else "i") + str(vdt.bits)
            return f"tl_atomic_{op[len('tl.atomic_') :]}_{suffix}({', '.join(strip(self.expr(a)) for a in args)})"
        if op in _NOOPS:
            return "(void)0"
        if op in ("tl.call_extern", "tl.call_pure_extern"):  # T.call_extern: (name, void, *args)
            return f"{args[0].value}({', '.join(strip(self.expr(a)) for a in args[2:])})"
        if op in ("tl.gemm_f32", "tl.gemm_f64") or op.startswith("tl.philox_"):  # tl_philox.h (T.rng_*)
            return f"tl_{op[3:]}({', '.join(strip(self.expr(a)) for a in args)})"
        if op.startswith("tl."):
            raise UnsupportedError(
                f"intrinsic `{op}` is not supported by the C backend", e.span if e.span.line else self.cur_span
            )
        xs = [self.expr(a) for a in args]
        if op in ("infinity", "inf"):
            return "INFINITY"
        if op in ("isnan", "isinf", "isfinite"):
            return f"({op}({strip(xs[0])}) != 0)"
        if op == "bitnot":
            return self.narrow(dt, f"(~{xs[0]})")
        if op == "if_then_else":
            return f"({strip(xs[0])} ? {xs[1]} : {xs[2]})"
        if op == "reinterpret":
            return self.reinterpret(args[0], dt)
        if op == "abs" and not dt.is_float:
            if dt.is_uint:
                return xs[0]
            return self.narrow(dt, f"tl_abs_{'i64' if dt.bits == 64 else 'i32'}({strip(xs[0])})")
        if not dt.is_float and op not in _MATH:
            raise UnsupportedError(
                f"intrinsic `{op}` is not supported by the C backend", e.span if e.span.line else self.cur_span
            )
        dbl = dt.bits == 64 and dt.is_float
        if op == "rsqrt":
            return self.small(dt, f"(1.0{'' if dbl else 'f'} / {'sqrt' if dbl else 'sqrtf'}({strip(xs[0])}))")
        if op == "sigmoid":
            one = "1.0" if dbl else "1.0f"
            return self.small(dt, f"({one} / ({one} + {'exp' if dbl else 'expf'}(-{xs[0]})))")
        if op == "exp10":
            return self.small(dt, f"{'pow(10.0' if dbl else 'powf(10.0f'}, {strip(xs[0])})")
        fn = _MATH.get(op)
        if fn is None:
            raise UnsupportedError(
                f"intrinsic `{op}` is not supported by the C backend", e.span if e.span.line else self.cur_span
            )
        text = f"{fn[1] if dbl else fn[0]}({', '.join(strip(x) for x in xs)})"
        if op in ("abs", "fabs", "floor", "ceil", "trunc", "round", "nearbyint", "copysign"):
            return text  # exact on values of the format
        return self.small(dt, text)

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

    def e_Broadcast(self, e: Broadcast) -> str:
        return self.expr(e.value)


def round_constant(value: float, dtype: Any) -> float:
    """`value` rounded to `dtype` exactly as the generated code would hold it."""
    return round_to(value, DataType(dtype).base)
