"""Layout summaries and lowering decisions shown to the user.

Requires: a traced PrimFunc and a target string. Guarantees: the text states
what the compiler decides for this kernel on this target — the result of
layout inference (`tilelang.transform.infer_layout`: gemm accumulators from
the instruction atom and the warp policy, register operands, fragments laid
out by T.Parallel loops, reductions and defaults, swizzles of gemm operand
tiles) — and never claims an instruction the target cannot run.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from ..ir.buffer import Buffer
from ..ir.expr import const_int
from ..ir.function import PrimFunc
from ..ir.stmt import Atomic, Copy, CumSum, Fill, For, Gemm, Reduce
from ..ir.visitor import Visitor
from .model import Loc, OpInfo
from .resources import kernel_of


@dataclass(frozen=True)
class LayoutDesc:
    summary: str
    detail: str


def _static_2d(buf: Buffer) -> tuple[int, int] | None:
    dims = [const_int(d) for d in buf.shape]
    if len(dims) < 2 or any(d is None for d in dims):
        return None
    return dims[-2], dims[-1]  # type: ignore[return-value]


def swizzle_bytes(buf: Buffer) -> int:
    """Bank-conflict-free swizzle width the CUDA layout rules pick for a gemm operand tile."""
    shape = _static_2d(buf)
    if shape is None:
        return 0
    row = shape[1] * buf.dtype.bytes
    for width in (128, 64, 32):
        if row % width == 0:
            return width
    return 0


def buffer_layouts(func: PrimFunc, target: str) -> dict[Buffer, LayoutDesc]:
    """What layout inference decides for each buffer on a GPU target: the inferred
    `Fragment` of every register tile (with the statement that decided it) and the
    `Layout` of every shared tile. Falls back to the gemm rules alone when the
    kernel cannot be laid out yet (symbolic tile sizes while typing, a conflict the
    compiler will report)."""
    if target == "c":
        return {}
    try:
        return _inferred_layouts(func, target)
    except Exception:  # noqa: BLE001 - an unfinished kernel still gets the gemm-derived hints
        return _gemm_layouts(func)


def _layout_ctx(target: str) -> dict:
    """The `infer_layout` context of the compiler for `target` (sm_90a: wgmma gemms)."""
    from ..backend.target import Target

    return {"target": Target("cuda", target)} if target.startswith("sm_") else {}


@functools.lru_cache(maxsize=4)
def _laid_out(func: PrimFunc, target: str) -> PrimFunc:
    """`func` after the compiler's layout inference for `target` — run once per analysed function,
    shared by the buffer hints and the gemm decisions (PrimFuncs hash by identity)."""
    from ..transform.infer_layout import infer_layout
    from ..transform.resolve_register_views import resolve_register_views
    from ..transform.view_layouts import view_layouts

    ctx = _layout_ctx(target)  # the CUDA pipeline's order: register views resolved, shared views share
    return view_layouts(infer_layout(resolve_register_views(func, ctx), ctx), ctx)


def _inferred_layouts(func: PrimFunc, target: str = "") -> dict[Buffer, LayoutDesc]:
    from ..layout import Fragment, Layout
    from ..transform.infer_layout import wgmma_plan_of

    kernel = kernel_of(func)
    threads = kernel.num_threads if kernel else 128
    laid = _laid_out(func, target)
    origin = laid.attrs.get("layout_origin", {}) or {}
    gemm_acc = {g.C.buffer: g for g in _gemms(func) if g.C.buffer.is_fragment}
    out: dict[Buffer, LayoutDesc] = {}
    for buf, lay in (laid.attrs.get("layout_map", {}) or {}).items():
        why = origin.get(buf, ("", None))[0]
        if isinstance(lay, Fragment):
            g = gemm_acc.get(buf)
            plan = wgmma_plan_of(lay)
            if g is not None and plan is not None:
                out[buf] = LayoutDesc(
                    f"wgmma {plan.instruction} accumulator, {plan.groups_m}×{plan.groups_n} warpgroups "
                    f"({4 * plan.groups_m * plan.groups_n} warps)",
                    _describe_cached(lay),
                )
                continue
            if g is not None and "warp_grid" in lay.meta:
                out[buf] = _accumulator_desc(g, buf, threads)
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

    for view, base in alias_roots(func.body, func.params).items():  # a register view: its base's registers
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


def _gemm_layouts(func: PrimFunc) -> dict[Buffer, LayoutDesc]:
    out: dict[Buffer, LayoutDesc] = {}
    kernel = kernel_of(func)
    threads = kernel.num_threads if kernel else 128
    for g in _gemms(func):
        for r in (g.A, g.B):
            buf = r.buffer
            if buf.is_shared and buf not in out:
                sw = swizzle_bytes(buf)
                out[buf] = LayoutDesc(f"swizzle {sw}B" if sw else "row-major", _swizzle_detail(buf, sw))
        acc = g.C.buffer
        if acc.is_fragment and acc not in out:
            out[acc] = _accumulator_desc(g, acc, threads)
    return out


def _swizzle_detail(buf: Buffer, sw: int) -> str:
    if not sw:
        return "row-major (no swizzle: the row is narrower than 32 bytes)"
    chunks = sw // 16
    rows = "row" if sw == 128 else f"(row // {128 // sw})"
    return (
        f"{sw}-byte XOR swizzle: within each {sw}-byte row segment the 16-byte chunk index is XORed with "
        f"{rows} mod {chunks} (the TMA/wgmma {sw}B pattern), so the 8 rows read by one ldmatrix phase hit distinct banks"
    )


def _accumulator_desc(g: Gemm, acc: Buffer, threads: int) -> LayoutDesc:
    shape = _static_2d(acc)
    if shape is None:
        return LayoutDesc("mma accumulator (symbolic shape)", "")
    return _accumulator_desc_cached(shape[0], shape[1], max(1, threads // 32), g.policy, str(acc.dtype))


@functools.lru_cache(maxsize=256)
def _accumulator_desc_cached(m: int, n: int, warps: int, policy: str, dtype: str) -> LayoutDesc:
    # Rendering a full thread/register map enumerates the tile: done once per shape,
    # not on every keystroke of the language server.
    from ..layout import gemm_warp_partition, make_mma_accumulator_fragment

    try:
        wm, wn = gemm_warp_partition(m, n, warps, policy)
        frag = make_mma_accumulator_fragment(m, n, warps, policy, dtype)
    except ValueError as err:
        return LayoutDesc(f"invalid warp partition: {err}", "")
    return LayoutDesc(f"{warps} warps {wm}×{wn}", frag.describe())


def _gemms(func: PrimFunc) -> list[Gemm]:
    from ..ir.visitor import collect

    return collect(func.body, lambda n: isinstance(n, Gemm))


class _Decisions(Visitor):
    def __init__(self, target: str, stages: dict, func: PrimFunc | None = None) -> None:
        self.target = target
        self.func = func
        self.laid: dict | None = None
        self.stages = stages
        self.pipeline: int | None = None
        self.ops: list[OpInfo] = []
        self.threads = 128
        self._modes: dict | None = None

    def add(self, op: str, decision: str, node: Any) -> None:
        self.ops.append(OpInfo(op, decision, Loc.of(node.span)))

    def visit_For(self, node: For) -> None:
        prev = self.pipeline
        if node.kind == "pipelined":
            self.pipeline = int(node.annotations.get("num_stages", 0) or 0)
        self.generic_visit(node)
        self.pipeline = prev

    def visit_KernelLaunch(self, node: Any) -> None:
        self.threads = node.num_threads
        schedule = self.schedule(node)
        if schedule:
            self.add("kernel", schedule, node)
        self.generic_visit(node)

    def visit_Copy(self, node: Copy) -> None:
        s, d = node.src.buffer, node.dst.buffer
        if self.target == "c":
            self.add("copy", "element loop (CPU)", node)
            return
        if s.scope == "global" and d.is_shared:
            width = 16 if (d.dtype.bytes * (const_int(node.dst.extents[-1]) or 1)) % 16 == 0 else d.dtype.bytes
            # a copy before a pipelined loop may be one its producer warpgroup issues
            lead_ok = self.pipeline is None and self.func is not None and _has_pipeline(self.func)
            mode = self.copy_modes().get(_span_key(node.span)) if self.pipeline or lead_ok else None
            if mode == "lead":
                self.add("copy", "TMA, producer warpgroup, before the loop's first trip", node)
                return
            stages = f"{self.pipeline} stage{'s' if self.pipeline and self.pipeline > 1 else ''}"
            ahead = ", next tile prefetched" if self.pipeline == 1 else ""
            if mode == "ws":
                self.add("copy", f"TMA, {stages}, producer warpgroup", node)
            elif mode == "tma":
                self.add("copy", f"TMA, {stages}{ahead}", node)
            elif mode == "cp.async":
                self.add("copy", f"cp.async {width}B, {stages}{ahead}", node)
            else:
                self.add("copy", f"global→shared, {width}B vectors", node)
        elif s.is_shared and d.scope == "global" and self.copy_modes().get(_span_key(node.span)) == "tma_store":
            self.add("copy", "TMA store", node)
        elif s.is_fragment and d.scope == "global":
            self.add("copy", "fragment→global, vectorized stores", node)
        elif s.is_fragment and d.is_fragment:
            self.add("copy", "register conversion" + (f" {s.dtype}→{d.dtype}" if s.dtype is not d.dtype else ""), node)
        else:
            self.add("copy", f"{s.scope}→{d.scope} element loop", node)

    def visit_Gemm(self, node: Gemm) -> None:
        if self.target == "c":
            self.add("gemm", "blocked loop nest (CPU)", node)
            return
        plan = self.wgmma_plan(node)
        if plan is not None:
            how = f"wgmma {plan.instruction}, {plan.groups_m}×{plan.groups_n} warpgroups"
            self.add("gemm", how + (", A from registers" if plan.a_major == "regs" else ""), node)
            return
        acc = node.C.buffer
        shape = _static_2d(acc)
        warps = max(1, self.threads // 32)
        a = node.A.buffer.dtype
        k = 32 if a.bits == 8 else (8 if a.bits == 32 else 16)
        inst = f"mma.sync m16n8k{k}"
        if shape is None:
            self.add("gemm", inst, node)
            return
        from ..layout import gemm_warp_partition

        try:
            wm, wn = gemm_warp_partition(shape[0], shape[1], warps, node.policy)
            self.add(
                "gemm", f"{inst}, {wm}×{wn} warps" + (", A from registers" if node.A.buffer.is_fragment else ""), node
            )
        except ValueError as err:
            self.add("gemm", f"{inst}: {err}", node)

    def wgmma_plan(self, node: Gemm) -> Any:
        """The wgmma plan layout inference records for this gemm on sm_90a (None: mma.sync)."""
        if self.target != "sm_90a" or self.func is None:
            return None
        if self.laid is None:
            try:
                self.laid = _laid_out(self.func, self.target).attrs.get("layout_map") or {}
            except Exception:  # noqa: BLE001 - an unfinished kernel: the compiler reports the error
                self.laid = {}
        from ..transform.infer_layout import wgmma_plan_of

        return wgmma_plan_of(self.laid.get(node.C.buffer))

    def copy_modes(self) -> dict:
        """How the compiler issues each global → shared copy of a pipelined loop ("tma", "ws":
        TMA from a producer warpgroup, "cp.async"; absent: synchronous) and which shared → global
        copies are TMA stores ("tma_store"), keyed by source position — read from what
        inject_pipeline and plan_tma_stores do to this function, not re-derived."""
        if self._modes is None:
            self._modes = {}
            if self.target.startswith("sm_") and self.func is not None:
                from ..backend.cuda.tma_store import plan_tma_stores
                from ..transform.infer_layout import infer_layout
                from ..transform.inject_pipeline import inject_pipeline
                from ..transform.simplify import simplify

                ctx = _layout_ctx(self.target)
                try:  # the first passes of backend/cuda/pipeline.py
                    f = infer_layout(simplify(self.func, ctx), ctx)
                    f = plan_tma_stores(inject_pipeline(f, ctx), ctx)
                except Exception:  # noqa: BLE001 - an unfinished kernel: the compiler reports the error
                    return self._modes
                self._modes = _copy_modes(f.body)
        return self._modes

    def schedule(self, node: Any) -> str:
        """The block schedule the CUDA backend picks for kernel `node` (persistent, panel order)."""
        if not self.target.startswith("sm_") or self.func is None:
            return ""
        from ..backend.cuda.auto_persistent import TILE_WALK, auto_persistent
        from ..backend.cuda.auto_rasterize import PANEL, wants_rasterization

        if node is kernel_of(self.func) and row_split_kernel(self.func, self.target) is not None:
            return "rows in two halves (its register tiles exceed 255 per thread): wgmma per half, K/V tiles shared"
        try:
            persistent = auto_persistent(self.func, _layout_ctx(self.target))
        except Exception:  # noqa: BLE001 - an unfinished kernel: the compiler reports the error
            return ""
        if persistent is not self.func:
            k = kernel_of(persistent)
            tiles = 1
            for g in node.grid:
                tiles *= const_int(g) or 1
            blocks = const_int(k.grid[0]) if k is not None else None
            staged = _shared_allocs(persistent) > _shared_allocs(self.func)  # the epilogue tile was added
            walk = k.attrs.get(TILE_WALK, "in row panels") if k is not None else "in row panels"
            return f"persistent: {blocks} resident blocks walk {tiles} tiles {walk}" + (
                ", epilogue through shared memory (TMA store)" if staged else ""
            )
        if wants_rasterization(node):
            return f"block order: panels of {PANEL} block rows (L2 reuse)"
        return ""

    def visit_Reduce(self, node: Reduce) -> None:
        how = "loop (CPU)" if self.target == "c" else "warp shuffles + shared memory across warps"
        self.add("reduce", f"reduce_{node.kind} dim={node.dim}: {how}", node)

    def visit_Fill(self, node: Fill) -> None:
        return

    def visit_CumSum(self, node: CumSum) -> None:
        self.add("cumsum", "sequential scan" if self.target == "c" else "scan through shared memory", node)

    def visit_Atomic(self, node: Atomic) -> None:
        self.add("atomic", f"atomic {node.kind} ({node.dst.buffer.dtype})", node)


def _span_key(span: Any) -> tuple:
    return (getattr(span, "file", None), getattr(span, "line", None), getattr(span, "col", None))


def _copy_modes(body: Any) -> dict:
    """Source position -> "ws" / "tma" / "cp.async" / "lead" (a copy before the loop that its
    producer warpgroup issues) for the copies inject_pipeline made asynchronous."""
    from ..ir.visitor import Visitor
    from ..transform.inject_pipeline import LEAD_COPY

    modes: dict = {}

    class _Walk(Visitor):
        producer = 0

        def visit_For(self, n: For) -> None:
            role = n.annotations.get("tl.ws_role") == "producer"
            self.producer += role
            self.generic_visit(n)
            self.producer -= role

        def visit_Copy(self, n: Copy) -> None:
            if n.annotations.get("tma_store"):
                modes[_span_key(n.span)] = "tma_store"
            elif n.annotations.get(LEAD_COPY):
                modes[_span_key(n.span)] = "lead"
            elif "tma_barrier" in n.annotations:
                modes[_span_key(n.span)] = "ws" if self.producer else "tma"
            elif n.annotations.get("async"):
                modes.setdefault(_span_key(n.span), "cp.async")

    _Walk().visit(body)
    return modes


@functools.lru_cache(maxsize=4)
def _has_pipeline(func: PrimFunc) -> bool:
    from ..ir.visitor import collect

    return bool(collect(func.body, lambda n: isinstance(n, For) and n.kind == "pipelined"))


def _shared_allocs(func: PrimFunc) -> int:
    from ..ir.stmt import Allocate
    from ..ir.visitor import collect

    return len(collect(func.body, lambda n: isinstance(n, Allocate) and n.buffer.is_shared))


def op_decisions(func: PrimFunc, target: str, stages: dict) -> list[OpInfo]:
    v = _Decisions(target, stages, func)
    v.visit(func.body)
    return v.ops


@functools.lru_cache(maxsize=4)
def row_split_kernel(func: PrimFunc, target: str) -> Any:
    """`func`'s kernel as the compiler's split_rows rewrites it for `target`, or None when it
    stays whole — run once per analysed function (PrimFuncs hash by identity)."""
    from ..transform.split_rows import row_split_enabled, split_kernel

    kernel = kernel_of(func)
    if kernel is None or not row_split_enabled(func, _layout_ctx(target)):
        return None
    try:
        return split_kernel(kernel)
    except Exception:  # noqa: BLE001 - an unfinished kernel: the compiler reports the error
        return None
