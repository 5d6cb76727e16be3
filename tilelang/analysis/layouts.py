"""Layout summaries and lowering decisions shown to the user — read from the compiler.

Requires: a traced PrimFunc and the `Compiled` result of the target's own pipeline on it
(`analysis/compiled.py`). Guarantees: every layout is the one layout inference fixed
(`attrs["layout_map"]` of `infer_layout`'s output, with the statement that decided it), and every
decision is a record a pass left on the IR (`ir/decisions.py`: copy modes, gemm instructions and
warp grids, block schedules); where the pipeline stopped before a pass, nothing is claimed for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..ir.buffer import Buffer
from ..ir.decisions import CopyDecision, Decisions, GemmDecision, ScheduleDecision
from ..ir.function import PrimFunc
from ..ir.stmt import Atomic, Copy, CumSum, Fill, Gemm, Reduce
from ..ir.visitor import Visitor
from .compiled import Compiled
from .model import Loc, OpInfo


@dataclass(frozen=True)
class LayoutDesc:
    summary: str
    detail: str


def buffer_layouts(compiled: Compiled) -> dict[Buffer, LayoutDesc]:
    """What layout inference decided for each buffer (empty where it did not run: the C target,
    or a kernel the pipeline stopped on before `infer_layout`)."""
    from ..layout import Fragment, Layout
    from ..transform.infer_layout import wgmma_plan_of

    laid = compiled.after("view_layouts") or compiled.after("infer_layout")  # views share their base's layout
    if laid is None:
        return {}
    origin = laid.attrs.get("layout_origin", {}) or {}
    out: dict[Buffer, LayoutDesc] = {}
    for buf, lay in (laid.attrs.get("layout_map", {}) or {}).items():
        why = origin.get(buf, ("", None))[0]
        if isinstance(lay, Fragment):
            plan = wgmma_plan_of(lay)
            grid = lay.meta.get("warp_grid")
            if plan is not None:
                out[buf] = LayoutDesc(
                    f"wgmma {plan.instruction} accumulator, {plan.groups_m}×{plan.groups_n} warpgroups "
                    f"({4 * plan.groups_m * plan.groups_n} warps)",
                    _describe_cached(lay),
                )
                continue
            if grid is not None and "accumulator" in str(lay.meta.get("origin", "")):
                wm, wn = grid
                out[buf] = LayoutDesc(f"{wm * wn} warps {wm}×{wn}", _describe_cached(lay))
                continue
            rep = lay.replicate_size
            summary = why or str(lay.meta.get("origin", "fragment"))
            if rep > 1:
                summary += f" · ×{rep} replicas"
            out[buf] = LayoutDesc(summary, _describe_cached(lay))
        elif isinstance(lay, Layout) and buf.is_shared:
            label = lay.meta.get("swizzle")
            if label and label != "none":
                out[buf] = LayoutDesc(f"swizzle {label}", _swizzle_detail(buf, int(str(label).rstrip("B"))))
            elif lay.meta.get("padded"):
                out[buf] = LayoutDesc(
                    "padded rows", f"rows padded to {lay.output_shape[-1]} elements (16-byte aligned, odd)"
                )
            else:
                out[buf] = LayoutDesc("row-major", "row-major" + (f" ({why})" if why and why != "row-major" else ""))
    from ..transform.view_alias import alias_roots

    traced = compiled.after("verify") or laid  # before resolve_register_views folds register views away
    for view, base in alias_roots(traced.body, traced.params).items():  # a register view: its base's registers
        if view not in out and base in out and view.is_local:
            out[view] = LayoutDesc(f"view of {base.name}: {out[base].summary}", out[base].detail)
    return out


_DESCRIBED: dict = {}


def _describe_cached(lay) -> str:
    """`describe()` enumerates the tile: memoised by the map's text (same map, same picture)."""
    key = repr(lay)
    hit = _DESCRIBED.get(key)
    if hit is None:
        try:
            hit = lay.describe()
        except ValueError:
            hit = key
        if len(_DESCRIBED) > 512:
            _DESCRIBED.clear()
        _DESCRIBED[key] = hit
    return hit


def _swizzle_detail(buf: Buffer, sw: int) -> str:
    if not sw:
        return "row-major (no swizzle: the row is narrower than 32 bytes)"
    chunks = sw // 16
    rows = "row" if sw == 128 else f"(row // {128 // sw})"
    return (
        f"{sw}-byte XOR swizzle: within each {sw}-byte row segment the 16-byte chunk index is XORed with "
        f"{rows} mod {chunks} (the TMA/wgmma {sw}B pattern), so the 8 rows read by one ldmatrix phase hit distinct banks"
    )


SCHEDULE_TEXT = {
    "row_split": "rows in two halves (its register tiles exceed 255 per thread): wgmma per half, K/V tiles shared",
    "heavy_first": "block order: bx reversed, longest blocks first",
}


def schedule_text(r: ScheduleDecision) -> str:
    if r.kind == "persistent":
        return f"persistent: {r.blocks} resident blocks walk {r.tiles} tiles {r.walk}" + (
            ", epilogue through shared memory (TMA store)" if r.epilogue_tma_store else ""
        )
    if r.kind == "rasterize":
        return f"block order: panels of {r.panel} block rows (L2 reuse)"
    return SCHEDULE_TEXT.get(r.kind, r.kind)


def copy_text(r: CopyDecision) -> str:
    stages = f"{r.stages} stage{'s' if r.stages > 1 else ''}"
    ahead = ", next tile prefetched" if r.prefetch else ""
    if r.mode == "tma_lead":
        return "TMA, producer warpgroup, before the loop's first trip"
    if r.mode == "tma_ws":
        return f"TMA, {stages}, producer warpgroup"
    if r.mode == "tma":
        return f"TMA, {stages}{ahead}"
    if r.mode == "cp.async":
        width = f" {r.access_bytes}B" if r.access_bytes else ""
        return f"cp.async{width}, {stages}{ahead}"
    if r.mode == "tma_store":
        return "TMA store"
    if r.mode == "vector":
        return f"global→shared, {r.access_bytes}B vectors"
    return "global→shared, element loop"


def gemm_text(r: GemmDecision) -> str:
    regs = ", A from registers" if r.a_in_registers else ""
    return f"{r.family} {r.instruction}, {r.grid[0]}×{r.grid[1]} {r.unit}{regs}"


class _Decisions(Visitor):
    """The traced kernel's ops in program order, each with the record its pass left (by span)."""

    def __init__(self, target: str, decisions: Decisions, lowered: bool) -> None:
        self.target = target
        self.d = decisions
        self.lowered = lowered  # the pipeline ran through lower_threads: synchronous copies are known
        self.ops: list[OpInfo] = []
        self.kernels = 0

    def add(self, op: str, decision: str, node: Any) -> None:
        self.ops.append(OpInfo(op, decision, Loc.of(node.span)))

    def visit_KernelLaunch(self, node: Any) -> None:
        from ..ir.decisions import span_key

        for r in self.d.schedules:
            if span_key(r.span) == span_key(node.span):
                self.add("kernel", schedule_text(r), node)
        self.generic_visit(node)

    def visit_Copy(self, node: Copy) -> None:
        s, d = node.src.buffer, node.dst.buffer
        if self.target == "c":
            self.add("copy", "element loop (CPU)", node)
            return
        r = self.d.copy_at(node.span)
        if r is not None and (r.mode != "element" or self.lowered):
            self.add("copy", copy_text(r), node)
        elif s.is_fragment and d.scope == "global":
            # Metal runs no vector-load pass (backend/metal/lower_threads.py): element stores
            self.add("copy", "fragment→global, " + ("element stores" if self.target == "metal" else "vectorized stores"),
                     node)  # fmt: skip
        elif s.is_fragment and d.is_fragment:
            self.add("copy", "register conversion" + (f" {s.dtype}→{d.dtype}" if s.dtype is not d.dtype else ""), node)
        elif not (s.scope == "global" and d.is_shared):
            self.add("copy", f"{s.scope}→{d.scope} element loop", node)

    def visit_Gemm(self, node: Gemm) -> None:
        if self.target == "c":
            self.add("gemm", "blocked loop nest (CPU)", node)
            return
        r = self.d.gemm_at(node.span)
        if r is not None:
            self.add("gemm", gemm_text(r), node)

    def visit_Reduce(self, node: Reduce) -> None:
        how = {"c": "loop (CPU)", "metal": "SIMD-group shuffles + threadgroup memory across SIMD-groups"}.get(
            self.target, "warp shuffles + shared memory across warps"
        )
        self.add("reduce", f"reduce_{node.kind} dim={node.dim}: {how}", node)

    def visit_Fill(self, node: Fill) -> None:
        return

    def visit_CumSum(self, node: CumSum) -> None:
        self.add("cumsum", "sequential scan" if self.target == "c" else "scan through shared memory", node)

    def visit_Atomic(self, node: Atomic) -> None:
        self.add("atomic", f"atomic {node.kind} ({node.dst.buffer.dtype})", node)


def op_decisions(func: PrimFunc, target: str, compiled: Compiled) -> list[OpInfo]:
    v = _Decisions(target, compiled.decisions, compiled.after("lower_threads") is not None)
    v.visit(func.body)
    return v.ops
