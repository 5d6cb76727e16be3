"""The CPU ("c") backend: tile IR → C11 + OpenMP → shared library → ctypes.

Public surface (what the JIT calls):

    from tilelang.backend import c as cbackend

    art = cbackend.build(func, ctx)       # CArtifact
    call = cbackend.load(art)             # call(void_ptr_array) -> None
    launch = cbackend.make_launcher(art)  # launch(values, dyn_values) -> None

`build(func, ctx)` runs `pipeline.lower` (verify → simplify → lower_tile_ops →
legalize_memory_access → simplify), generates C (`codegen.generate`) and
compiles it (`compiler.compile_source`). `ctx` is a `transform.context.CompileContext`
(or a dict of its keys): `target` ("c"), `pass_configs` (`tl.disable_safe_memory_legalize`, ...),
options `compile_flags` (extra cc flags) and `build_dir` (where libraries go; default the
on-disk cache), `trace` (callback `(pass_name, func)` after each pass).

Calling convention of the compiled entry `int32_t <art.entry>(void** args)`:
`args[i]` for each of `func.params` in order — a buffer's data pointer
(contiguous, row-major) or a pointer to a scalar stored in its dtype
(float16/bfloat16/float8 as their bits) — followed by one `int64_t*` per
`func.dynamic_vars()`. Nonzero return: a `T.device_assert` failed; `load`
turns that into `DeviceAssertError` with the message from `tl_last_error()`.
Blocks run in parallel on OpenMP threads (`OMP_NUM_THREADS`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...ir.function import PrimFunc
from ...tools.lower_trace import add_generated_source
from ...transform.context import CompileContext
from .codegen import CSource, generate
from .compiler import CCompileError, compile_source, flags_for
from .pipeline import lower
from .runtime import CKernel, DeviceAssertError, load, make_launcher


@dataclass
class CArtifact:
    kernel_source: str  # the generated C
    lib_path: str  # compiled shared library
    entry: str  # exported entry symbol
    lowered: PrimFunc  # the IR the source was generated from
    compile_flags: list = field(default_factory=list)
    line_spans: list = field(default_factory=list, repr=False)  # generated line -> user Span

    def get_kernel_source(self) -> str:
        return self.kernel_source


def build(func: PrimFunc, ctx: CompileContext | None = None) -> CArtifact:
    """Lower, generate and compile `func` for the CPU."""
    ctx = CompileContext.of(ctx)
    if ctx.target is None:
        ctx = ctx.with_(target="c")
    lowered = lower(func, ctx)
    src: CSource = generate(lowered, ctx)
    add_generated_source(src.source)  # TL_LOWER_TRACE: the page gets the final source too
    lib = compile_source(src.source, func.name, ctx, src.line_spans)
    return CArtifact(src.source, lib, src.entry, lowered, flags_for(ctx), src.line_spans)


__all__ = [
    "CArtifact",
    "CCompileError",
    "CKernel",
    "DeviceAssertError",
    "build",
    "compile_source",
    "generate",
    "load",
    "lower",
    "make_launcher",
]
