"""plan_shared_memory: place every shared buffer of the kernel in one dynamic shared-memory block.

Requires: a PrimFunc with one `KernelLaunch` whose shared buffers (`shared`,
`shared.dyn`, `shared.barrier`) have constant shapes, declared by
`Allocate` anywhere inside it. Works on tile-level IR (after
`inject_pipeline`, so multi-buffered shapes are final) and on lowered IR.
Reads `func.attrs["layout_map"]` (Buffer → layout) for alignments and
`pass_configs["tl.disable_shared_memory_reuse"]` (in `ctx` or in
`func.attrs["pass_configs"]`); `tl.debug_merge_shared_memory_allocations` prints
the plan (offsets, sizes, live statement ranges) to stderr.

Guarantees (the input is never modified):

* `func.attrs["smem_offsets"]`: buffer name → byte offset inside the block
  (a name declared twice gets `_1`, `_2`, ... like the IR printer), and
  `func.attrs["smem_bytes"]`: the block's size (end of the highest buffer);
  0 and `{}` for a kernel without shared memory.
* sizes are `numel × bits / 8` rounded up to whole bytes; `shared.barrier`
  buffers take an 8-byte slot per mbarrier.
* alignment: a buffer whose layout is a hardware swizzle (`SwizzleMode`
  recognised by `detect_swizzle_mode`, or recorded in the layout's meta)
  gets `SwizzleMode.smem_alignment()` (1024 bytes for 128B swizzles);
  another operand of a tile-level `T.gemm` gets 128; barriers 8; anything
  else 16.
* lifetimes are intervals over the kernel body's top-level statements
  (nested sequences flattened; a `For(kind="thread")` that wraps the whole
  body is looked through): from the first to the last statement that uses
  the buffer. A use anywhere inside a loop or a branch counts as a use of
  that whole top-level statement, so a buffer used in a loop lives for the
  whole loop, and buffers used only in different branches of one `if` do
  *not* share space (the branch condition is not analysed). Buffers whose
  lifetimes are disjoint may share bytes; placement is first-fit by
  decreasing size (ties: declaration order). With reuse disabled every
  buffer gets its own bytes, in declaration order. Barriers never share.
* a view (`Allocate` annotated `view_of`, `view_alias.py`) owns no bytes: its name gets its
  base's offset, and its uses extend its base's lifetime.
* wherever two buffers share bytes, a `T.tl.sync_threads()` separates the
  last use of the first from the first use of the second: an existing
  top-level barrier between them is reused, otherwise one is inserted right
  before the statement that starts the second lifetime (this pass runs after
  `inject_sync`, which does not know about aliasing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import DSLError
from ..ir.buffer import Buffer
from ..ir.decisions import SharedPlan, record
from ..ir.expr import const_int
from ..ir.function import PrimFunc
from ..ir.node import FrozenDict
from ..ir.stmt import Allocate, AnnotateLayout, For, Gemm, KernelLaunch, SeqStmt, Stmt, stmts_of
from ..ir.visitor import SplicingMutator, Visitor, collect
from ..pass_config import in_force
from .context import CompileContext
from .inject_sync import is_sync, make_sync
from .record_decisions import shared_plan_record
from .view_alias import alias_roots, is_view

SHARED_SCOPES = ("shared", "shared.dyn", "shared.barrier")
REUSE_KEY = "tl.disable_shared_memory_reuse"
DEBUG_KEY = "tl.debug_merge_shared_memory_allocations"
DEFAULT_ALIGN = 16
GEMM_ALIGN = 128
BARRIER_BYTES = 8


@dataclass
class _Buf:
    buffer: Buffer
    alloc: Allocate
    order: int
    size: int
    align: int
    lo: int
    hi: int
    used: bool
    offset: int = 0


def plan_shared_memory(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    reuse = not in_force(func, ctx).get(REUSE_KEY)
    kernels = collect(func.body, lambda n: isinstance(n, KernelLaunch))
    if not kernels:
        return record(func.with_attrs(smem_offsets=FrozenDict(), smem_bytes=0), SharedPlan(0, (), reuse))
    kernel = kernels[0]
    units = _units(kernel.body)
    roots = alias_roots(kernel.body, func.params)  # views own no bytes: they get their base's offset
    bufs = _buffers(func, units, roots)
    if not reuse:
        for b in bufs:
            b.lo, b.hi = 0, len(units)
    _place(bufs, by_size=reuse)
    total = max((b.offset + b.size for b in bufs), default=0)
    declared = [a.buffer for a in collect(kernel.body, lambda n: isinstance(n, Allocate))]
    names = _unique_names([b for b in declared if b.scope in SHARED_SCOPES])  # views too: codegen counts them
    at = {b.buffer: b.offset for b in bufs}
    placed = sorted(bufs, key=lambda b: b.order)
    offsets = {names[id(b.buffer)]: b.offset for b in placed}
    offsets.update({names[id(v)]: at[r] for v, r in roots.items() if v.scope in SHARED_SCOPES and r in at})
    offsets = FrozenDict(offsets)

    targets = _barriers_needed(bufs, units) if reuse else []
    body = func.body
    if targets:
        body = _InsertSync({id(u) for u in targets}).visit(body)
    out = func if body is func.body else func.with_body(body)
    if in_force(func, ctx).get(DEBUG_KEY):
        _report(func.name, bufs, names, units, total, reuse)
    plan = shared_plan_record(bufs, names, total, reuse)  # what the launcher requests, and what shares bytes
    return record(out.with_attrs(smem_offsets=offsets, smem_bytes=total), plan)


def _report(kernel: str, bufs: list, names: dict, units: list, total: int, reuse: bool) -> None:
    """`tl.debug_merge_shared_memory_allocations`: the plan, one buffer per line, on stderr."""
    import sys

    lines = [f"[tilelang] shared memory plan of `{kernel}`: {total} bytes, reuse {'on' if reuse else 'off'}"]
    for b in sorted(bufs, key=lambda b: b.offset):
        live = f"statements {b.lo}..{b.hi}" if reuse else "whole kernel"
        lines.append(f"  {names[id(b.buffer)]:<20} [{b.offset:>7}, {b.offset + b.size:>7})  {live}")
    print("\n".join(lines), file=sys.stderr)


# --------------------------------------------------------------------------
# Statements and buffers
# --------------------------------------------------------------------------


def _units(body: Stmt) -> list:
    """The kernel body's top-level statements (sequences flattened, a wrapping
    thread-binding loop looked through)."""
    flat: list = []
    for s in stmts_of(body):
        if isinstance(s, SeqStmt):
            flat.extend(_units(s))
        else:
            flat.append(s)
    work = [s for s in flat if not isinstance(s, Allocate)]
    if len(work) == 1 and isinstance(work[0], For) and work[0].kind == "thread":
        i = next(k for k, s in enumerate(flat) if s is work[0])
        return flat[:i] + _units(work[0].body) + flat[i + 1 :]
    return flat


class _Uses(Visitor):
    def __init__(self) -> None:
        self.found: set = set()
        self.allocs: list = []

    def visit_Buffer(self, b: Buffer) -> None:
        self.found.add(b)

    def visit_Allocate(self, n: Allocate) -> None:
        self.allocs.append(n)
        if n.init is not None:
            self.visit(n.init)

    def visit_AnnotateLayout(self, n: AnnotateLayout) -> None:
        pass  # pinning a layout is not a use


def _buffers(func: PrimFunc, units: list, roots: dict) -> list:
    uses: dict = {}
    allocs: list = []
    for u, s in enumerate(units):
        v = _Uses()
        v.visit(s)
        for b in v.found:
            uses.setdefault(roots.get(b, b), []).append(u)  # a use of a view is a use of its base's bytes
        allocs.extend((u, a) for a in v.allocs if not is_view(a))
    gemm_operands = set()
    for g in collect(func.body, lambda n: isinstance(n, Gemm)):
        gemm_operands.update(roots.get(x, x) for x in (g.A.buffer, g.B.buffer))
    layout_map = dict(func.attrs.get("layout_map", {}) or {})
    out: list = []
    for order, (u, a) in enumerate(x for x in allocs if x[1].buffer.scope in SHARED_SCOPES):
        b = a.buffer
        where = uses.get(b, [])
        out.append(
            _Buf(
                buffer=b,
                alloc=a,
                order=order,
                size=_size(a),
                align=_alignment(b, b in gemm_operands, _layout_of(b, layout_map)),
                lo=min(where) if where else u,
                hi=max(where) if where else u,
                used=bool(where),
            )
        )
    return out


def _size(a: Allocate) -> int:
    b = a.buffer
    n = 1
    for d in b.shape:
        c = const_int(d)
        if c is None:
            raise DSLError(
                f"shared buffer `{b.name}` has a non-constant shape {list(map(str, b.shape))}",
                a.span,
                "shared memory is planned at compile time: make its extents compile-time constants",
            )
        n *= c
    if b.scope == "shared.barrier":
        return n * BARRIER_BYTES
    return (n * b.dtype.bits * b.dtype.lanes + 7) // 8


def _layout_of(b: Buffer, layout_map: dict) -> Any:
    hit = layout_map.get(b)
    if hit is not None:
        return hit
    same = [lay for k, lay in layout_map.items() if getattr(k, "name", None) == b.name]
    return same[0] if len(same) == 1 else None


def _alignment(b: Buffer, gemm_operand: bool, layout: Any) -> int:
    if b.scope == "shared.barrier":
        return BARRIER_BYTES
    if layout is not None:
        mode = _swizzle_mode(layout, b.dtype)
        if mode is not None and mode.swizzle_byte_size():
            return max(DEFAULT_ALIGN, mode.smem_alignment())
    return GEMM_ALIGN if gemm_operand else DEFAULT_ALIGN


def _swizzle_mode(layout: Any, dtype: Any) -> Any:
    from ..layout import Layout, SwizzleMode, detect_swizzle_mode

    if not isinstance(layout, Layout):
        return None
    label = layout.meta.get("swizzle")
    if label and label != "none" and not layout.meta.get("padded"):
        try:
            return SwizzleMode.from_bytes(int(str(label).rstrip("B")))
        except (KeyError, ValueError):
            pass
    try:
        if not layout.is_static or layout.numel() > (1 << 17):
            return None
        return detect_swizzle_mode(layout, dtype)
    except Exception:  # noqa: BLE001 - a layout the detector cannot evaluate is simply not a swizzle
        return None


def _unique_names(bufs: list) -> dict:
    used: set = set()
    out: dict = {}
    for b in bufs:
        n, k = b.name, 0
        while n in used:
            k += 1
            n = f"{b.name}_{k}"
        used.add(n)
        out[id(b)] = n
    return out


# --------------------------------------------------------------------------
# Placement
# --------------------------------------------------------------------------


def _align_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def _live_together(a: _Buf, b: _Buf) -> bool:
    if a.buffer.scope == "shared.barrier" or b.buffer.scope == "shared.barrier":
        return True
    return a.lo <= b.hi and b.lo <= a.hi


def _place(bufs: list, by_size: bool) -> None:
    order = sorted(bufs, key=lambda b: (-b.size, b.order)) if by_size else sorted(bufs, key=lambda b: b.order)
    placed: list = []
    for b in order:
        busy = sorted((p.offset, p.offset + p.size) for p in placed if p.size and _live_together(p, b))
        off = 0
        for start, end in busy:
            off = _align_up(off, b.align)
            if off + b.size <= start:
                break
            off = max(off, end)
        b.offset = _align_up(off, b.align)
        placed.append(b)


def _barriers_needed(bufs: list, units: list) -> list:
    """Statements before which a barrier must go so that no two buffers sharing
    bytes are used without one in between (greedy interval stabbing)."""
    points = [float(i) for i, s in enumerate(units) if is_sync(s)]
    pairs = []
    for x in bufs:
        for y in bufs:
            if x is y or not (x.used and y.used) or not x.size or not y.size:
                continue
            if x.hi < y.lo and x.offset < y.offset + y.size and y.offset < x.offset + x.size:
                pairs.append((y.lo, x.hi))
    targets: list = []
    for lo, hi in sorted(set(pairs)):
        if any(hi < p < lo for p in points):
            continue
        points.append(lo - 0.5)
        targets.append(units[lo])
    return targets


class _InsertSync(SplicingMutator):
    def __init__(self, targets: set) -> None:
        super().__init__()
        self.targets = targets

    def visit(self, node: Any) -> Any:
        if isinstance(node, Stmt) and id(node) in self.targets and not isinstance(node, SeqStmt):
            return SeqStmt((make_sync(node.span), node), node.span)
        return super().visit(node)


__all__ = ["plan_shared_memory"]
