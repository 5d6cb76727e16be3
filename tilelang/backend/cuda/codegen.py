"""CUDA C++ code generation: `CudaDialect` (alias `_Gen`), the CUDA dialect of the C-family
printer (`backend/cfamily`; expressions in `codegen_expr.py`, tables in `cuda_types.py`), and the
base class of the GPU dialects that share its thread model (HIP, Metal).

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

import os
from dataclasses import dataclass, field
from typing import Any

from ...errors import UnsupportedError
from ...ir.buffer import Buffer
from ...ir.expr import Call, FloatImm, IntImm, const_int
from ...ir.function import PrimFunc
from ...ir.span import NO_SPAN
from ...ir.stmt import Allocate, BufferStore, Evaluate, For, KernelLaunch, SeqStmt, Stmt
from ...ir.visitor import free_vars_of
from ...transform.context import CompileContext
from ..cfamily import LineSpans, c_name, strip, wrap
from . import subbyte
from .codegen_expr import CudaExpressions
from .cuda_types import CTYPES, CUDA_MATH, HEADERS, RESERVED, TL_MATH, buffer_ctype, ctype
from .tensor_map import collect_tensor_maps


def kernel_name(func: PrimFunc) -> str:
    k = func.attrs.get("kernel_index")  # the k-th T.Kernel of a multi-kernel function (split_kernels.py)
    return c_name(func.name) + "_kernel" + (f"_{int(k)}" if k else "")


@dataclass
class CudaSource(LineSpans):
    source: str
    entry: str
    threads: int
    smem_bytes: int
    line_spans: list = field(default_factory=list)


def generate(func: PrimFunc, ctx: CompileContext | None = None) -> CudaSource:
    return CudaDialect(func).run()


class CudaDialect(CudaExpressions):
    """The CUDA dialect; HIP and Metal derive from it. Beyond the printer's hooks
    (`cfamily`), a GPU dialect overrides: `banner_lines` (the opening comments), `include_lines`
    (headers), `entry_head` (qualifiers, launch bounds, the parameter list), `param_decl`,
    `shared_decl` (the dynamic shared memory block), `block_index` / `THREAD_INDEX` / `BARRIER`
    (thread model spelling), the `call_*` handlers of `CALLS` (warp reductions, cp.async;
    tensor-core gemms come as `tl.call` of our headers), `printf` (T.print) and `s_Allocate`
    (shared / local buffers)."""

    TARGET = "CUDA"
    INDENT = "  "
    RESERVED = RESERVED
    TL = "tl::"
    INT64_LITERAL = ("{}ll", "{}ull")
    HEADERS = HEADERS  # (header, name prefixes whose use requires it), in include order
    HEADER_DIR = "tl"

    def __init__(self, func: PrimFunc) -> None:
        super().__init__(func)
        self.headers: set = {"common.h"}
        self.smem_offsets = dict(func.attrs.get("smem_offsets", {}) or {})
        self.smem_bytes = int(func.attrs.get("smem_bytes", 0) or 0)
        self.shared_seen: dict = {}
        self.logical = dict(func.attrs.get("smem_logical_shape", {}) or {})
        self.threads = 1
        self.cluster = False
        self.tensor_maps: dict = {}  # TensorMapSpec JSON -> parameter name

    def use(self, fn: str) -> None:
        for header, prefixes in self.HEADERS:
            if fn.startswith(prefixes):
                self.headers.add(header)

    # -- translation unit ------------------------------------------------------------
    def run(self) -> CudaSource:
        f = self.func
        kernels = [s for s in _top(f.body) if isinstance(s, KernelLaunch)]
        if len(kernels) != 1:
            raise UnsupportedError(f"the {self.TARGET} backend compiles exactly one T.Kernel per function", f.span)
        k = kernels[0]
        self.threads = k.num_threads
        self.cluster = k.attrs.get("cluster_dims") is not None
        entry = kernel_name(f)
        self.used.add(entry)
        params = [self.param_decl(p) for p in f.params]
        narrowed = []
        for v in f.dynamic_vars():
            # passed as int64 (runtime.py); an int32 one is narrowed after the launcher checked it
            if ctype(v.dtype) == "int64_t":
                params.append(f"int64_t {self.name(v)}")
            else:
                arg = self.fresh(f"{self.name(v)}_arg", internal=True)
                params.append(f"int64_t {arg}")
                narrowed.append(f"const {ctype(v.dtype)} {self.name(v)} = ({ctype(v.dtype)}){arg};")
            self.nonneg.add(v)
        for spec in collect_tensor_maps(f.body):  # TMA descriptors, after everything else (runtime.py)
            self.tensor_maps[spec.to_json()] = tm = self.fresh(f"{spec.name}_tmap", internal=True)
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
        for line in self.banner_lines(k) + self.include_lines():
            self.emit(line)
        self.emit("")
        for src in f.attrs.get("import_source", ()):  # T.import_source, once each, before the kernel
            self.emit("// T.import_source")
            self.lines.extend(src.rstrip("\n").split("\n"))
            self.spans.extend([None] * (len(self.lines) - len(self.spans)))
            self.emit("")
        self.entry_head(entry, params, k)
        self.lines.extend(body)
        self.spans.extend(body_spans)
        self.emit("}")
        text, spans = self.source_text()
        return CudaSource(text, entry, self.threads, self.smem_bytes, spans)

    def banner_lines(self, k: KernelLaunch) -> list[str]:
        """The comments that open the source: where it comes from, how it is launched."""
        f = self.func
        src_file = f.span.file if f.span is not NO_SPAN else "<unknown>"
        return [
            f"// Generated by TileLang's {self.TARGET} backend from `{f.name}` ({os.path.basename(src_file)}).",
            f"// Launch: grid ({', '.join(self.grid_text(g) for g in k.grid)}), block ({self.threads}), "
            f"dynamic shared memory {self.smem_bytes} bytes.",
        ]

    def include_lines(self) -> list[str]:
        """The #include lines of the headers the kernel uses, common.h first."""
        return [f'#include "{self.HEADER_DIR}/{h}"' for h, _ in [("common.h", ())] + self.HEADERS if h in self.headers]

    def param_decl(self, p: Any) -> str:
        """A kernel parameter: a buffer is a restrict pointer to its storage, a scalar a value."""
        if isinstance(p, Buffer):
            return f"{buffer_ctype(p.dtype)}* __restrict__ {self.name(p)}"
        return f"{ctype(p.dtype)} {self.name(p)}"

    def entry_head(self, entry: str, params: list[str], k: KernelLaunch) -> None:
        """The entry's signature up to its opening brace (a parameter list on one line of several)."""
        # setmaxnreg re-balances registers only when one block is resident per SM (explicit_hopper.py)
        blocks = k.attrs.get("min_blocks_per_sm")
        bounds = f"{self.threads}, {int(blocks)}" if blocks else self.threads
        self.emit(f'extern "C" __global__ void __launch_bounds__({bounds}) {entry}(')
        self.emit("    " + (",\n    ".join(params) if params else "void") + ") {")

    def shared_decl(self) -> str:
        """The block of dynamic shared memory every shared buffer lives in, at its planned offset."""
        return "extern __shared__ __align__(1024) uint8_t smem[];"

    def grid_text(self, g: Any) -> str:
        return strip(self.expr(g))

    def kernel(self, k: KernelLaunch) -> None:
        self.at(k.span)
        if self.smem_bytes:
            self.emit(self.shared_decl())
        ras = k.attrs.get("rasterize")
        names = ("x", "y", "z")
        if ras is not None and len(k.block_vars) >= 2:
            panel, order = ras
            fn = "tl::rasterize2d_column" if order == "column" else "tl::rasterize2d_row"
            self.use(fn)
            blk = self.fresh("tl_block", internal=True)
            self.emit(f"const dim3 {blk} = {fn}<{int(panel)}>();")
            for v, ax in zip(k.block_vars, names):
                self.emit(f"const int {self.name(v)} = (int){blk}.{ax};")
                self.nonneg.add(v)
        else:
            for v, ax in zip(k.block_vars, names):
                self.emit(f"const {ctype(v.dtype)} {self.name(v)} = {self.block_index(ax)};")
                self.nonneg.add(v)
        self.body(k.body)

    # Address-space qualifiers of pointers into global and shared memory, and the alignment of
    # per-thread arrays: empty / 16 bytes in CUDA (MSL spells them `device ` / `threadgroup `).
    GLOBAL_SPACE = ""
    SHARED_SPACE = ""
    SHARED_VIEW_SCOPES = ("shared", "shared.dyn", "shared.barrier")
    LOCAL_ALIGN = "alignas(16) "

    def allocation_type(self, b: Buffer) -> str:
        """The element type an allocation of `b` is declared with."""
        return ctype(b.dtype) if b.scope == "local.var" else buffer_ctype(b.dtype)

    def unsupported_scope(self, b: Buffer, span: Any) -> UnsupportedError:
        return UnsupportedError(
            f"buffers in scope {b.scope} are not supported by the {self.TARGET} code generator", span
        )

    def s_Allocate(self, s: Allocate) -> None:
        b = s.buffer
        t = self.allocation_type(b)
        name = self.name(b)
        if b.scope == "local.var":
            self.scalar_bufs.add(b)
            init = "" if s.init is None else f" = {strip(self.expr(s.init))}"
            self.emit(f"{t} {name}{init};")
            return
        if b.scope == "global" and s.annotations.get("view_of") is not None:  # a view: a pointer cast
            from ...transform.view_alias import alias_roots

            base = alias_roots(self.func.body, self.func.params)[b]
            ptr = f"{self.GLOBAL_SPACE}{t}*"
            self.emit(f"{ptr} {name} = reinterpret_cast<{ptr}>({self.name(base)});  // view of {base.name}")
            return
        if b.scope in self.SHARED_VIEW_SCOPES:  # a shared view: its base's offset
            off = self.shared_offset(b)
            shape = self.logical.get(b.name)
            note = f"  // logical shape {list(shape)}" if shape else ""
            ptr = f"{self.SHARED_SPACE}{t}*"
            self.emit(f"{ptr} {name} = reinterpret_cast<{ptr}>(smem + {off});{note}")
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
            self.emit(f"{self.LOCAL_ALIGN}{t} {name}[{n}];")
            return
        raise self.unsupported_scope(b, s.span)

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
            self.emit(f"const {t} {v} = {self.THREAD_INDEX};")
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

    def s_BufferStore(self, s: BufferStore) -> None:
        b = s.buffer
        value = s.value
        if value.dtype.element_of() is not b.dtype.element_of():
            from ...ir.expr import cast

            value = cast(value, b.dtype)
        if subbyte.is_packed(b) and b not in self.scalar_bufs:
            self.emit(subbyte.store(self, b, s.indices, s.value))
            return
        self.emit(f"{self.ref(b, s.indices)} = {strip(self.expr(value))};")

    def s_Evaluate(self, s: Evaluate) -> None:
        v = s.value
        if isinstance(v, (IntImm, FloatImm)) or (isinstance(v, Call) and v.op == "tl.assume"):
            return  # T.assume: a fact for the passes, nothing to run
        self.emit(f"{strip(self.expr(v))};")

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


def _top(body: Stmt) -> list:
    out = []
    for s in body.stmts if isinstance(body, SeqStmt) else (body,):
        if isinstance(s, SeqStmt):
            out.extend(_top(s))
        else:
            out.append(s)
    return out


_Gen = CudaDialect  # the name the HIP and Metal dialects subclass

__all__ = ["CTYPES", "CUDA_MATH", "HEADERS", "TL_MATH", "CudaDialect", "CudaSource", "buffer_ctype", "ctype", "generate",
           "kernel_name"]  # fmt: skip
