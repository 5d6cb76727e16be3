"""auto_persistent: a warp-specialized grid becomes one resident block per SM walking the tiles.

Requires: a tile-level PrimFunc (before `infer_layout`); `ctx.target` a CUDA target.
Guarantees: on sm_90a, a kernel that

* has a static grid of more tiles than the GPU has SMs,
* has at its top level allocations, then statements with exactly one `T.Pipelined` loop
  (num_stages >= 2) among them, and is shaped either
  - like a GEMM: a grid of two dimensions, and its only tile ops are copies, fills, gemms and
    hints (what the automatic warp specialization of inject_pipeline accepts), or
  - like attention: its tile ops are those and reductions from registers to registers, and
    the loop's body is one whose last gemm can run one trip late (`overlap_gemms.plan_overlap`
    on the body's shape, layouts not inferred yet: FlashAttention's P·V),
* cannot depend on the order or number of blocks — no atomics, `while` loops, explicit
  warp-specialized / cluster code, and no `T.use_swizzle` other than row panels,
* and whose shared memory already allows only one block per SM (so inject_pipeline will
  warp-specialize it: `_one_block_per_sm`, for attention with the rule of overlapped loops,
  whose tiles must also fit one block side by side: `_ws_smem_fits`; attention with a
  `T.use_swizzle` of its own is left alone),

is rewritten as

    with T.Kernel(S) as block_id:                  # S = the target's SM count (Target.sm_count)
        <allocations>
        for wave in T.serial(ceildiv(tiles, S)):
            tile_id = wave * S + block_id
            if tile_id < tiles:
                bx, by(, bz) = <tile_id's block indices>
                <the original statements>

(S from `_sm_count`). A GEMM walks its tiles in panels of P block rows, column by column (P =
the kernel's `T.use_swizzle` panel, else 16). Attention walks them in launch order, x fastest
(the blocks of one head share its K/V tiles in L2); when its loop grows with bx (causal,
`heavy_blocks_first.growing_x_extent`) bx is reversed, longest first, and odd waves take
`S - 1 - block_id`'s tile, so each block pairs long tiles with short ones (`TILE_WALK` on the
kernel says which, for the language server). Every tile is computed by exactly one block with
the statements it had, so results are unchanged; the producer warpgroup runs into the next
tile while the consumers finish the last one, and no block waits for launch.

Epilogues drain while the next tile computes. A GEMM's top-level copy of a register fragment
to global memory after the loop goes, when shared memory has room, through a new shared tile
that `plan_tma_stores` turns into TMA stores; a shared tile the kernel stages itself (written
after the loop, stored to global memory, used nowhere else: FlashAttention's O) keeps its
tile. Either store is marked `tma_store_async` (thread 0 issues it and moves on), and the
program waits for it to have read the tile (`tl::tma_store_wait<0>`, then a barrier) just
before the next tile writes it, and once more before the block exits. Everything else is
returned unchanged; `tl.disable_auto_persistent` (and the switches of TMA and warp
specialization) turn it off.

Why (H200, 2026-11-29, fp16 8192³, 128×256×64, 3 stages, 256 threads): 601 TFLOP/s as launched,
647 persistent with the shared-memory epilogue — cuBLAS 642 in the same run. FlashAttention
8×32×4096×128, 128×128 / 2 / 256, fast math (2026-11-30, same run): 580 → 588 non-causal,
533 → 539 causal.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from ...ir.buffer import Buffer, BufferRegion, Range
from ...ir.decisions import ScheduleDecision, record
from ...ir.dtype import int32
from ...ir.expr import Call, IntImm, StringImm, Var, binary, compare, const_int
from ...ir.function import PrimFunc
from ...ir.node import FrozenDict
from ...ir.stmt import (
    Allocate,
    Copy,
    Evaluate,
    For,
    Hint,
    IfThenElse,
    KernelLaunch,
    LetStmt,
    Reduce,
    SeqStmt,
    TileOp,
    flat_stmts,
)
from ...ir.visitor import Mutator, collect
from ...pass_config import in_force
from ...transform.context import CompileContext
from ...transform.inject_pipeline import shared_tile_bytes
from ...transform.inject_sync import make_sync
from ..target import Target, target_of
from .auto_rasterize import order_free, reorderable_grid
from .heavy_blocks_first import growing_x_extent

DISABLE_KEY = "tl.disable_auto_persistent"
DEFAULT_PANEL = 16
DEFAULT_SMS = 132  # H100 SXM / H200
STORE_ASYNC = "tma_store_async"  # the store's wait is left to the next tile (tma_lower.tma_store_stmt)
SMEM_LIMIT = 227 * 1024  # largest dynamic shared memory of one block on sm_90
SMEM_SLACK = 1024  # mbarriers
TILE_WALK = "tile_walk"  # kernel attribute: how the persistent blocks walk the tiles (for the language server)


def auto_persistent(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    t = target_of(func, ctx)
    cfg = in_force(func, ctx)
    off = (DISABLE_KEY, "tl.disable_warp_specialized", "tl.disable_tma_lower")
    if t is None or t.kind != "cuda" or t.sm < 90 or not t.arch.endswith("a") or any(cfg.get(k) for k in off):
        return func
    if cfg.get("tl.enable_async_copy") is False:
        return func
    sms = _sm_count(t)

    made: list = []

    class _Kernels(Mutator):
        def visit_KernelLaunch(self, k: KernelLaunch) -> KernelLaunch:
            new = _rewrite(k, sms)
            if new is not None:
                made.append(_schedule_record(k, new, sms))
            return new or k

    body = _Kernels().visit(func.body)
    return func if body is func.body else record(func.with_body(body), *made)


def _schedule_record(old: KernelLaunch, new: KernelLaunch, sms: int) -> ScheduleDecision:
    tiles = 1
    for g in old.grid:
        tiles *= const_int(g) or 1
    staged = _shared_allocs(new) > _shared_allocs(old)  # the epilogue tile `_stage_epilogue` added
    walk = str(new.attrs.get(TILE_WALK, "in row panels"))
    return ScheduleDecision(old.span, "persistent", blocks=sms, tiles=tiles, walk=walk, epilogue_tma_store=staged)


def _shared_allocs(k: KernelLaunch) -> int:
    return len(collect(k.body, lambda n: isinstance(n, Allocate) and n.buffer.is_shared))


def _sm_count(target: Target) -> int:
    """The SM count the target was resolved with (`Target.sm_count`: given, the device's, or the
    architecture's usual part) — an explicit compile input, part of the cache key."""
    return target.sm_count or DEFAULT_SMS


def _rewrite(k: KernelLaunch, sms: int) -> KernelLaunch | None:
    from ...transform.inject_pipeline import WS_TILE_OPS, _ws_smem_fits

    dims = [const_int(g) for g in k.grid]
    if not k.block_vars or None in dims or not order_free(k):
        return None
    if math.prod(dims) <= sms or k.num_threads % 128 or k.num_threads + 128 > 1024:
        return None
    stmts = list(k.body.stmts) if isinstance(k.body, SeqStmt) else [k.body]
    n_alloc = 0
    while n_alloc < len(stmts) and isinstance(stmts[n_alloc], Allocate):
        n_alloc += 1
    allocs, rest = stmts[:n_alloc], stmts[n_alloc:]
    if any(a.init is not None for a in allocs) or collect(tuple(rest), lambda n: isinstance(n, Allocate)):
        return None
    loops = [s for s in rest if isinstance(s, For) and s.kind == "pipelined"]
    every_loop = collect(tuple(rest), lambda n: isinstance(n, For) and n.kind == "pipelined")
    if len(loops) != 1 or len(every_loop) != 1 or int(loops[0].annotations.get("num_stages", 0) or 0) < 2:
        return None
    loop = loops[0]
    ops = collect(tuple(rest), lambda n: isinstance(n, TileOp))
    stages = {c.dst.buffer: int(loop.annotations["num_stages"]) for c in _loop_copies(loop)}
    at = rest.index(loop)
    if all(isinstance(o, WS_TILE_OPS) for o in ops):
        grid = reorderable_grid(k)
        return None if grid is None else _gemm(k, grid, sms, allocs, rest, loop, ops, stages)
    if not _attention_shaped(loop, ops) or not _fills_the_sm(k, stages, alias_one=True):
        return None
    if not _ws_smem_fits(k, stages) or any(isinstance(o, Hint) and o.name == "use_swizzle" for o in ops):
        # the wave loop keeps every tile live (no overlay of O on Q): without warp specialization
        # it might not fit; a block order of the author's own stays theirs
        return None
    after, staged = _async_user_stores(rest[: at + 1], rest[at + 1 :])
    heavy = growing_x_extent(k) is not None
    return _persistent_linear(k, dims, sms, allocs, rest[: at + 1] + after, staged, heavy)


def _gemm(k: KernelLaunch, grid: tuple, sms: int, allocs: list, rest: list, loop: For, ops: list,
          stages: dict) -> Any:  # fmt: skip
    """The GEMM-shaped kernel's rewrite (panel order, staged epilogue), or None."""
    gx, gy = grid
    panel = DEFAULT_PANEL
    for h in (o for o in ops if isinstance(o, Hint) and o.name == "use_swizzle"):
        if h.args.get("order", "row") != "row" or int(h.args.get("panel_size", 8)) <= 0:
            return None  # a column order or an explicit opt-out: keep the author's launch
        panel = int(h.args.get("panel_size", 8))
    if not _fills_the_sm(k, stages):
        return None
    used = shared_tile_bytes([a for a in allocs if a.buffer.is_shared], stages, align=1024)
    if used is None:
        return None
    after = rest[rest.index(loop) + 1 :]
    epilogue, extra = _staged_epilogue(after, SMEM_LIMIT - SMEM_SLACK - used)
    rest = rest[: rest.index(loop) + 1] + epilogue
    return _persistent(k, gx, gy, sms, panel, allocs + extra, rest, bool(extra))


def _attention_shaped(loop: For, ops: list) -> bool:
    """The loop's body is one inject_pipeline can run with its last gemm one trip late
    (`overlap_gemms`, judged on the shape alone: layouts are not inferred yet), and the kernel's
    other tile ops are ones the warp-specialized form takes (reductions in registers)."""
    from ...transform.inject_pipeline import WS_TILE_OPS
    from .overlap_gemms import plan_overlap

    def in_registers(o: Any) -> bool:
        return isinstance(o, Reduce) and o.src.buffer.scope == o.dst.buffer.scope == "local.fragment"

    if not all(isinstance(o, WS_TILE_OPS) or in_registers(o) for o in ops):
        return False
    items = flat_stmts(loop.body)
    loads = [s for s in items if isinstance(s, Copy) and s.src.buffer.scope == "global" and s.dst.buffer.is_shared]
    body = [s for s in items if not isinstance(s, (Allocate, LetStmt)) and not any(s is c for c in loads)]
    return plan_overlap(body, None, {c.dst.buffer for c in loads}) is not None


def _async_user_stores(before: list, after: list) -> tuple[list, bool]:
    """`after` (the statements after the loop) with each shared → global copy of a tile that only
    `after` uses, written before the copy and not touched after it (an epilogue the kernel stages
    itself, FlashAttention's O tile) made asynchronous: the stores drain while the next tile
    computes, and the first write to the tile waits for the last tile's stores (then a barrier).
    Also whether any was."""
    from ...transform.inject_sync import collect_accesses
    from .overlap_gemms import names

    out: list = list(after)
    waits: set = set()
    for i, s in enumerate(after):
        if not (isinstance(s, Copy) and s.src.buffer.is_shared and s.dst.buffer.scope == "global"):
            continue
        tile = {s.src.buffer}
        if names(tuple(before), tile) or names(tuple(after[i + 1 :]), tile):
            continue
        w = next((j for j in range(i) if tile & collect_accesses(after[j]).buffers_written()), None)
        if w is None:
            continue
        out[i] = replace(s, annotations=FrozenDict({**dict(s.annotations), STORE_ASYNC: True}))
        waits.add(w)
    staged: list = []
    for j, s in enumerate(out):
        if j in waits:
            staged += [store_wait(s.span), make_sync(s.span)]
        staged.append(s)
    return staged, bool(waits)


def _fills_the_sm(k: KernelLaunch, stages: dict, alias_one: bool = False) -> bool:
    """Shared memory keeps `k` at one block per SM (inject_pipeline's warp-specialization rule;
    `alias_one` as there: the rule for loops whose last gemm runs one trip late)."""
    from ...transform.inject_pipeline import _one_block_per_sm

    return _one_block_per_sm(k, stages, alias_one=alias_one)


def _loop_copies(loop: For) -> list:
    return [c for c in collect(loop.body, lambda n: isinstance(n, Copy)) if c.src.buffer.scope == "global"]


def _aligned(nbytes: int) -> int:
    """`nbytes` rounded up to plan_shared_memory's buffer alignment (1024, for swizzled tiles):
    the staging tile's size, counted as `shared_tile_bytes(..., align=1024)` counts the rest."""
    return -(-nbytes // 1024) * 1024


def _staged_epilogue(after: list, room: int) -> tuple[list, list]:
    """Top-level fragment → global copies routed through new shared tiles while they fit in
    `room` bytes: (the new statements, the new allocations)."""
    out, allocs = [], []
    for s in after:
        if not (isinstance(s, Copy) and s.src.buffer.scope == "local.fragment" and s.dst.buffer.scope == "global"):
            out.append(s)
            continue
        frag = s.src.buffer
        shape = [const_int(g.extent) for g in s.src.region]
        if None in shape or any(const_int(g.begin) != 0 for g in s.src.region):
            out.append(s)
            continue
        size = _aligned(math.prod(shape) * s.dst.buffer.dtype.bytes)
        if size > room:
            out.append(s)
            continue
        room -= size
        tile = Buffer(f"{frag.name}_out", tuple(IntImm(d) for d in shape), s.dst.buffer.dtype, "shared.dyn",
                      None, s.span)  # fmt: skip
        whole = BufferRegion(tile, tuple(Range(IntImm(0), IntImm(d)) for d in shape))
        allocs.append(Allocate(tile, span=s.span))
        if len(allocs) == 1:  # before the first staging write: the last tile's stores have read theirs
            out += [store_wait(s.span), make_sync(s.span)]
        store = FrozenDict({**dict(s.annotations), STORE_ASYNC: True})
        out += [Copy(s.src, whole, s.annotations, s.span), Copy(whole, s.dst, store, s.span)]
    return out, allocs


def store_wait(span: Any) -> Evaluate:
    """Wait until this thread's TMA stores have finished reading shared memory. Every thread
    runs it: only the thread that issued stores (thread 0) has bulk groups to wait for."""
    return Evaluate(Call("tl.call", (StringImm("tl::tma_store_wait<0>"),), int32, span=span), span=span)


def _walk(k: KernelLaunch, sms: int, total: int, allocs: list, tile_stmts: Any, heavy: bool = False,
          after: tuple = (), attrs: Any = None) -> KernelLaunch:  # fmt: skip
    """`k` as `sms` resident blocks: a loop over waves, `tile_id = wave * sms + block_id` (`heavy`:
    odd waves count the blocks from the other end), and for each tile below `total` the
    statements `tile_stmts(tile_id)` returns; `after` follows the wave loop."""
    span = k.span
    block = Var("block_id", int32)
    wave = Var("wave", int32)
    tile = Var("tile_id", int32)
    place = block
    if heavy:  # odd waves: sms - 1 - block
        place = block + binary("floormod", wave, IntImm(2)) * (IntImm(sms - 1) - block * 2)
    loop_body = SeqStmt(
        (
            LetStmt(tile, wave * sms + place, span),
            IfThenElse(compare("lt", tile, IntImm(total)), SeqStmt(tuple(tile_stmts(tile)), span), None, span),
        ),
        span,
    )
    loop = For(wave, IntImm(0), IntImm(-(-total // sms)), "serial", loop_body, None, span=span)
    body = SeqStmt((*allocs, loop, *after), span)
    return replace(k, grid=(IntImm(sms),), block_vars=(block,), body=body, attrs=k.attrs if attrs is None else attrs)


def _persistent(
    k: KernelLaunch, gx: int, gy: int, sms: int, panel: int, allocs: list, rest: list, staged: bool
) -> KernelLaunch:
    span = k.span
    bx, by = k.block_vars[0], k.block_vars[1]
    total = gx * gy

    def tile_stmts(tile: Var) -> list:
        # panels of `panel` block rows (by), walked column by column (bx) inside a panel
        per_panel = gx * panel
        first = binary("floordiv", tile, IntImm(per_panel)) * panel
        rows = binary("min", IntImm(gy) - first, IntImm(panel))
        within = binary("floormod", tile, IntImm(per_panel))
        unit = [LetStmt(v, IntImm(0), span) for v in k.block_vars[2:]]  # a grid z of 1
        return [
            LetStmt(by, first + binary("floormod", within, rows), span),
            LetStmt(bx, binary("floordiv", within, rows), span),
            *unit,
            *rest,
        ]

    return _walk(k, sms, total, allocs, tile_stmts, after=_final_store_wait(staged, span))


def _persistent_linear(
    k: KernelLaunch, dims: list, sms: int, allocs: list, rest: list, staged: bool, heavy: bool
) -> KernelLaunch:
    """One resident block per SM walking the tiles in launch order (x fastest: FlashAttention's
    blocks of one head share its K/V tiles in L2). `heavy` (a loop growing with bx, causal
    attention): bx reversed, longest first, and the blocks take every other wave's tiles in
    reverse, so each block's longest and shortest tiles pair up (a plain round robin gives block
    b tiles of one residue of b modulo the x extent: up to 20 % more work for some blocks)."""
    span = k.span

    def tile_stmts(tile: Var) -> list:
        x = binary("floormod", tile, IntImm(dims[0]))
        lets = [LetStmt(k.block_vars[0], IntImm(dims[0] - 1) - x if heavy else x, span)]
        stride = dims[0]
        for v, d in zip(k.block_vars[1:], dims[1:]):
            lets.append(LetStmt(v, binary("floormod", binary("floordiv", tile, IntImm(stride)), IntImm(d)), span))
            stride *= d
        return [*lets, *rest]

    walk = "longest first, every other wave reversed" if heavy else "in launch order"
    attrs = FrozenDict({**dict(k.attrs), TILE_WALK: walk})
    return _walk(k, sms, math.prod(dims), allocs, tile_stmts, heavy, _final_store_wait(staged, span), attrs)


def _final_store_wait(staged: bool, span: Any) -> tuple:
    """After the wave loop: the block's last stores finish reading their tile before it exits."""
    return (store_wait(span),) if staged else ()
