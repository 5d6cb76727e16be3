"""The decision records of the target-neutral passes (`ir/decisions.py`), read off what each pass
produced — called by the pass itself on its own output, never by the analysis.

- `pipeline_records(before, after)`: inject_pipeline — each `T.Pipelined` loop's form and ring
  depth, and how each of its copies (and each lead copy before it) is issued.
- `gemm_records(func)`: infer_layout — each `T.gemm`'s instruction, K step and warp grid, from the
  accumulator fragment it fixed (a wgmma plan on sm_90a, else the mma.sync warp partition).
- `shared_plan_record(...)`: plan_shared_memory — offsets, sizes, which buffers share bytes.
"""

from __future__ import annotations

from typing import Any

from ..ir.decisions import (
    CopyDecision,
    GemmDecision,
    PipelineDecision,
    SharedBuffer,
    SharedPlan,
    span_key,
)
from ..ir.stmt import Copy, For, Gemm
from ..ir.visitor import Visitor, collect


class _CopyModes(Visitor):
    """Span key → (mode, dst buffer name) of every copy inject_pipeline made asynchronous."""

    def __init__(self) -> None:
        self.producer = 0
        self.modes: dict = {}

    def visit_For(self, n: For) -> None:
        role = n.annotations.get("tl.ws_role") == "producer"
        self.producer += role
        self.generic_visit(n)
        self.producer -= role

    def visit_Copy(self, n: Copy) -> None:
        from .inject_pipeline import LEAD_COPY

        if n.annotations.get(LEAD_COPY):
            mode = "tma_lead"
        elif "tma_barrier" in n.annotations:
            mode = "tma_ws" if self.producer else "tma"
        elif n.annotations.get("async"):
            mode = "cp.async"
        else:
            return
        self.modes.setdefault(span_key(n.span), (mode, n.dst.buffer.name))


def pipeline_records(before: Any, after: Any) -> list:
    """Records for each pipelined loop of `before` as `after` (inject_pipeline's output) runs it."""
    v = _CopyModes()
    v.visit(after.body)
    depths = dict(after.attrs.get("pipeline_stages", {}) or {})
    out: list = []
    recorded: set = set()
    for loop in collect(before.body, lambda n: isinstance(n, For) and n.kind == "pipelined"):
        copies = collect(loop.body, lambda n: isinstance(n, Copy))
        modes = [v.modes.get(span_key(c.span)) for c in copies]
        found = [m for m in modes if m is not None]
        depth = max([int(depths.get(name, 1)) for _, name in found] or [1])
        kinds = {m for m, _ in found}
        if "tma_ws" in kinds:
            form = "warp_specialized"
        elif found and depth == 1:
            form = "prefetch"
        elif "tma" in kinds:
            form = "tma"
        elif "cp.async" in kinds:
            form = "cp.async"
        else:
            form = "synchronous"
        out.append(PipelineDecision(loop.span, form, depth if found else 1))
        for c, m in zip(copies, modes):
            if m is not None and span_key(c.span) not in recorded:
                recorded.add(span_key(c.span))
                d = int(depths.get(m[1], 1))
                out.append(CopyDecision(c.span, m[0], d, prefetch=d == 1, by="inject_pipeline"))
    for key, (mode, _) in v.modes.items():  # lead copies: before their loop
        if mode == "tma_lead" and key not in recorded:
            span = next(c.span for c in collect(after.body, lambda n: isinstance(n, Copy)) if span_key(c.span) == key)
            out.append(CopyDecision(span, "tma_lead", 1, by="inject_pipeline"))
    return out


def gemm_records(func: Any) -> list:
    """One record per `T.gemm` of `func` (infer_layout's output), from its accumulator's layout."""
    from ..layout.gemm import mma_instruction, mma_k
    from .infer_layout import wgmma_plan_of

    layouts = dict(func.attrs.get("layout_map", {}) or {})
    out: list = []
    for g in collect(func.body, lambda n: isinstance(n, Gemm)):
        acc = layouts.get(g.C.buffer)
        if acc is None:
            continue
        plan = wgmma_plan_of(acc)
        if plan is not None:
            out.append(GemmDecision(g.span, "wgmma", plan.instruction, plan.inst_k, (plan.groups_m, plan.groups_n),
                                    "warpgroups", plan.a_major == "regs"))  # fmt: skip
            continue
        sg = acc.meta.get("simdgroup_grid") if hasattr(acc, "meta") else None
        if sg is not None:  # Metal (layout/simdgroup.py, backend/metal/gemm.py)
            out.append(GemmDecision(g.span, "simdgroup_matrix", "8x8x8", 8, tuple(sg), "simdgroups",
                                    g.A.buffer.is_fragment))  # fmt: skip
            continue
        mg = acc.meta.get("mfma_grid") if hasattr(acc, "meta") else None
        if mg is not None:  # HIP (layout/mfma.py, backend/hip/gemm.py)
            from ..layout.mfma import mfma_instruction

            ins = mfma_instruction(g.A.buffer.dtype, "gfx90a")
            out.append(GemmDecision(g.span, "mfma", ins.shape, ins.k, tuple(mg), "waves", g.A.buffer.is_fragment))
            continue
        grid = acc.meta.get("warp_grid") if hasattr(acc, "meta") else None
        if grid is None:
            continue
        adt = g.A.buffer.dtype
        out.append(GemmDecision(g.span, "mma.sync", mma_instruction(adt), mma_k(adt), tuple(grid), "warps",
                                g.A.buffer.is_fragment))  # fmt: skip
    return out


def shared_plan_record(placed: list, names: dict, total: int, reuse: bool) -> SharedPlan:
    """`placed`: plan_shared_memory's buffers (`buffer`, `offset`, `size`, `lo`, `hi`)."""
    from .plan_shared_memory import _live_together

    rows = []
    for b in sorted(placed, key=lambda b: b.order):
        shares = tuple(
            names[id(o.buffer)]
            for o in sorted(placed, key=lambda b: b.order)
            if o is not b
            and o.size
            and b.size
            and not _live_together(o, b)
            and o.offset < b.offset + b.size
            and b.offset < o.offset + o.size
        )
        rows.append(SharedBuffer(names[id(b.buffer)], b.offset, b.size, shares))
    return SharedPlan(total, tuple(rows), reuse)
