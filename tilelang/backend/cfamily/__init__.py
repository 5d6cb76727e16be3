"""One C-family code generator; each target is a dialect of it.

`printer.CFamilyPrinter` walks a lowered PrimFunc and prints what every C-like language
writes the same way: names and fresh identifiers, `// file:line` markers and the
generated-line -> span map, blocks, `const` lets, while / if / break / continue,
comparisons and logical operators, selects, integer literals, operand parenthesization
(`text.PREC`), the non-negativity facts behind cheap floor division, buffer element
references, and the call dispatch. A dialect is a subclass that supplies:

Tables (class attributes)
  TARGET           the target in error messages ("C", "CUDA")
  INDENT           one indentation level
  RESERVED         identifiers user names never take
  TL               the spelling of our runtime library's functions ("tl_" / "tl::")
  INT64_LITERAL    the (signed, unsigned) 64-bit literal formats
  CALLS            intrinsic op -> handler method; CALL_PREFIXES: (op prefix, handler)
  UNLOWERED_HINT   the hint of the error for a tile op that reached the generator
Hooks (methods)
  run()                         the translation unit: header, entry signature, body -> a source record
  value_type(dt)                the type an expression of `dt` is computed in
  binary_infix(e)               the infix operator of a BinaryOp, None where it is a call
  offset(buf, indices)          the flattened element offset
  s_Allocate / s_For / s_BufferStore / s_Evaluate   allocation of shared/local buffers, loops, stores
  e_FloatImm / e_BinaryOp / e_Cast / e_BufferLoad / e_Ramp, call_other   arithmetic, casts, math
  long_literal / short_literal  64-bit and narrower-than-int integer literals as operands
  use(fn)                       a library function the source calls (header selection)

Dialects today: `backend/c/codegen.py` (`CDialect`: one C11 function, OpenMP over blocks)
and `backend/cuda/codegen.py` (`CudaDialect`, also importable as `_Gen`). A GPU dialect
derives from `CudaDialect` and overrides its GPU hooks (listed in that module):
- HIP: `include_lines` (hip headers), `entry_head` (`__launch_bounds__` spelling),
  call handlers for the warp shuffles (no `_sync` forms) and the MFMA gemm calls, and
  `CALLS` without `tl.cp_async_*` (no cp.async on gfx90a/gfx94x);
- Metal: `entry_head` (`kernel void` with `[[...]]` attribute arguments for the thread and
  threadgroup positions), `shared_decl` (`threadgroup` memory), `BARRIER`
  (`threadgroup_barrier(mem_flags::mem_threadgroup)`), `block_index` / `THREAD_INDEX`,
  and the all-reduce handler on `simd_*` reductions.
"""

from .printer import CFamilyPrinter, LineSpans, packed_no_address
from .text import BIN, CMP, PREC, c_name, c_string, ident, strip, wrap

__all__ = [
    "BIN",
    "CMP",
    "PREC",
    "CFamilyPrinter",
    "LineSpans",
    "c_name",
    "c_string",
    "ident",
    "packed_no_address",
    "strip",
    "wrap",
]
