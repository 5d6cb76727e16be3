"""check_hip_features: what the HIP target has no form for is one clear error at its line.

Requires: tile-level IR (after `verify`), `ctx.target` a HIP `Target`.

Guarantees (the input is returned unchanged): an error when the target's processor is not
one of `target.HIP_ARCHES` (an RDNA GPU found by "auto": waves of 32, no MFMA), and a `HipUnsupportedError` (an `UnsupportedError`)
`file:line:col: unsupported on HIP: <feature> — <what to do>` at the first (in source order)
use of

* a dtype this backend generates no code for: fp8 (`float8_*`: MFMA fp8 exists on gfx94x only
  and is not implemented here), the packed 4-bit types;
* an NVIDIA-only hardware feature: `T.ws` warp specialization, TMA copies, mbarriers and the
  other explicit Hopper synchronisation, `T.wgmma_gemm`, thread-block clusters;
* what the HIP lowering has no rule for: `T.rng_*` (the Philox header is CUDA's), `T.im2col`,
  `T.call_extern` / `T.import_source` (CUDA source), atomics with a memory order other than
  relaxed, `T.gemm` on dtypes MFMA has no 16x16 form for here (see `gemm.py`).

Why one pass: every later pass may assume a kernel HIP can express, and the user gets one
error naming the feature, not a compiler failure deep in clang."""

from __future__ import annotations

from typing import Any

from ...errors import UnsupportedError
from ...ir.dtype import DataType
from ...ir.expr import Call, PrimExpr
from ...ir.function import PrimFunc
from ...ir.node import Node
from ...ir.span import NO_SPAN, Span
from ...ir.stmt import Allocate, Atomic, Gemm, KernelLaunch, SyncOp, TmaCopy, WarpSpecialize
from ...ir.visitor import Visitor
from ...transform.context import CompileContext
from ..target import HIP_ARCHES, target_of

HINT_CUDA = "compile this kernel for target='cuda', or write it without this feature"
# operand dtypes of the MFMA forms gemm.py emits (C: float32 / int32)
GEMM_OPERAND_DTYPES = ("float16", "bfloat16", "float32", "int8")


class HipUnsupportedError(UnsupportedError):
    """A feature HIP has no form for here: `file:line:col: unsupported on HIP: <feature> — <hint>`."""

    kind = "unsupported on HIP"


def _err(feature: str, span: Span, hint: str = HINT_CUDA) -> UnsupportedError:
    return HipUnsupportedError(feature, span, hint)


def check_hip_features(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    target = target_of(func, ctx)
    if target is not None and target.arch not in HIP_ARCHES:  # e.g. "auto" on an RDNA GPU
        raise _err(f"AMD processor {target.arch} (this backend generates code for {', '.join(HIP_ARCHES)}: "
                   "CDNA waves of 64 with MFMA)", func.span,
                   'pass target={"kind": "hip", "arch": "gfx90a"} to compile for an Instinct GPU')  # fmt: skip
    checker = _Check(func.span)
    for p in func.params:
        sp = getattr(p, "span", NO_SPAN)
        checker.dtype(p.dtype, sp if sp is not NO_SPAN and sp.line else func.span, f"parameter `{p.name}`")
    if func.attrs.get("import_source"):
        raise _err("T.import_source (CUDA source)", func.span)
    checker.visit(func.body)
    return func


class _Check(Visitor):
    def __init__(self, span: Span) -> None:
        self.span = span  # the innermost statement with a line

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
        base = dt.element_of()
        if base.is_float8:
            raise _err(f"{base} ({what}): fp8 is not implemented for HIP", span, "use float16 or bfloat16")
        if base.bits < 8 and base.bits != 1:
            raise _err(f"{base} ({what}): packed 4-bit types are not implemented for HIP", span,
                       "use int8 / float16 tensors")  # fmt: skip

    def check(self, n: Node) -> None:
        sp = self.span
        if isinstance(n, Allocate):
            self.dtype(n.buffer.dtype, sp, f"buffer `{n.buffer.name}`")
            if n.buffer.scope == "shared.barrier" or n.annotations.get("arrive_counts"):
                raise _err("mbarriers (T.alloc_barrier)", sp)
        elif isinstance(n, PrimExpr) and not isinstance(n, Call):
            dt = getattr(n, "dtype", None)
            if isinstance(dt, DataType):
                self.dtype(dt, sp, "an expression")
        if isinstance(n, KernelLaunch) and n.attrs.get("cluster_dims") is not None:
            raise _err("thread-block clusters (T.ClusterKernel)", sp)
        elif isinstance(n, WarpSpecialize):
            raise _err("T.ws warp specialization (no warpgroups or register re-balancing on AMD)", sp)
        elif isinstance(n, TmaCopy):
            raise _err("TMA copies (T.tma_copy)", sp, "use T.copy")
        elif isinstance(n, SyncOp):
            raise _err(f"T.{n.kind} (explicit Hopper synchronisation)", sp, "let the compiler place barriers")
        elif isinstance(n, Gemm):
            self.gemm(n, sp)
        elif isinstance(n, Atomic):
            if n.memory_order not in (None, "relaxed"):
                raise _err(f"memory_order={n.memory_order!r} on T.atomic_{n.kind}", sp,
                           "drop memory_order, and order with barriers")  # fmt: skip
        elif type(n).__name__ == "Im2Col":
            raise _err("T.im2col", sp, "write the gather as a T.Parallel loop, or compile for target='cuda'")
        elif isinstance(n, Call):
            self.call(n, sp)

    def gemm(self, g: Gemm, sp: Span) -> None:
        if "wgmma_wait" in g.annotations:
            raise _err("T.wgmma_gemm (asynchronous wgmma)", sp, "use T.gemm")
        adt, bdt, cdt = (r.buffer.dtype.element_of() for r in (g.A, g.B, g.C))
        if adt.base not in GEMM_OPERAND_DTYPES or bdt is not adt:
            raise _err(f"T.gemm on {adt} x {bdt}: MFMA is used here for float16, bfloat16, float32 and int8 "
                       "operands of one dtype", sp, "cast the operands to float16 / bfloat16")  # fmt: skip
        want = "int32" if adt.base == "int8" else "float32"
        if cdt.base != want and not (adt.base == "float16" and cdt.base == "float16"):
            raise _err(f"T.gemm accumulating {adt} into {cdt}: MFMA accumulates {adt} in {want}", sp,
                       f"use a {want} accumulator and cast afterwards")  # fmt: skip

    def call(self, c: Call, sp: Span) -> None:
        op = c.op
        if op.startswith("tl.philox") or op.startswith("tl.rng"):
            raise _err("T.rng_* random numbers", sp, "generate the random tensor with torch and pass it in")
        if op in ("tl.call_extern", "tl.call_pure_extern"):
            raise _err(f"T.call_extern (`{c.args[0].value}` is CUDA device code)", sp)
        if op == "tl.call" and isinstance(c.args[0].value, str) and not c.args[0].value.startswith("tl::shfl"):
            raise _err(f"`{c.args[0].value}` (a CUDA library call)", sp)
