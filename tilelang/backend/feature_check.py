"""What a non-CUDA GPU target (HIP, Metal) has no form for, found in one walk of the tile-level IR.

The walk and the checks every such target makes the same way live here — the innermost source
line of each node, the CUDA-only hardware features (`T.ws`, TMA, mbarriers and explicit Hopper
synchronisation, thread-block clusters, `T.wgmma_gemm`), CUDA source pulled in by
`T.call_extern` / `T.import_source`, `T.rng_*` (the Philox header is CUDA's and the C backend's);
a target's checker (`hip/check_features.py`, `metal/check_features.py`) subclasses
`FeatureCheck` with its error class, its dtype rules, its gemm rules and `check_more` for what
else it lacks. Each finding is one `UnsupportedError` at the first use in source order.
"""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedError
from ..ir.dtype import DataType
from ..ir.expr import Call, PrimExpr
from ..ir.function import PrimFunc
from ..ir.node import Node
from ..ir.span import NO_SPAN, Span
from ..ir.stmt import Allocate, Gemm, KernelLaunch, SyncOp, TmaCopy, WarpSpecialize
from ..ir.visitor import Visitor

HINT_CUDA = "compile this kernel for target='cuda', or write it without this feature"


class FeatureCheck(Visitor):
    ERROR: type[UnsupportedError] = UnsupportedError  # "unsupported on <target>"
    NO_WARPGROUPS = ""  # why `T.ws` has no form on the target, for its message
    IMPORT_SOURCE = "T.import_source (CUDA source)"

    def __init__(self, span: Span) -> None:
        self.span = span  # the innermost statement with a line

    def err(self, feature: str, span: Span, hint: str = HINT_CUDA) -> UnsupportedError:
        return self.ERROR(feature, span, hint)

    def run(self, func: PrimFunc) -> PrimFunc:
        """Check the parameters' dtypes, `T.import_source` and the body; return `func`."""
        for p in func.params:
            sp = getattr(p, "span", NO_SPAN)
            self.dtype(p.dtype, sp if sp is not NO_SPAN and sp.line else func.span, f"parameter `{p.name}`")
        if func.attrs.get("import_source"):
            raise self.err(self.IMPORT_SOURCE, func.span)
        self.visit(func.body)
        return func

    def visit(self, node: Any) -> None:
        if isinstance(node, Node):
            sp = getattr(node, "span", None)
            outer = self.span
            if isinstance(sp, Span) and sp is not NO_SPAN and sp.line:
                self.span = sp
            try:
                self.check(node)
                super().visit(node)
            finally:
                self.span = outer
        else:
            super().visit(node)

    def dtype(self, dt: DataType, span: Span, what: str) -> None:
        """Raise when the target has no type for `dt` (of `what`, for the message)."""

    def gemm(self, g: Gemm, sp: Span) -> None:
        if "wgmma_wait" in g.annotations:
            raise self.err("T.wgmma_gemm (asynchronous wgmma)", sp, "use T.gemm")

    def check_more(self, n: Node, sp: Span) -> None:
        """The target's own checks of a node the shared ones do not cover."""

    def check(self, n: Node) -> None:
        sp = self.span
        if isinstance(n, Allocate):
            self.dtype(n.buffer.dtype, sp, f"buffer `{n.buffer.name}`")
            if n.buffer.scope == "shared.barrier" or n.annotations.get("arrive_counts"):
                raise self.err("mbarriers (T.alloc_barrier)", sp)
        elif isinstance(n, PrimExpr) and not isinstance(n, Call):
            dt = getattr(n, "dtype", None)
            if isinstance(dt, DataType):
                self.dtype(dt, sp, "an expression")
        if isinstance(n, KernelLaunch) and n.attrs.get("cluster_dims") is not None:
            raise self.err("thread-block clusters (T.ClusterKernel)", sp)
        elif isinstance(n, WarpSpecialize):
            raise self.err(f"T.ws warp specialization ({self.NO_WARPGROUPS})", sp)
        elif isinstance(n, TmaCopy):
            raise self.err("TMA copies (T.tma_copy)", sp, "use T.copy")
        elif isinstance(n, SyncOp):
            raise self.err(f"T.{n.kind} (explicit Hopper synchronisation)", sp, "let the compiler place barriers")
        elif isinstance(n, Gemm):
            self.gemm(n, sp)
        elif isinstance(n, Call):
            self.call(n, sp)
        else:
            self.check_more(n, sp)

    def call(self, c: Call, sp: Span) -> None:
        op = c.op
        if op.startswith("tl.philox") or op.startswith("tl.rng"):
            raise self.err("T.rng_* random numbers", sp, "generate the random tensor with torch and pass it in")
        if op in ("tl.call_extern", "tl.call_pure_extern"):
            raise self.err(f"T.call_extern (`{c.args[0].value}` is CUDA device code)", sp)
        if op == "tl.call" and isinstance(c.args[0].value, str) and not c.args[0].value.startswith("tl::shfl"):
            raise self.err(f"`{c.args[0].value}` (a CUDA library call)", sp)
