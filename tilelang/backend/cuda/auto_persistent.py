"""auto_persistent: a warp-specialized GEMM grid becomes one resident block per SM walking the tiles.

Requires: a tile-level PrimFunc (before `infer_layout`); `ctx["target"]` a CUDA target.
Guarantees: on sm_90a, a kernel that

* has a static two-dimensional grid of more tiles than the GPU has SMs,
* is shaped like a GEMM: its top level is allocations, then statements with exactly one
  `T.Pipelined` loop (num_stages >= 2) among them, and its only tile ops are copies, fills,
  gemms and hints (what the automatic warp specialization of inject_pipeline accepts),
* cannot depend on the order or number of blocks — no atomics, `while` loops, explicit
  warp-specialized / cluster code, and no `T.use_swizzle` other than row panels,
* and whose shared memory already allows only one block per SM (so inject_pipeline will
  warp-specialize it: `_one_block_per_sm`),

is rewritten as

    with T.Kernel(S) as block_id:                  # S = the GPU's SM count (132 without a GPU)
        <allocations>
        for wave in T.serial(ceildiv(gx * gy, S)):
            tile_id = wave * S + block_id
            if tile_id < gx * gy:
                bx, by = <tile_id in panels of P block rows, walked column by column>
                <the original statements>

(P = the kernel's `T.use_swizzle` panel, else 16; S from `_sm_count`). Every tile is computed by exactly one block
with the statements it had, so results are unchanged; the producer warpgroup runs into the next
tile while the consumers finish the last one, and no block waits for launch. In addition, when
shared memory has room, a top-level copy of a register fragment to global memory after the loop
(the GEMM epilogue) goes through a new shared tile, which `plan_tma_stores` turns into TMA
stores that drain while the next tile computes: the stores are marked `tma_store_async` (thread
0 issues them and moves on), and the program waits for them to have read the tile
(`tl::tma_store_wait<0>`, then a barrier) just before the next tile writes it, and once more
after the block's last tile, before it exits. Everything else is returned unchanged;
`tl.disable_auto_persistent` (and the switches of TMA and warp specialization) turn it off.

Why (H200, 2026-11-29, fp16 8192³, 128×256×64, 3 stages, 256 threads): 601 TFLOP/s as launched,
647 persistent with the shared-memory epilogue — cuBLAS 642 in the same run.
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from typing import Any

from ...ir.buffer import Buffer, BufferRegion, Range
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
    SeqStmt,
    TileOp,
)
from ...ir.visitor import Mutator, collect
from ...pass_config import in_force
from ...transform.inject_pipeline import shared_tile_bytes
from ...transform.inject_sync import make_sync
from ..target import target_of
from .auto_rasterize import reorderable_grid

DISABLE_KEY = "tl.disable_auto_persistent"
DEFAULT_PANEL = 16
DEFAULT_SMS = 132  # H100 SXM / H200
STORE_ASYNC = "tma_store_async"  # the store's wait is left to the next tile (tma_lower.tma_store_stmt)
SMEM_LIMIT = 227 * 1024  # largest dynamic shared memory of one block on sm_90
SMEM_SLACK = 1024  # mbarriers


def auto_persistent(func: PrimFunc, ctx: dict | None = None) -> PrimFunc:
    t = target_of(func, ctx)
    cfg = in_force(func, ctx)
    off = (DISABLE_KEY, "tl.disable_warp_specialized", "tl.disable_tma_lower")
    if t is None or t.kind != "cuda" or t.sm < 90 or not t.arch.endswith("a") or any(cfg.get(k) for k in off):
        return func
    if cfg.get("tl.enable_async_copy") is False:
        return func
    sms = _sm_count()

    class _Kernels(Mutator):
        def visit_KernelLaunch(self, k: KernelLaunch) -> KernelLaunch:
            return _rewrite(k, sms) or k

    body = _Kernels().visit(func.body)
    return func if body is func.body else func.with_body(body)


def _sm_count() -> int:
    """The SM count of the GPU torch uses, when torch is loaded (every compile-and-run path loads it);
    otherwise the table value — the language server never imports torch just to ask."""
    torch = sys.modules.get("torch")
    if torch is None:
        return DEFAULT_SMS
    try:
        if torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 9:
            return int(torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count)
    except Exception:  # noqa: BLE001 - no usable GPU: the table value
        pass
    return DEFAULT_SMS


def _rewrite(k: KernelLaunch, sms: int) -> KernelLaunch | None:
    from ...transform.inject_pipeline import WS_TILE_OPS

    grid = reorderable_grid(k)
    if grid is None:
        return None
    gx, gy = grid
    total = gx * gy
    if total <= sms or k.num_threads % 128 or k.num_threads + 128 > 1024:
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
    if not all(isinstance(o, WS_TILE_OPS) for o in ops):
        return None
    panel = DEFAULT_PANEL
    for h in (o for o in ops if isinstance(o, Hint) and o.name == "use_swizzle"):
        if h.args.get("order", "row") != "row" or int(h.args.get("panel_size", 8)) <= 0:
            return None  # a column order or an explicit opt-out: keep the author's launch
        panel = int(h.args.get("panel_size", 8))
    stages = {c.dst.buffer: int(loop.annotations["num_stages"]) for c in _loop_copies(loop)}
    if not _fills_the_sm(k, stages):
        return None
    used = shared_tile_bytes([a for a in allocs if a.buffer.is_shared], stages, align=1024)
    if used is None:
        return None
    after = rest[rest.index(loop) + 1 :]
    epilogue, extra = _staged_epilogue(after, SMEM_LIMIT - SMEM_SLACK - used)
    rest = rest[: rest.index(loop) + 1] + epilogue
    return _persistent(k, gx, gy, sms, panel, allocs + extra, rest, bool(extra))


def _fills_the_sm(k: KernelLaunch, stages: dict) -> bool:
    """Shared memory keeps `k` at one block per SM (inject_pipeline's warp-specialization rule)."""
    from ...transform.inject_pipeline import _one_block_per_sm

    return _one_block_per_sm(k, stages)


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


def _persistent(
    k: KernelLaunch, gx: int, gy: int, sms: int, panel: int, allocs: list, rest: list, staged: bool
) -> KernelLaunch:
    span = k.span
    bx, by = k.block_vars[0], k.block_vars[1]
    block = Var("block_id", int32)
    wave = Var("wave", int32)
    tile = Var("tile_id", int32)
    total = gx * gy
    # panels of `panel` block rows (by), walked column by column (bx) inside a panel
    per_panel = gx * panel
    first = binary("floordiv", tile, IntImm(per_panel)) * panel
    rows = binary("min", IntImm(gy) - first, IntImm(panel))
    within = binary("floormod", tile, IntImm(per_panel))
    unit = [LetStmt(v, IntImm(0), span) for v in k.block_vars[2:]]  # a grid z of 1
    if staged:  # the block's last tile: its stores finish reading before the block exits
        rest = [*rest, IfThenElse(compare("ge", tile + sms, IntImm(total)), store_wait(span), None, span)]
    tile_body = SeqStmt(
        (
            LetStmt(by, first + binary("floormod", within, rows), span),
            LetStmt(bx, binary("floordiv", within, rows), span),
            *unit,
            *rest,
        ),
        span,
    )
    waves = -(-total // sms)
    loop_body = SeqStmt(
        (
            LetStmt(tile, wave * sms + block, span),
            IfThenElse(compare("lt", tile, IntImm(total)), tile_body, None, span),
        ),
        span,
    )
    loop = For(wave, IntImm(0), IntImm(waves), "serial", loop_body, None, span=span)
    return replace(k, grid=(IntImm(sms),), block_vars=(block,), body=SeqStmt((*allocs, loop), span))
