"""`tilelang.analysis`: what tools (the language server first) learn about the
kernels in a source file, without executing its module code.

Public API (the language server imports nothing else from the compiler):

- `analyze_function(source, path, function, target="sm_90a", bindings=None) -> KernelInfo`
- `analyze_traced(prim_func, target="sm_90a", pass_configs=None) -> KernelInfo` (an already traced kernel)
- `generate_source(source, path, function, target="sm_90a", bindings=None) -> GeneratedSource`
- `benchmark(source, path, function, target="sm_90a", bindings=None) -> BenchResult`
- `lowering_trace(source, path, function, target="sm_90a", bindings=None) -> GeneratedSource` (IR after every pass)
- the data model in `tilelang.analysis.model`.
"""

from .api import (
    analyze_function,
    analyze_traced,
    benchmark,
    generate_source,
    lowering_trace,
    trace_function,
    warm_up,
)
from .model import BenchResult, BufferInfo, Diagnostic, GeneratedSource, KernelInfo, Loc, OpInfo, Resources

__all__ = [
    "BenchResult",
    "BufferInfo",
    "Diagnostic",
    "GeneratedSource",
    "KernelInfo",
    "Loc",
    "OpInfo",
    "Resources",
    "analyze_function",
    "analyze_traced",
    "benchmark",
    "generate_source",
    "lowering_trace",
    "trace_function",
    "warm_up",
]
