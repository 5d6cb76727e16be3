"""inject_pipeline: software pipelining of `T.Pipelined` loops with asynchronous copies.

Requires: tile-level IR (tile ops present), after layout inference if any:
`func.attrs["layout_map"]` / `["layout_origin"]` entries of the buffers this
pass replaces move to the new buffers (layouts get the stage dimension).
`ctx` may hold `target` (a `Target`, a target string or dict) and
`pass_configs`; async copies are used on CUDA sm_80+ and when no target is
given, and never when `pass_configs["tl.enable_async_copy"]` is False.

Guarantees: an equivalent PrimFunc (the input is never modified) without
`For(kind="pipelined")` loops. For each such loop with depth D ≥ 2 (D =
`num_stages`, or max(stage)+1 with explicit `stage=`/`order=`) whose body has
producers:

* *Producers* are body statements `T.copy(global → shared)` (or `T.im2col`, never as TMA, with D ≥ 2) with equal
  dtypes whose regions depend only on the loop variable, loop-invariant
  values and pure scalar `LetStmt` aliases of the body (replayed by
  substitution), whose source tensor the loop does not write, whose shared
  buffer is touched only inside this loop, first by producers, and is fully
  covered by one of them. Everything else is a *consumer* (a copy that cannot
  be asynchronous — e.g. one converting dtypes — stays a synchronous
  consumer). With explicit stages, producers are those copies in a stage
  below the last; a producer in stage t runs `d = D-1-t` iterations ahead.
* every producer's shared buffer `X` is multi-buffered: its `Allocate`
  becomes shape `(D, *shape)` (same name) and every access `X[...]` becomes
  `X[slot, ...]`, `slot = j % D` for the iteration j produced or consumed
  (layouts in `layout_map` and `T.annotate_layout` get the stage dimension
  prepended with `Layout.expand`);
* prologue (unrolled): for each virtual iteration v = -(D-1) .. -1, the
  producers of iteration `v + d ≥ 0` guarded by `v + d < n` (dropped when
  provable, n = trip count, may be dynamic), as `Copy` with annotation
  `async=True`, then `T.evaluate(T.tl.cp_async_commit())` — always, so that
  each iteration owns exactly one commit group;
* the loop itself, now `serial`, over the original range. Default shape:

      if k + d < n:  producers of iteration k + d, async, slot (k + d) % D
      T.tl.cp_async_commit()      # always: empty groups keep the count uniform
      T.tl.cp_async_wait(dmin)    # dmin = smallest d (D-1 without stages)
      T.tl.sync_threads()         # everyone's copies of iteration k are visible
      consumers of iteration k, slot k % D, in source order
      T.tl.sync_threads()         # the next producers overwrite slot k % D

  Group g holds the data of iteration g - (D-1) + d, so after the commit of
  iteration k, k + D groups exist and `wait(dmin)` completes every group
  that iteration k needs. No epilogue: the last D-1 iterations run in the
  same loop with their (empty) producer guards false, and since every
  non-empty group is waited for by the iteration that consumes it, no copy is
  in flight when the loop exits.
  With explicit `order=`, consumers run sorted by (stage, order) and the
  producer block is issued where its first copy's `order` falls among them;
  when consumers come first the wait (`dmin - 1`, this iteration's group not
  committed yet) and barrier open the body and the trailing barrier is
  dropped: the next iteration's opening barrier already separates the last
  reads of a slot from the copies that refill it.
* a loop with `num_stages=1` on an async-copy target keeps one buffer per tile but refills
  it as soon as its last reader is done, with TMA loads when all producers can be, else
  cp.async (single_stage_prefetch.py).
* loops with D ≤ 1 (`num_stages` 0 or 1, unless the previous point applies), no producers, `break`/`continue`,
  a nested `T.Pipelined`, or a target without async copies become plain
  `serial` loops with the same body (copies stay synchronous).
* `func.attrs["pipeline_stages"]`: buffer name → D for every multi-buffered
  buffer.
* TMA (CUDA sm_90+, unless `pass_configs["tl.disable_tma_lower"]`): a loop
  without explicit `stage`/`order` whose producers can all be TMA copies
  (`backend/cuda/tma_lower.py` decides; `T.copy(..., disable_tma=True)` opts a
  copy out) gets a ring of D `shared.barrier` mbarriers ("full", one arrival
  each) instead of cp.async groups:

      tl::mbarrier_init_block(full, D, 1)        # thread 0 inits, block barrier
      prologue: iterations 0 .. D-2, each `if j < n` (dropped when provable)
      for k:
          if k + D-1 < n:  producers of k + D-1 into slot (k + D-1) % D,
                           Copy annotated tma_barrier=full[slot] (the last
                           one also tma_arrive=True: expect_tx, loads, arrive)
          tl::mbarrier_wait(full[k % D], (k / D) % 2)
          consumers of iteration k, slot k % D
          T.tl.sync_threads()   # WAR: slot k % D is refilled in iteration k+1

  Phase parity: slot s completes its phases for iterations s, s+D, ... in
  order, so iteration k waits for phase k // D of its slot. After the loop
  thread 0 invalidates the ring (`tl::mbarrier_invalidate_block`; every wait
  has passed the last trip's block barrier) and each execution of the loop
  initialises it afresh, so an enclosing (persistent) loop needs no parity
  carried across. Not inside `T.ws` regions (their threads are a subset of the
  block: no block-wide initialisation there).
  Other loops keep the cp.async form.
* Warp specialization (sm_90a, unless `pass_configs["tl.disable_warp_specialized"]`):
  a TMA loop under serial loops / branches of its kernel (a persistent loop), in a
  kernel of `threads` a multiple of 128 whose other tile ops are copies, fills and
  gemms, and whose shared memory already allows only one block per SM (else
  several blocks per SM hide latency better: see `_one_block_per_sm`) while all of
  its tiles fit one block side by side (`_ws_smem_fits`: the consumer branch reuses
  no storage),
  becomes a producer loop and a consumer loop on two rings, "full" (1 arrival)
  and "empty" (one arrival per consumer warp):

      tl::mbarrier_init_block(full, D, 1); tl::mbarrier_init_block(empty, D, threads / 32)
      for _ in range(1) annotated tl.ws_role="producer":
          for k:  if k >= D: tl::mbarrier_wait(empty[k % D], (k / D + 1) % 2)
                  producers of iteration k into slot k % D (tma_barrier=full[k % D])
      for k:  tl::mbarrier_wait(full[k % D], (k / D) % 2)
              consumers of iteration k
              tl::mbarrier_arrive_per_warp(empty[k % D])   # lane 0 of each warp

  When the only consumer is a wgmma `T.gemm`, its group stays in flight
  (`wgmma_wait=False`, then `tl::wgmma_wait<1>()`) and iteration k releases
  slot (k - 1) % D instead (`if k > 0`); the consumer loop is annotated
  `tl.async_accumulator` (the accumulator's name) and warp_specialize waits for
  the last group after it, then releases the last slot.

  When `overlap_gemms.plan_overlap` finds the trip's last gemm G independent of the next
  trip's statements up to its first gemm S (FlashAttention: P·V after Q·Kᵀ), the consumer loop
  is emitted in its overlapped form instead (overlap_gemms.py states it): G runs one trip late,
  issued right after S, with a `tl::wgmma_wait<1>` / `<0>` pair and register fences
  (`tl.fence_register_tile`) before the statements that read their results; G's B tiles get a
  second pair of rings (`<loop>_late_full` / `_late_empty`) so they stay resident one trip
  longer; a first trip and a last step are peeled; with 256 consumer threads the two
  warpgroups take turns at the gemms (`tl::pingpong_*`). Such loops may hold reductions (their
  cross-warp steps get the consumers' named barrier), and count one block per SM only when it
  holds with the largest single-buffered tile overlaid (`_one_block_per_sm(alias_one=True)`).
  The loop's *lead copies* (`lead_copies`: whole-tile TMA-able copies before the loop in the
  same statement list, into a tile only they and the loop's body name — FlashAttention's Q)
  are issued by the producer before its first trip, annotated `tl.lead_copy`, on a one-slot
  pair `<loop>_lead_full` / `_lead_empty`: the consumers wait for the tile before the first
  trip and, when the loop runs more than once per kernel (a persistent outer loop; phase
  counted in `<loop>_lead_runs`), release it right after the last trip's S has retired (after
  the loop when a later statement reads it), so the next execution's tile loads during this
  one's last trip and epilogue.

  `backend/cuda/warp_specialize.py` (after lower_threads) gives the producer loop to
  an extra warpgroup and everything else to the kernel's own threads. The
  producer's wait for the release of iteration k - D is phase k / D - 1 of
  `empty[k % D]`.

Explicit `stage`/`order` lists align 1:1 with the body's schedulable
statements (pure scalar `LetStmt` aliases and `Allocate`s take no slot).
Errors (`DSLError` at the loop's span): wrong lengths, `order` not a
permutation, `num_stages` contradicting `stage`, a statement reading what an
earlier one writes in a later stage (or the same stage and an earlier
`order`), and orders that would swap dependent consumers.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from ..arith import Analyzer
from ..backend.cuda.overlap_gemms import OverlapPlan, names, plan_overlap
from ..backend.target import target_of
from ..errors import DSLError
from ..ir.buffer import Buffer, BufferRegion, Range
from ..ir.conv import Im2Col
from ..ir.decisions import record
from ..ir.dtype import DataType
from ..ir.expr import BufferLoad, Call, IntImm, StringImm, Var, binary, compare, const_int
from ..ir.function import PrimFunc
from ..ir.node import FrozenDict
from ..ir.stmt import (
    Allocate,
    AnnotateLayout,
    Break,
    BufferStore,
    Continue,
    Copy,
    Evaluate,
    Fill,
    For,
    Gemm,
    Hint,
    IfThenElse,
    KernelLaunch,
    LetStmt,
    Reduce,
    SeqStmt,
    Stmt,
    TileOp,
    WarpSpecialize,
    flat_stmts,
    seq,
)
from ..ir.visitor import Mutator, SplicingMutator, Visitor, collect, free_vars_of, substitute
from ..pass_config import in_force
from .context import CompileContext
from .inject_sync import COMMIT_OP, SYNC_OP, WAIT_OP, _bound_vars, collect_accesses
from .record_decisions import pipeline_records

PIPELINE_KEYS = ("num_stages", "stage", "order", "sync", "group")
# loop annotation: the loop leaves this accumulator's last wgmma group in flight (warp_specialize drains it)
ASYNC_ACCUMULATOR = "tl.async_accumulator"
# copy annotation: a copy before a warp-specialized loop that its producer issues (`lead_copies`)
LEAD_COPY = "tl.lead_copy"
SHARED_SCOPES = ("shared", "shared.dyn")
DYNAMIC_DIM_MAX = 2**31 - 1


# --------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------


def inject_pipeline(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    ctx = CompileContext.of(ctx)
    an = Analyzer()
    params = {id(p) for p in func.params}
    rw = _Rewriter(an, _count_refs(func.body), _async_copy_supported(func, ctx), _tma_checker(func, ctx))
    rw.ws_ok = rw.tma_why_not is not None and _warp_specialize_enabled(func, ctx)
    rw.layouts = dict(func.attrs.get("layout_map", {}) or {})
    with an.scope():
        for b in func.buffer_params:
            for d in b.shape:
                for v in free_vars_of(d):
                    if id(v) not in params:
                        an.bind(v, 1, DYNAMIC_DIM_MAX)
        body = rw.visit(func.body)
    if body is func.body:
        return record(func, *pipeline_records(func, func))
    attrs = dict(func.attrs)
    if rw.replaced:
        body = _Realloc(rw.replaced).visit(body)
        stages = dict(attrs.get("pipeline_stages", {}) or {})
        stages.update({old.name: d for old, (_, d) in rw.replaced.items()})
        attrs["pipeline_stages"] = FrozenDict(stages)
        for key in ("layout_map", "layout_origin"):  # Buffer-keyed metadata follows the new buffers
            table = attrs.get(key)
            if table and any(old in table for old in rw.replaced):
                table = dict(table)
                for old, (new, d) in rw.replaced.items():
                    if old in table:
                        value = table.pop(old)
                        table[new] = _expand_layout(value, d) if key == "layout_map" else value
                attrs[key] = table
    out = replace(func, body=body, attrs=FrozenDict(attrs))
    return record(out, *pipeline_records(func, out))  # the form of each loop, the mode of each copy


def _async_copy_supported(func: PrimFunc, ctx: CompileContext) -> bool:
    cfg = in_force(func, ctx)
    if cfg.get("tl.enable_async_copy") is False:
        return False
    t = target_of(func, ctx)
    if t is None:
        return True
    return t.kind == "cuda" and t.sm >= 80


def _tma_checker(func: PrimFunc, ctx: CompileContext) -> Any:
    """`why_not(copy) -> str | None` when TMA pipelines are possible for this target, else None."""
    cfg = in_force(func, ctx)
    if cfg.get("tl.disable_tma_lower") or cfg.get("tl.enable_async_copy") is False:
        return None
    t = target_of(func, ctx)
    if t is None or t.kind != "cuda" or t.sm < 90:
        return None
    from ..backend.cuda.tma_lower import tma_unsupported_reason

    layouts = dict(func.attrs.get("layout_map", {}) or {})

    def why_not(c: Copy) -> str | None:
        if isinstance(c, Im2Col):
            return "T.im2col gathers its tile (no TMA box)"
        if c.annotations.get("disable_tma"):
            return "disable_tma=True"
        return tma_unsupported_reason(c.src, c.dst, layouts.get(c.dst.buffer), func)

    return why_not


def _warp_specialize_enabled(func: PrimFunc, ctx: CompileContext) -> bool:
    cfg = in_force(func, ctx)
    if cfg.get("tl.disable_warp_specialized"):
        return False
    t = target_of(func, ctx)
    return t is not None and t.arch.endswith("a")  # setmaxnreg (and wgmma) exist on sm_90a only


# tile ops whose lowering synchronises only with barriers we can rename (and hints such as T.use_swizzle)
WS_TILE_OPS = (Copy, Fill, Gemm, Hint)
MAX_THREADS = 1024
WARPGROUP = 128


def _ws_kernel_ok(k: KernelLaunch, loop: For, reductions: bool = False, layouts: dict | None = None) -> bool:
    """`k`'s tile ops can all run in the consumer warpgroups, and the loop sits in `k` under
    serial loops and branches only (the producer replays that control flow). Reductions
    (`reductions`: only for loops whose last gemm overlaps the next trip, where they pay off;
    only those in registers, by `layouts`; warp_specialize gives their cross-warp steps the
    consumers' named barrier) count too."""
    layouts = layouts or {}
    threads = k.num_threads
    if threads % WARPGROUP or threads + WARPGROUP > MAX_THREADS:
        return False
    if not _under_plain_control(k.body, loop):
        return False
    if len(collect(k.body, lambda x: isinstance(x, For) and x.kind == "pipelined")) != 1:
        return False  # one producer warpgroup serves one pipelined loop
    ops = collect(k.body, lambda x: isinstance(x, TileOp))
    return all(isinstance(o, WS_TILE_OPS) or (reductions and _in_registers(o, layouts)) for o in ops)


def _in_registers(op: Any, layouts: dict) -> bool:
    """A reduction without shared staging (whose bytes the warp-specialized form's shared-memory
    check could not count): one the CUDA backend lowers in registers."""
    from ..backend.cuda.ops import register_reduce_fields

    return isinstance(op, Reduce) and register_reduce_fields(op, layouts) is not None


SMEM_PER_SM = 228 * 1024  # sm_90 (H100 / H200)
SMEM_RESERVED_PER_BLOCK = 1024
SMEM_PER_BLOCK = 227 * 1024  # the most dynamic shared memory one block may have on sm_90


def shared_tile_bytes(allocs: list, depth: dict, align: int = 1) -> int | None:
    """Bytes of the shared tiles `allocs` (Allocate statements), each held `depth.get(buffer, 1)`
    times (pipeline stages) and rounded up to `align`; None when a shape is not static."""
    total = 0
    for a in allocs:
        shape = a.buffer.static_shape
        if shape is None:
            return None
        nbytes = a.buffer.dtype.storage_bytes(math.prod(shape) * depth.get(a.buffer, 1))  # 4-bit: 2 a byte
        total += -(-nbytes // align) * align
    return total


def _kernel_shared(k: KernelLaunch) -> list:
    return collect(k.body, lambda x: isinstance(x, Allocate) and x.buffer.scope in SHARED_SCOPES)


def _stage_depths(bmap: dict) -> dict:
    """Buffer → stages, from `multi_buffer`'s old → new buffer map."""
    return {old: const_int(new.shape[0]) or 1 for old, new in bmap.items()}


def _ws_smem_fits(k: KernelLaunch, depth: dict) -> bool:
    """Every shared tile of `k` (`depth`: stages per buffer) fits one block side by side: in
    the warp-specialized form the consumer branch keeps them all live (plan_shared_memory
    reuses no storage inside it), where the plain ring could alias an epilogue tile with a
    dead one (FlashAttention's O tile over Q). Tiles count 1024-aligned."""
    total = shared_tile_bytes(_kernel_shared(k), depth, align=1024)
    return total is not None and total + SMEM_RESERVED_PER_BLOCK <= SMEM_PER_BLOCK


def _one_block_per_sm(k: KernelLaunch, depth: dict, alias_one: bool = False) -> bool:
    """Shared memory (`depth`: stages per buffer) already keeps `k` at one block per SM.
    Otherwise several blocks overlap each other's loads and math, which beats a producer
    warpgroup (one block per SM under its `__launch_bounds__(threads, 1)` register budget):
    measured on the H200, 128x128x32 tiles in 3 stages ran at 450 TFLOP/s as a plain TMA ring
    and 312 warp-specialized.

    `alias_one`: also when the plain ring may overlay its largest single-buffered tile with
    another (plan_shared_memory puts FlashAttention's O tile over Q): 128x64 attention tiles in
    2 stages (128 KB, 96 KB overlaid) ran at 542 TFLOP/s as two plain rings per SM and 528 with
    a producer warpgroup and overlapped gemms; 128x128 tiles (192 KB) gain from the latter."""
    allocs = _kernel_shared(k)
    total = shared_tile_bytes(allocs, depth)
    if total is None:
        return False
    if alias_one:
        total -= max((shared_tile_bytes([a], {}) or 0 for a in allocs if depth.get(a.buffer, 1) == 1), default=0)
    return 2 * (total + SMEM_RESERVED_PER_BLOCK) > SMEM_PER_SM


def _under_plain_control(node: Any, loop: For) -> bool:
    if node is loop:
        return True
    if isinstance(node, SeqStmt):
        return any(_under_plain_control(s, loop) for s in node.stmts)
    if isinstance(node, For) and node.kind in ("serial", "unrolled"):
        return _under_plain_control(node.body, loop)
    if isinstance(node, IfThenElse):
        return _under_plain_control(node.then_body, loop) or (
            node.else_body is not None and _under_plain_control(node.else_body, loop)
        )
    return False


def _expand_layout(layout: Any, d: int) -> Any:
    try:
        return layout.expand((d,))
    except Exception:  # noqa: BLE001 - a layout kind without `expand`: keep it as it was
        return layout


# --------------------------------------------------------------------------
# Buffer references
# --------------------------------------------------------------------------


class _Refs(Visitor):
    """Counts references to each buffer (declarations and layout pins excluded)."""

    def __init__(self) -> None:
        self.count: dict = {}
        self.allocated: set = set()

    def visit_Buffer(self, b: Buffer) -> None:
        self.count[b] = self.count.get(b, 0) + 1

    def visit_Allocate(self, n: Allocate) -> None:
        self.allocated.add(n.buffer)
        if n.init is not None:
            self.visit(n.init)

    def visit_AnnotateLayout(self, n: AnnotateLayout) -> None:
        pass


def _count_refs(node: Any) -> _Refs:
    r = _Refs()
    r.visit(node)
    return r


# --------------------------------------------------------------------------
# Rewriting accesses to multi-buffered buffers
# --------------------------------------------------------------------------


class SlotIndexer(Mutator):
    """Prepends `slot` to every access of the buffers in `buffer_map`."""

    def __init__(self, buffer_map: dict, slot: Any) -> None:
        super().__init__(buffer_map)
        self.slot = slot

    def visit_BufferLoad(self, n: BufferLoad) -> Any:
        idx = self.visit(n.indices)
        nb = self.buffer_map.get(n.buffer)
        if nb is None:
            return n if idx is n.indices else replace(n, indices=idx)
        return replace(n, buffer=nb, indices=(self.slot,) + tuple(idx))

    def visit_BufferStore(self, n: BufferStore) -> Any:
        idx, value = self.visit(n.indices), self.visit(n.value)
        nb = self.buffer_map.get(n.buffer)
        if nb is None:
            return n if (idx is n.indices and value is n.value) else replace(n, indices=idx, value=value)
        return replace(n, buffer=nb, indices=(self.slot,) + tuple(idx), value=value)

    def visit_BufferRegion(self, n: BufferRegion) -> Any:
        region = self.visit(n.region)
        nb = self.buffer_map.get(n.buffer)
        if nb is None:
            return n if region is n.region else replace(n, region=region)
        return replace(n, buffer=nb, region=(Range(self.slot, IntImm(1), n.span),) + tuple(region))


class _Realloc(Mutator):
    """Replaces the declarations (and layout pins) of multi-buffered buffers."""

    def __init__(self, replaced: dict) -> None:
        super().__init__({old: new for old, (new, _) in replaced.items()})
        self.depth = {old: d for old, (_, d) in replaced.items()}

    def visit_Allocate(self, n: Allocate) -> Stmt:
        nb = self.buffer_map.get(n.buffer)
        return n if nb is None else replace(n, buffer=nb)

    def visit_AnnotateLayout(self, n: AnnotateLayout) -> Stmt:
        if not any(b in self.buffer_map for b, _ in n.layouts):
            return n
        layouts = tuple(
            (self.buffer_map[b], _expand_layout(lay, self.depth[b])) if b in self.buffer_map else (b, lay)
            for b, lay in n.layouts
        )
        return replace(n, layouts=layouts)


# --------------------------------------------------------------------------
# The loop rewriter
# --------------------------------------------------------------------------


def intrinsic_stmt(op: str, args: tuple, span: Any) -> Evaluate:
    return Evaluate(Call(op, args, span=span), span=span)


def header_call_stmt(name: str, args: tuple, span: Any) -> Evaluate:
    """A call of a device function of the CUDA header library (`tl.call`)."""
    return Evaluate(Call("tl.call", (StringImm(name),) + args, DataType("int32"), span=span), span=span)


def _at(buf: Buffer, index: Any) -> BufferLoad:
    return BufferLoad(buf, (index,), buf.dtype)


def element_address(buf: Buffer, index: Any) -> Call:
    return Call("address_of", (_at(buf, index),), DataType("handle"))


FENCE_REGISTER_TILE = "tl.fence_register_tile"  # warp_specialize: a compiler fence on a register tile


@dataclass(frozen=True)
class _RingPos:
    """Slots and phases of a warp-specialized loop's mbarrier rings: trip `it` of this execution
    of the loop is ring position `base + it` (`base`: the trips of earlier executions)."""

    base: Any
    depth: int
    span: Any

    def slot(self, it: Any) -> Any:
        return binary("floormod", self.base + it, self.depth)

    def phase(self, it: Any) -> Any:
        return binary("floordiv", self.base + it, self.depth)

    def wait(self, ring: Buffer, it: Any) -> Stmt:
        """Trip `it`'s tiles have landed (`ring`: a "full" ring)."""
        return self._wait(ring, it, binary("floormod", self.phase(it), 2))

    def wait_free(self, ring: Buffer, it: Any) -> Stmt:
        """The consumers released trip `it - depth`'s slot (`ring`: an "empty" ring); valid for
        positions ≥ depth only (the caller guards)."""
        return self._wait(ring, it, binary("floormod", self.phase(it) + 1, 2))

    def release(self, ring: Buffer, it: Any) -> Stmt:
        return header_call_stmt("tl::mbarrier_arrive_per_warp", (element_address(ring, self.slot(it)),), self.span)

    def _wait(self, ring: Buffer, it: Any, parity: Any) -> Stmt:
        return header_call_stmt("tl::mbarrier_wait", (element_address(ring, self.slot(it)), parity), self.span)


@dataclass(frozen=True)
class _Lead:
    """The lead copies' protocol (`_Pipeline.lead_protocol`): hoisted declarations and barrier
    initialisations; the producer's waits and loads before its loop; the consumers' wait before
    the first trip and release after the last; the statements both roles run after the loop."""

    inits: list
    produce: list
    wait: list
    release: list
    after: list


def _ws_inits(count: Buffer | None, rings: list, depth: int, threads: int, span: Any) -> list:
    """Hoisted declarations of a warp-specialized loop: its ring position `count` (None: the loop
    runs once per kernel) and its (full, empty) ring pairs — a full ring completes on one
    arrival (the TMA transaction count does the rest), an empty one (None: nothing waits for
    the slots to be free) on every consumer warp's."""
    hoist = FrozenDict({"tl.ws_hoist": True})
    out: list = [] if count is None else [Allocate(count, IntImm(0), hoist, span)]
    out += [Allocate(b, annotations=hoist, span=span) for pair in rings for b in pair if b is not None]

    def init(ring: Buffer, arrivals: int) -> Stmt:
        return header_call_stmt(
            "tl::mbarrier_init_block", (element_address(ring, IntImm(0)), IntImm(depth), IntImm(arrivals)), span
        )

    out += [init(full, 1) for full, _ in rings]
    out += [init(empty, threads // 32) for _, empty in rings if empty is not None]
    return out


class _NoWait(Mutator):
    def visit_Gemm(self, g: Gemm) -> Any:
        return replace(g, annotations=g.annotations.set(wgmma_wait=False))


def _no_wait(s: Stmt) -> Stmt:
    """`s` with every gemm left in flight (the caller places the wait)."""
    return _NoWait().visit(s)


def _describe(i: int, s: Stmt) -> str:
    text = str(s).split("\n", 1)[0].strip()
    if len(text) > 60:
        text = text[:57] + "..."
    where = f", line {s.span.line}" if s.span.line else ""
    return f"statement {i} (`{text}`{where})"


def _region_exprs(s: Copy) -> tuple:
    """The begins and extents of both regions of copy `s` (and an im2col's tile indices)."""
    steps = (s.nhw_step, s.c_step) if isinstance(s, Im2Col) else ()
    return tuple(x for r in (s.src, s.dst) for g in r.region for x in (g.begin, g.extent)) + steps


def _plain_load(s: Stmt) -> bool:
    """`s` copies global → shared memory in one dtype, its regions addressed without loads
    (a `T.copy`, or a `T.im2col` tile: a gather its CUDA rule issues as cp.async too)."""
    if not isinstance(s, (Copy, Im2Col)):
        return False
    src, dst = s.src.buffer, s.dst.buffer
    if src.scope != "global" or dst.scope not in SHARED_SCOPES or src.dtype != dst.dtype:
        return False
    return not collect(_region_exprs(s), lambda x: isinstance(x, BufferLoad))


def lead_copies(stmts: list, loop: For, refs: _Refs, tma_why_not: Any, kernel_writes: set) -> list:
    """The copies among `stmts` before `loop` that the producer of its warp-specialized form may
    issue instead of the consumers: whole-tile TMA loads (global → shared) into a tile that only
    the copy and the loop's body name, which the body does not write, from a tensor the kernel
    never writes (`kernel_writes`: the producer runs none of the consumers' statements, so a
    write anywhere — before the copy, or after the loop ahead of the next execution's copy —
    could race with its load) — FlashAttention's Q tile. The consumers wait for the tile before
    the loop's first trip."""
    if tma_why_not is None:
        return []
    at = next(i for i, s in enumerate(stmts) if s is loop)
    body_refs = _count_refs(loop.body)
    body_writes = collect_accesses(loop.body).buffers_written()
    out = []
    for s in stmts[:at]:
        if not _plain_load(s) or not s.dst.is_whole() or tma_why_not(s) is not None:
            continue
        tile = s.dst.buffer
        if refs.count.get(tile, 0) != _count_refs(s).count.get(tile, 0) + body_refs.count.get(tile, 0):
            continue  # named elsewhere too
        if tile in body_writes or s.src.buffer in kernel_writes:
            continue
        out.append(s)
    return out


class _Rewriter(SplicingMutator):
    def __init__(self, an: Analyzer, refs: _Refs, async_ok: bool, tma_why_not: Any = None) -> None:
        super().__init__()
        self.an = an
        self.refs = refs
        self.async_ok = async_ok
        self.tma_why_not = tma_why_not  # None: no TMA on this target
        self.ws_ok = False  # warp specialization possible on this target
        self.kernel: KernelLaunch | None = None
        self.kernel_writes: set = set()  # buffers some statement of the current kernel writes
        self.layouts: dict = {}
        self.in_ws_region = 0
        self.replaced: dict = {}  # old Buffer -> (new Buffer, depth)
        self.lead_copies: dict = {}  # id(pipelined loop) -> its lead copies (`lead_copies`)
        self.taken: set = set()  # ids of lead copies a warp-specialized loop's producer took over

    def visit_SeqStmt(self, n: SeqStmt) -> Stmt:
        """As SplicingMutator's, but the lead copies of a pipelined loop in this list wait for
        its rewrite: the ones its producer took over are dropped here."""
        held: dict = {}
        for s in n.stmts:
            if isinstance(s, For) and s.kind == "pipelined":
                found = lead_copies(list(n.stmts), s, self.refs, self.tma_why_not, self.kernel_writes)
                self.lead_copies[id(s)] = found
                held.update((id(c), c) for c in found)
        if not held:
            return super().visit_SeqStmt(n)
        out: list = []
        for s in n.stmts:
            x = s if id(s) in held else self.visit(s)
            out.extend(x.stmts if isinstance(x, SeqStmt) and x is not s else (x,))
        out = [self.visit(s) if id(s) in held else s for s in out if id(s) not in self.taken]
        return replace(n, stmts=tuple(out))

    def visit_KernelLaunch(self, n: KernelLaunch) -> Stmt:
        self.kernel = n
        self.kernel_writes = collect_accesses(n.body).buffers_written()
        with self.an.scope():
            for v, g in zip(n.block_vars, n.grid):
                self.an.bind_range(v, 0, g)
            return self.generic_visit(n)

    def visit_For(self, n: For) -> Stmt:
        with self.an.scope():
            if n.step is None or const_int(n.step) == 1:
                self.an.bind_range(n.var, n.start, n.extent)
            body = self.visit(n.body)
        loop = n if body is n.body else replace(n, body=body)
        if n.kind != "pipelined":
            return loop
        # outside the loop variable's scope: its range would prove the trip count positive
        # (guards of the first and last trips, of a loop that may run 0 times, would fold away)
        nested = bool(collect(n.body, lambda x: isinstance(x, For) and x.kind == "pipelined"))
        return _Pipeline(self, loop, nested, self.lead_copies.get(id(n), [])).run()

    def visit_WarpSpecialize(self, n: WarpSpecialize) -> Stmt:
        # a T.ws region runs in some warpgroups only: block-wide barrier initialisation (TMA rings)
        # or a producer warpgroup of our own do not fit there; cp.async rings do
        self.in_ws_region += 1
        try:
            return self.generic_visit(n)
        finally:
            self.in_ws_region -= 1


class _Pipeline:
    """The plan and the rewrite of one `T.Pipelined` loop."""

    def __init__(self, rw: _Rewriter, loop: For, nested: bool, leads: list) -> None:
        self.rw = rw
        self.an = rw.an
        self.loop = loop
        self.nested = nested
        self.leads = leads  # copies before the loop its producer may issue (`lead_copies`)
        ann = loop.annotations
        self.num_stages = int(ann.get("num_stages", 0) or 0)
        self.stage = ann.get("stage")
        self.order = ann.get("order")
        self.rest = FrozenDict({k: v for k, v in ann.items() if k not in PIPELINE_KEYS})

    def fail(self, msg: str, hint: str = "") -> None:
        raise DSLError(msg, self.loop.span, hint)

    # -- entry -----------------------------------------------------------------
    def run(self) -> Stmt:
        loop = self.loop
        items = flat_stmts(loop.body)
        self.bound = _bound_vars(loop.body)
        self.pure: dict = {}  # Var -> LetStmt, pure scalar aliases (no slot)
        slots: list = []
        for s in items:
            if isinstance(s, LetStmt) and self.is_pure(s.value):
                self.pure[s.var] = s
            elif not isinstance(s, Allocate):
                slots.append(s)
        self.items, self.slots = items, slots
        self.acc = [collect_accesses(s) for s in slots]
        stage, order = self.validate_annotations(len(slots))
        depth = max(stage) + 1 if stage is not None else self.num_stages
        self.depth = depth
        if depth == 1 and stage is None and self.single_stage_ok():
            producers = self.find_producers(stage)
            if producers:
                from ..backend.cuda.single_stage_prefetch import single_stage_prefetch

                return single_stage_prefetch(self, producers, self.tma_fits(stage, producers))
        serial_ok = depth <= 1 or self.nested or not self.rw.async_ok or self.has_jumps()
        producers = {} if serial_ok else self.find_producers(stage)
        self.check_orders(stage, order, producers)
        if not producers:
            return self.serial(stage, order)
        return self.pipelined(stage, order, producers)

    def single_stage_ok(self) -> bool:
        """A one-stage loop that may still prefetch its next tiles (single_stage_prefetch.py)."""
        rw = self.rw
        return rw.async_ok and not self.nested and not self.has_jumps()

    def has_jumps(self) -> bool:
        return bool(collect(self.loop.body, lambda x: isinstance(x, (Break, Continue))))

    def is_pure(self, e: Any) -> bool:
        if collect(e, lambda x: isinstance(x, BufferLoad) or (isinstance(x, Call) and x.op.startswith("tl."))):
            return False
        return self.invariant_ok(e)

    def invariant_ok(self, e: Any) -> bool:
        """`e` depends only on the loop var, pure aliases and values from outside the loop."""
        for v in free_vars_of(e):
            if v is self.loop.var or v in self.pure:
                continue
            if v in self.bound:
                return False
        return True

    # -- explicit stage / order --------------------------------------------------
    def validate_annotations(self, n: int) -> tuple:
        stage, order = self.stage, self.order
        if stage is None and order is None:
            return None, None
        if stage is None or order is None:
            self.fail(
                "T.Pipelined needs both `stage=` and `order=` (or neither)", "give one entry per statement in each"
            )
        stage, order = [int(x) for x in stage], [int(x) for x in order]
        if len(stage) != n or len(order) != n:
            self.fail(
                f"`stage` has {len(stage)} and `order` has {len(order)} entries, but the loop body has "
                f"{n} schedulable statement(s)",
                "give one entry per tile op / store / loop / if of the body, in source order "
                "(scalar aliases like `base = ko * BK` take no entry)",
            )
        if any(s < 0 for s in stage):
            self.fail(f"`stage` entries must be >= 0, got {stage}")
        if sorted(order) != list(range(n)):
            self.fail(f"`order` must be a permutation of 0..{n - 1}, got {order}", "number the statements' issue slots")
        depth = max(stage) + 1 if stage else 1
        if self.num_stages not in (0, depth):
            self.fail(
                f"num_stages={self.num_stages} contradicts stage={stage} (pipeline depth is max(stage) + 1 = {depth})",
                "drop num_stages when giving stage= and order=",
            )
        # A statement may only read what an earlier one wrote in the same or a later stage,
        # and within one stage it must also be issued after it.
        for b in range(n):
            for a in range(b):
                what = self.raw(a, b)
                if not what:
                    continue
                if stage[a] > stage[b]:
                    self.fail(
                        f"{_describe(b, self.slots[b])} uses `{what}` from {_describe(a, self.slots[a])} "
                        f"but is in an earlier stage ({stage[b]} < {stage[a]})",
                        "a producer's stage must not be later than its consumers'",
                    )
                if stage[a] == stage[b] and order[a] > order[b]:
                    self.fail(
                        f"{_describe(b, self.slots[b])} uses `{what}` from {_describe(a, self.slots[a])} "
                        f"in the same stage {stage[a]} but is ordered before it ({order[b]} < {order[a]})",
                        "within a stage, `order` must issue producers before their consumers",
                    )
        return stage, order

    def raw(self, a: int, b: int) -> str:
        """Name of a buffer / variable statement a writes and statement b reads ('' if none)."""
        hit = self.acc[a].buffers_written() & self.acc[b].buffers_read()
        if hit:
            return sorted(x.name for x in hit)[0]
        sa = self.slots[a]
        if isinstance(sa, LetStmt) and any(v is sa.var for v in free_vars_of(self.slots[b])):
            return sa.var.name
        return ""

    def depends(self, a: int, b: int) -> bool:
        """Any dependence between statements a < b (RAW, WAR, WAW, or a variable)."""
        xa, xb = self.acc[a], self.acc[b]
        wa, wb = xa.buffers_written(), xb.buffers_written()
        return bool(self.raw(a, b) or (xa.buffers_read() & wb) or (wa & wb))

    def check_orders(self, stage, order, producers: dict) -> None:
        if stage is None:
            return
        cons = [i for i in range(len(self.slots)) if i not in producers]
        key = {i: (stage[i], order[i]) for i in cons}
        for x in range(len(cons)):
            for y in range(x + 1, len(cons)):
                a, b = cons[x], cons[y]
                if key[a] > key[b] and self.depends(a, b):
                    self.fail(
                        f"stage/order would run {_describe(b, self.slots[b])} before "
                        f"{_describe(a, self.slots[a])}, which it depends on",
                        "only asynchronous global→shared copies can run ahead of their iteration; keep "
                        "dependent statements in source order",
                    )

    # -- producers -----------------------------------------------------------------
    def eligible_copy(self, s: Stmt) -> bool:
        if isinstance(s, Im2Col) and self.depth < 2:
            return False  # single_stage_prefetch refills tiles with T.copy's TMA / cp.async forms only
        return _plain_load(s) and all(self.invariant_ok(e) for e in _region_exprs(s))

    def covers(self, s: Copy) -> bool:
        buf = s.dst.buffer
        for g, dim in zip(s.dst.region, buf.shape):
            if const_int(g.begin) != 0:
                return False
            if not (const_int(g.extent) is not None and const_int(g.extent) == const_int(dim)):
                if not self.an.can_prove_equal(g.extent, dim):
                    return False
        return True

    def find_producers(self, stage) -> dict:
        """slot index -> distance (iterations ahead) of every producer."""
        depth = self.depth
        body_written = collect_accesses(self.loop.body).buffers_written()
        body_refs = _count_refs(self.loop.body)
        cand: dict = {}
        for i, s in enumerate(self.slots):
            if stage is not None and stage[i] >= depth - 1:
                continue
            if not self.eligible_copy(s) or s.src.buffer in body_written:
                continue
            x = s.dst.buffer
            if x in body_refs.allocated or body_refs.count.get(x, 0) != self.rw.refs.count.get(x, 0):
                continue  # declared inside the loop, or also used outside it
            if x in self.rw.replaced:
                continue
            cand[i] = depth - 1 - (stage[i] if stage is not None else 0)
        changed = True
        while changed:  # demote until every multi-buffered buffer is first touched by its producers
            changed = False
            for i in list(cand):
                x = self.slots[i].dst.buffer
                mine = [j for j in cand if self.slots[j].dst.buffer is x]
                first_ok = all(
                    j in cand and self.slots[j].dst.buffer is x
                    for j in range(i)
                    if x in self.acc[j].buffers_read() | self.acc[j].buffers_written()
                )
                if not first_ok or not any(self.covers(self.slots[j]) for j in mine):
                    del cand[i]
                    changed = True
        return cand

    # -- emission ------------------------------------------------------------------
    def serial(self, stage, order) -> Stmt:
        loop = self.loop
        if stage is None:
            return replace(loop, kind="serial", annotations=self.rest)
        idx = sorted(range(len(self.slots)), key=lambda i: (stage[i], order[i]))
        head = [s for s in self.items if not any(s is x for x in self.slots)]
        body = seq(*head, *[self.slots[i] for i in idx]) if self.items else loop.body
        return replace(loop, kind="serial", annotations=self.rest, body=body)

    def plain(self) -> bool:
        """The loop counts 0, 1, 2, ...: its variable is the iteration number."""
        loop = self.loop
        return const_int(loop.start) == 0 and (loop.step is None or const_int(loop.step) == 1)

    def iter_index(self) -> Any:
        """The iteration number k of the current trip (0-based), as an expression of the loop var."""
        loop = self.loop
        if self.plain():
            return loop.var
        k: Any = loop.var - loop.start
        if loop.step is not None and const_int(loop.step) != 1:
            k = binary("floordiv", k, loop.step)
        return self.an.simplify(k)

    def offset(self, k: Any, d: int) -> Any:
        """Iteration `k + d` (simplified when the loop does not count from 0 by 1)."""
        return k + d if self.plain() else self.an.simplify(k + d)

    def var_at(self, j: Any) -> Any:
        """The loop var's value in iteration `j`."""
        loop = self.loop
        if self.plain():
            return j
        step = loop.step if loop.step is not None else IntImm(1)
        return self.an.simplify(loop.start + j * step)

    def producer(self, s: Copy, it: Any, slot: Any, bmap: dict) -> Stmt:
        env: dict = {self.loop.var: self.var_at(it)}
        for v, let in self.pure.items():
            env[v] = substitute(let.value, env)
        s2 = substitute(s, env)
        s2 = SlotIndexer(bmap, slot).visit(s2)
        return replace(s2, annotations=s2.annotations.set(**{"async": True}))

    def guard(self, cond: Any, body: list) -> list:
        c = self.an.simplify(cond)
        if const_int(c) is not None:
            return body if const_int(c) else []
        span = self.loop.span
        return [IfThenElse(cond, seq(*body), None, span)]

    def multi_buffer(self, producers: dict) -> dict:
        bmap: dict = {}
        for i in producers:
            x = self.slots[i].dst.buffer
            if x not in bmap:
                nb = Buffer(x.name, (IntImm(self.depth),) + tuple(x.shape), x.dtype, x.scope, None, x.span)
                bmap[x] = nb
                self.rw.replaced[x] = (nb, self.depth)
        return bmap

    def tma_fits(self, stage, producers: dict) -> bool:
        why_not = self.rw.tma_why_not
        if why_not is None or stage is not None or self.rw.in_ws_region:
            return False
        return all(why_not(self.slots[i]) is None for i in producers)

    def pipelined_tma(self, producers: dict) -> Stmt:
        """The mbarrier ring form (module docstring, "TMA")."""
        loop, depth, span = self.loop, self.depth, self.loop.span
        bmap = self.multi_buffer(producers)
        full = self.barrier_ring("full")
        n = loop.extent
        cons = [i for i in range(len(self.slots)) if i not in producers]
        loads = self.tma_loads(producers, bmap, full)
        kernel = self.rw.kernel
        plan = self.overlap_plan(bmap, cons)
        if (
            self.rw.ws_ok
            and kernel is not None
            and _ws_kernel_ok(kernel, self.loop, reductions=plan is not None, layouts=self.rw.layouts)
            and _one_block_per_sm(kernel, _stage_depths(bmap), alias_one=plan is not None)
            and _ws_smem_fits(kernel, _stage_depths(bmap))
        ):
            return self.warp_specialized(loads, sorted(producers), full, bmap, cons, plan)

        body0: list = [
            Allocate(full, span=span),
            header_call_stmt(
                "tl::mbarrier_init_block", (element_address(full, IntImm(0)), IntImm(depth), IntImm(1)), span
            ),
        ]
        for j in range(depth - 1):
            body0.extend(self.guard(compare("lt", IntImm(j), n), loads(IntImm(j), IntImm(j))))
        k = self.iter_index()
        with self.loop_scope():
            ahead = self.offset(k, depth - 1)
            block = self.guard(compare("lt", ahead, n), loads(ahead, binary("floormod", ahead, depth)))
        slot_c = binary("floormod", k, depth)
        parity = binary("floormod", binary("floordiv", k, depth), 2)
        wait = header_call_stmt("tl::mbarrier_wait", (element_address(full, slot_c), parity), span)
        consumers = [SlotIndexer(bmap, slot_c).visit(self.slots[i]) for i in cons]
        head = [s for s in self.items if not any(s is x for x in self.slots)]
        body = head + block + [wait] + consumers + [intrinsic_stmt(SYNC_OP, (), span)]
        steady = replace(loop, kind="serial", annotations=self.rest.set(tma_pipeline=True), body=seq(*body))
        # the last trip's barrier has passed every wait: thread 0 invalidates the ring, so that a
        # re-execution (an enclosing loop) initialises fresh barriers
        inval = header_call_stmt(
            "tl::mbarrier_invalidate_block", (element_address(full, IntImm(0)), IntImm(depth)), span
        )
        return SeqStmt(tuple(body0) + (steady, inval), span)

    def barrier_ring(self, role: str, count: int | None = None) -> Buffer:
        """`count` (default: the depth) mbarriers named after the loop variable and `role`."""
        n = self.depth if count is None else count
        return Buffer(f"{self.loop.var.name}_{role}", (IntImm(n),), DataType("uint64"), "shared.barrier",
                      None, self.loop.span)  # fmt: skip

    @contextlib.contextmanager
    def loop_scope(self) -> Iterator[None]:
        """The analyzer inside the loop body: its variable ranges over the trip count when the
        step is 1 (guards such as `k + d < n` then fold where provable)."""
        loop = self.loop
        with self.an.scope():
            if loop.step is None or const_int(loop.step) == 1:
                self.an.bind_range(loop.var, loop.start, loop.extent)
            yield

    def tma_loads(self, producers: dict, bmap: dict, full: Buffer) -> Any:
        """`loads(j, slot)`: the producers of iteration j as TMA copies into `slot`, completing on full[slot]."""
        prod = sorted(producers)

        def loads(j: Any, slot: Any) -> list:
            return self.tma_group(prod, j, slot, bmap, BufferLoad(full, (slot,), full.dtype, self.loop.span))

        return loads

    def tma_group(self, indices: list, it: Any, slot: Any, bmap: dict, barrier: BufferLoad) -> list:
        """The producers `indices` of iteration `it` as TMA copies into `slot` completing on
        `barrier`: expect_tx and load each, the last one also arrives."""
        out = []
        for pos, i in enumerate(indices):
            s = self.producer(self.slots[i], it, slot, bmap)
            ann = {k: v for k, v in s.annotations.items() if k != "async"}
            ann["tma_barrier"] = barrier
            if pos == len(indices) - 1:
                ann["tma_arrive"] = True
            out.append(replace(s, annotations=FrozenDict(ann)))
        return out

    def overlap_plan(self, bmap: dict, cons: list) -> OverlapPlan | None:
        """overlap_gemms' plan for the consumers (any trip's slot will do), or None."""
        if any(not any(s is x for x in self.slots) for s in self.items):
            return None  # aliases / allocations in the body: kept out of the rotation
        slot = IntImm(0)
        consumers = [SlotIndexer(bmap, slot).visit(self.slots[i]) for i in cons]
        return plan_overlap(consumers, self.rw.layouts, set(bmap.values()))

    def warp_specialized(self, loads: Any, producers: list, full: Buffer, bmap: dict, cons: list,
                         plan: OverlapPlan | None) -> Stmt:  # fmt: skip
        """Producer and consumer loops on full / empty rings (module docstring, "Warp specialization")."""
        loop, depth, span = self.loop, self.depth, self.loop.span
        threads = self.rw.kernel.num_threads
        empty = self.barrier_ring("empty")
        # ring position: iterations of earlier executions of this loop (a persistent outer loop) count
        # too; a loop at the top of its kernel runs once and starts at 0
        count = Buffer(f"{loop.var.name}_ring_pos", (IntImm(1),), DataType("int32"), "local.var", None, span)
        once = any(x is self.loop for x in flat_stmts(self.rw.kernel.body))
        base = IntImm(0) if once else BufferLoad(count, (IntImm(0),), count.dtype, span)
        pos = _RingPos(base, depth, span)
        n = loop.extent
        advance = seq() if once else BufferStore(count, (IntImm(0),), base + n, span)
        if plan is not None:
            late = (self.barrier_ring("late_full"), self.barrier_ring("late_empty"))
            inits = _ws_inits(None if once else count, [(full, empty), late], depth, threads, span)
            lead = self.lead_protocol(once)
            body = self.overlapped(plan, pos, (full, empty), late, bmap, cons, advance, producers, lead)
            return SeqStmt(tuple(inits) + tuple(lead.inits) + (*body, advance, *lead.after), span)
        k = self.iter_index()
        slot = pos.slot(k)
        producer = self.producer_role([*self.wait_free(pos, empty, k), *loads(k, slot)], advance)
        wait = pos.wait(full, k)
        consumers = [SlotIndexer(bmap, slot).visit(self.slots[i]) for i in cons]
        head = [s for s in self.items if not any(s is x for x in self.slots)]
        role = {"tl.ws_role": "consumer"}
        after: list = []
        if self.async_wgmma(consumers):
            # keep one wgmma group in flight: iteration k's gemm runs while k-1's slot is released;
            # warp_specialize waits for the last group after the loop, then the last slot is released
            gemm = consumers[0]
            consumers = [
                replace(gemm, annotations=gemm.annotations.set(wgmma_wait=False)),
                header_call_stmt("tl::wgmma_wait<1>", (), span),
            ]
            release = self.guard(compare("gt", k, 0), [pos.release(empty, k - 1)])
            role[ASYNC_ACCUMULATOR] = gemm.C.buffer.name
            after = self.guard(compare("gt", n, 0), [pos.release(empty, n - 1)])
        else:
            release = [pos.release(empty, k)]
        consumer = replace(loop, kind="serial", annotations=self.rest.set(**role),
                           body=seq(*head, wait, *consumers, *release))  # fmt: skip
        inits = _ws_inits(None if once else count, [(full, empty)], depth, threads, span)
        return SeqStmt(tuple(inits) + (producer, consumer, *after, advance), span)

    def producer_role(self, fill: list, advance: Stmt, lead: _Lead | None = None) -> For:
        """The producer's copy of the loop (`fill`: one trip's waits and loads), in the one-trip
        loop annotated `tl.ws_role="producer"` that warp_specialize hands to its warpgroup. It
        advances its own ring position: warp_specialize gives the producer only this loop.
        `lead`: the lead copies it issues first."""
        loop = self.loop
        producer_loop = replace(loop, kind="serial", annotations=self.rest, body=seq(*fill))
        role = Var("ws_producer", loop.var.dtype)
        before, after = (lead.produce, lead.after) if lead is not None else ([], [])
        return For(role, IntImm(0), IntImm(1), "serial", seq(*before, producer_loop, advance, *after), None,
                   FrozenDict({"tl.ws_role": "producer"}), loop.span)  # fmt: skip

    def lead_protocol(self, once: bool) -> _Lead:
        """The lead copies (`lead_copies`) as TMA loads the producer issues before the loop's
        first trip, on a one-slot mbarrier pair: `<loop>_lead_full` (the tiles landed) and, when
        the loop runs more than once per kernel (a persistent outer loop), `<loop>_lead_empty`
        (the consumers finished the loop: the next execution may overwrite the tiles), its phase
        counted in `<loop>_lead_runs`, which both roles advance after the loop."""
        if not self.leads:
            return _Lead([], [], [], [], [])
        loop, span = self.loop, self.loop.span
        self.rw.taken.update(id(c) for c in self.leads)
        full = self.barrier_ring("lead_full", 1)
        runs = Buffer(f"{loop.var.name}_lead_runs", (IntImm(1),), DataType("int32"), "local.var", None, span)
        base = IntImm(0) if once else BufferLoad(runs, (IntImm(0),), runs.dtype, span)
        pos = _RingPos(base, 1, span)
        loads = []
        for i, c in enumerate(self.leads):
            ann = {k: v for k, v in c.annotations.items() if k != "async"}
            ann.update(tma_barrier=_at(full, IntImm(0)), tma_arrive=i == len(self.leads) - 1)
            ann[LEAD_COPY] = True
            loads.append(replace(c, annotations=FrozenDict(ann)))
        threads = self.rw.kernel.num_threads
        if once:  # no later execution waits for the tile to be free
            return _Lead(_ws_inits(None, [(full, None)], 1, threads, span), loads, [pos.wait(full, IntImm(0))], [], [])
        empty = self.barrier_ring("lead_empty", 1)
        free = self.guard(compare("ge", base, 1), [pos.wait_free(empty, IntImm(0))])
        advance = BufferStore(runs, (IntImm(0),), base + 1, span)
        return _Lead(_ws_inits(runs, [(full, empty)], 1, threads, span), [*free, *loads],
                     [pos.wait(full, IntImm(0))], [pos.release(empty, IntImm(0))], [advance])  # fmt: skip

    def wait_free(self, pos: _RingPos, ring: Buffer, it: Any) -> list:
        """The producer's wait before refilling trip `it`'s slot: none in the ring's first lap."""
        return self.guard(compare("ge", pos.base + it, self.depth), [pos.wait_free(ring, it)])

    def overlapped(self, plan: OverlapPlan, pos: _RingPos, early_rings: tuple, late_rings: tuple, bmap: dict,
                   cons: list, advance: Stmt, producers: list, lead: _Lead) -> list:  # fmt: skip
        """The producer loop and the consumer loop of `overlap_gemms` (its module docstring): the
        last gemm G runs one trip late, its B tiles on a ring pair of their own ("late")."""
        loop, span = self.loop, self.loop.span
        n = loop.extent
        threads = self.rw.kernel.num_threads
        (full, empty), (late_full, late_empty) = early_rings, late_rings
        slot, wait, release = pos.slot, pos.wait, pos.release

        late = [i for i in producers if bmap[self.slots[i].dst.buffer] in plan.late_buffers]
        early = [i for i in producers if i not in late]
        k = self.iter_index()
        fill = [*self.wait_free(pos, empty, k), *self.tma_group(early, k, slot(k), bmap, _at(full, slot(k))),
                *self.wait_free(pos, late_empty, k),
                *self.tma_group(late, k, slot(k), bmap, _at(late_full, slot(k)))]  # fmt: skip
        producer = self.producer_role(fill, advance, lead)

        def at(i: int, it: Any) -> Stmt:
            """Consumer statement `i` of trip `it`."""
            return SlotIndexer(bmap, slot(it)).visit(substitute(self.slots[i], {loop.var: self.var_at(it)}))

        si = plan.s_index
        s_i, g_i, before, middle = cons[si], cons[-1], cons[:si], cons[si + 1 : -1]
        pre, post = middle[: plan.join], middle[plan.join :]
        pingpong = threads == 2 * WARPGROUP

        def turn(what: str) -> list:
            return [header_call_stmt(f"tl::pingpong_{what}", (), span)] if pingpong else []

        def retire(groups_left: int, regs: tuple) -> list:
            return [header_call_stmt(f"tl::wgmma_wait<{groups_left}>", (), span)] + [
                header_call_stmt(FENCE_REGISTER_TILE, (StringImm(b.name),), span) for b in regs
            ]

        # the consumers' barrier before the turns start: a barrier inject_sync would otherwise put
        # inside warpgroup 0's first turn (tiles stored before the loop) would wait for warpgroup 1
        # waiting for that turn
        # the lead tiles (Q) are free once the last trip's S has retired, unless later statements read them
        tiles = {c.dst.buffer for c in self.leads}
        free_after_s = not any(names(self.slots[i], tiles) for i in [*middle, g_i])

        def lead_free(trip: Any) -> list:
            return self.guard(compare("eq", trip, n - 1), lead.release) if free_after_s else []

        first = [intrinsic_stmt(SYNC_OP, (), span), wait(full, IntImm(0)), *[at(i, IntImm(0)) for i in before],
                 *turn("first"),
                 _no_wait(at(s_i, IntImm(0))), *turn("pass"), *retire(0, plan.s_registers),
                 release(empty, IntImm(0)), *lead_free(IntImm(0)), *[at(i, IntImm(0)) for i in middle]]  # fmt: skip
        j = Var(loop.var.name, loop.var.dtype)
        cur, prev = j + 1, j
        steady = [wait(full, cur), *[at(i, cur) for i in before], *turn("wait"), _no_wait(at(s_i, cur)),
                  wait(late_full, prev), _no_wait(at(g_i, prev)), *turn("pass"),
                  *retire(1, plan.s_registers), release(empty, cur), *lead_free(cur), *[at(i, cur) for i in pre],
                  *retire(0, plan.g_registers), release(late_empty, prev),
                  *[at(i, cur) for i in post]]  # fmt: skip
        ann = self.rest.set(**{"tl.ws_role": "consumer", "tl.overlapped_gemm": True})
        consumer = For(j, IntImm(0), n - 1, "serial", seq(*steady), None, ann, span)
        last = n - 1
        final = [wait(late_full, last), *turn("wait"), at(g_i, last), *turn("last"),
                 release(late_empty, last)]  # fmt: skip
        ran = compare("gt", n, 0)
        unread = self.guard(compare("le", n, 0), lead.release) if free_after_s else lead.release  # no trip did
        return [producer, *lead.wait, *self.guard(ran, first), consumer, *self.guard(ran, final), *unread]

    def async_wgmma(self, consumers: list) -> bool:
        """The iteration's only consumer is a wgmma gemm (its group may stay in flight)."""
        if len(consumers) != 1 or not isinstance(consumers[0], Gemm):
            return False
        from .infer_layout import wgmma_plan_of

        return wgmma_plan_of(self.rw.layouts.get(consumers[0].C.buffer)) is not None

    def pipelined(self, stage, order, producers: dict) -> Stmt:
        if self.tma_fits(stage, producers):
            return self.pipelined_tma(producers)
        loop, depth, span = self.loop, self.depth, self.loop.span
        bmap = self.multi_buffer(producers)
        n = loop.extent
        dmin = min(producers.values())
        prod = sorted(producers, key=lambda i: order[i] if order is not None else i)
        cons = [i for i in range(len(self.slots)) if i not in producers]
        if stage is not None:
            cons.sort(key=lambda i: (stage[i], order[i]))
            pmin = min(order[i] for i in prod)
            pos = 0
            while pos < len(cons) and order[cons[pos]] < pmin:
                pos += 1
        else:
            pos = 0

        def commit() -> Stmt:
            return intrinsic_stmt(COMMIT_OP, (), span)

        def sync() -> Stmt:
            return intrinsic_stmt(SYNC_OP, (), span)

        # Prologue: the producers' work for iterations before the first trip.
        prologue: list = []
        for v in range(-(depth - 1), 0):
            group: list = []
            for i in prod:
                j = v + producers[i]
                if j < 0:
                    continue
                s = self.producer(self.slots[i], IntImm(j), IntImm(j % depth), bmap)
                group.append((j, s))
            prologue.extend(self.grouped(group, lambda j: compare("lt", IntImm(j), n)))
            prologue.append(commit())

        # Steady state.
        k = self.iter_index()
        with self.loop_scope():
            group = []
            for i in prod:
                d = producers[i]
                s = self.producer(self.slots[i], self.offset(k, d), binary("floormod", self.offset(k, d), depth), bmap)
                group.append((d, s))
            block = self.grouped(group, lambda d: compare("lt", self.offset(k, d), n)) + [commit()]
        slot_c = binary("floormod", k, depth)
        consumers = [SlotIndexer(bmap, slot_c).visit(self.slots[i]) for i in cons]
        head = [s for s in self.items if not any(s is x for x in self.slots)]
        if pos == 0:
            body = head + block + [intrinsic_stmt(WAIT_OP, (IntImm(dmin),), span), sync()] + consumers + [sync()]
        else:
            wait = intrinsic_stmt(WAIT_OP, (IntImm(dmin - 1),), span)
            body = head + [wait, sync()] + consumers[:pos] + block + consumers[pos:]
        steady = replace(loop, kind="serial", annotations=self.rest, body=seq(*body))
        return SeqStmt(tuple(prologue) + (steady,), span)

    def grouped(self, group: list, cond_of) -> list:
        """Consecutive producers with the same key share one guard `if cond_of(key):`."""
        out: list = []
        run: list = []
        key = None
        for kk, s in group + [(None, None)]:
            if run and (s is None or kk != key):
                out.extend(self.guard(cond_of(key), run))
                run = []
            if s is not None:
                key = kk
                run.append(s)
        return out


__all__ = ["inject_pipeline"]
