"""The data model of `tilelang.analysis`: what the language server (and any
other tool) learns about the kernels in a source file.

Plain dataclasses of str/int/float/list only, so results can cross a process
boundary (pickle/JSON) and the server never sees compiler types. Positions
are `Loc`s: 1-based lines and 0-based columns, like Python's `ast`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Loc:
    line: int
    col: int
    end_line: int
    end_col: int

    @staticmethod
    def of(span: Any) -> Loc:
        end_line = span.end_line or span.line
        end_col = span.end_col if span.end_line else span.col + 1
        return Loc(span.line, span.col, end_line, end_col)


@dataclass
class Diagnostic:
    severity: str  # "error" | "warning" | "info"
    message: str
    loc: Loc
    # smem-overflow | reg-pressure | threads | gemm-shape | dsl-error | syntax |
    # timeout | crash | unresolved | layout
    code: str
    related: list[tuple[str, Loc]] = field(default_factory=list)


@dataclass
class BufferInfo:
    name: str
    scope: str  # global | shared.dyn | local.fragment | local | local.var | ...
    dtype: str
    shape: list[int | None]  # concrete dims, None where unresolved
    shape_text: list[str]  # as written / symbolic, e.g. ["block_M", "32"]
    bytes: int | None  # one copy
    stages: int  # pipeline multiplier (1 when not multi-buffered)
    layout: str  # one-line summary, e.g. "swizzle 64B" or "4 warps 2×2 · 128 regs/thread"
    layout_detail: str  # full thread/register map (multi-line), "" if none
    regs_per_thread: int | None  # fragments only
    loc: Loc  # the allocation (or parameter annotation)


@dataclass
class OpInfo:
    op: str  # copy | gemm | reduce | fill | atomic | ...
    decision: str  # e.g. "cp.async 16B, 3 stages" / "mma.sync m16n8k16, 2×2 warps"
    loc: Loc


@dataclass
class Resources:
    target: str
    threads: int | None
    shared_bytes: int | None  # per block, after multi-buffering and planning (with reuse): what the launch requests
    shared_limit: int
    shared_breakdown: list[tuple[str, int]]  # (buffer name, bytes incl. stages) as planned
    regs_per_thread: int | None  # estimate, or ptxas's count when `measured`
    regs_per_block: int | None
    occupancy: float | None  # resident warps / max warps per SM
    blocks_per_sm: int | None
    limiting: str  # "shared memory" | "registers" | "threads" | "blocks"
    measured: bool = False  # True: registers, spills and shared memory are ptxas's figures
    source: str = "estimate"  # "estimate" | "ptxas, sm_90a"
    spill_stores: int | None = None  # bytes (measured only)
    spill_loads: int | None = None
    static_shared_bytes: int | None = None  # ptxas's static shared memory (measured only)
    dynamic_shared_bytes: int | None = None  # the planned dynamic block the launch requests
    register_arrays: list[tuple[str, int]] = field(default_factory=list)  # (name, 32-bit regs) per thread, lowered IR


@dataclass
class KernelInfo:
    function: str  # Python function name
    loc: Loc  # the `def` line
    kernel_loc: Loc | None  # the `with T.Kernel(...)` line
    bindings: dict[str, Any]  # compile-time values used
    unresolved: list[str]  # parameters with no value (shown symbolically)
    buffers: list[BufferInfo] = field(default_factory=list)
    ops: list[OpInfo] = field(default_factory=list)
    resources: Resources | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # one entry per `T.Kernel` block when the function has several (or T.alloc_global scratch):
    # each with its own kernel_loc, buffers, ops and resources; the fields above hold all the
    # buffers, ops and diagnostics, and the first kernel's location and resources
    kernels: list[KernelInfo] = field(default_factory=list)
    # with analyze_function(..., build_source=True) on CUDA: what a background ptxas run compiles
    # ({"source", "arch", "entry", "threads", "smem"}: the generated source of this very kernel)
    build: dict | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class GeneratedSource:
    function: str
    language: str  # "cuda" | "c" | "hip" | "metal", or "html" (the lowering trace page)
    extension: str  # "cu" | "c" | "hip" | "metal"
    text: str
    ptxas: dict | None = None  # {"registers", "spill_bytes", "spill_stores", "spill_loads", "shared_bytes", ...}


@dataclass
class BenchResult:
    function: str
    device: str  # e.g. "NVIDIA H200" or "CPU (c backend)"
    latency_ms: float
    tflops: float | None
    gbps: float | None
    note: str = ""
