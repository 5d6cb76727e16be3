"""Lowering decisions as typed fields on the IR: what a pass chose, recorded by that pass.

A pass that decides how something runs (which copy engine, which tensor-core instruction and
warp grid, which pipeline form, which block schedule, which shared buffers share bytes) adds a
record to `func.attrs["decisions"]` (a `Decisions`) on the PrimFunc it returns. Later passes keep
function attributes, so the lowered function carries every record; the code generator, the
launcher and `tilelang.analysis` read them instead of re-deriving the decision.

Records are keyed by the `Span` of the user statement they are about (the tile op, the loop, the
`T.Kernel`), so the editor can show each one on its line. They are frozen and hold only ints,
strings, tuples and spans: a PrimFunc with decisions still prints, hashes and pickles.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

DECISIONS = "decisions"  # the PrimFunc attribute


@dataclass(frozen=True)
class CopyDecision:
    """How a tile copy is issued. `mode`: "cp.async" | "tma" (from the consumer threads) |
    "tma_ws" (by the producer warpgroup) | "tma_lead" (a whole tile the producer loads before the
    loop's first trip) | "tma_store" | "vector" (synchronous, `access_bytes` per access) |
    "element" (synchronous, one element per access). `stages`: buffers of the ring it fills
    (1 outside a pipeline); `prefetch`: a one-stage loop refills the tile for the next trip right
    after its last reader (single_stage_prefetch.py)."""

    span: Any
    mode: str
    stages: int = 1
    prefetch: bool = False
    access_bytes: int = 0  # bytes one thread moves per access (cp.async / vector copies; 0: not known here)
    by: str = ""  # the pass that recorded it


@dataclass(frozen=True)
class GemmDecision:
    """The tensor-core instruction of a `T.gemm` (recorded by infer_layout). `family`: "mma.sync"
    | "wgmma"; `instruction` e.g. "m16n8k16" / "m64n128k16"; `k_step`: the instruction's K (a gemm's
    K must be a multiple of it); `grid`: (rows, cols) of `unit`s ("warps" | "warpgroups")."""

    span: Any
    family: str
    instruction: str
    k_step: int
    grid: tuple
    unit: str
    a_in_registers: bool = False


@dataclass(frozen=True)
class PipelineDecision:
    """What `inject_pipeline` made of a `T.Pipelined` loop. `form`: "cp.async" | "tma" |
    "warp_specialized" (a producer warpgroup fills full/empty rings) | "prefetch" (one stage,
    refilled after its last reader) | "synchronous"; `stages`: the ring depth."""

    span: Any
    form: str
    stages: int


@dataclass(frozen=True)
class ScheduleDecision:
    """Which block computes which tile. `kind`: "persistent" (`blocks` resident blocks walk
    `tiles` tiles, `walk` says in which order, `epilogue_tma_store`) | "rasterize" (panels of
    `panel` block rows) | "heavy_first" (bx reversed, longest blocks first) | "row_split" (the
    rows run in two halves, recorded by split_rows)."""

    span: Any
    kind: str
    blocks: int = 0
    tiles: int = 0
    walk: str = ""
    panel: int = 0
    epilogue_tma_store: bool = False


@dataclass(frozen=True)
class SharedBuffer:
    name: str
    offset: int
    bytes: int
    shares_with: tuple = ()  # names of buffers placed over some of the same bytes (disjoint lifetimes)


@dataclass(frozen=True)
class SharedPlan:
    """The dynamic shared-memory block after planning (plan_shared_memory): `total_bytes` is what
    the launcher requests; `reuse` False when `tl.disable_shared_memory_reuse` is set."""

    total_bytes: int
    buffers: tuple = ()  # SharedBuffer, in declaration order
    reuse: bool = True


@dataclass(frozen=True)
class Decisions:
    copies: tuple = ()
    gemms: tuple = ()
    pipelines: tuple = ()
    schedules: tuple = ()
    shared: SharedPlan | None = None

    def plus(self, *records: Any) -> Decisions:
        """A new `Decisions` with `records` added (a `SharedPlan` replaces the previous plan; a
        copy record for a span already recorded by an earlier pass refines it)."""
        out = self
        for r in records:
            if isinstance(r, CopyDecision):
                out = replace(out, copies=out.copies + (r,))
            elif isinstance(r, GemmDecision):
                out = replace(out, gemms=out.gemms + (r,))
            elif isinstance(r, PipelineDecision):
                out = replace(out, pipelines=out.pipelines + (r,))
            elif isinstance(r, ScheduleDecision):
                out = replace(out, schedules=out.schedules + (r,))
            elif isinstance(r, SharedPlan):
                out = replace(out, shared=r)
            else:
                raise TypeError(f"not a decision record: {r!r}")
        return out

    def copy_at(self, span: Any) -> CopyDecision | None:
        """The latest record for the copy at `span` (later passes refine earlier ones)."""
        key = span_key(span)
        hits = [c for c in self.copies if span_key(c.span) == key]
        return hits[-1] if hits else None

    def gemm_at(self, span: Any) -> GemmDecision | None:
        key = span_key(span)
        hits = [g for g in self.gemms if span_key(g.span) == key]
        return hits[-1] if hits else None


def span_key(span: Any) -> tuple:
    return (getattr(span, "file", None), getattr(span, "line", None), getattr(span, "col", None))


def decisions_of(func: Any) -> Decisions:
    d = func.attrs.get(DECISIONS) if func is not None else None
    return d if isinstance(d, Decisions) else Decisions()


def record(func: Any, *records: Any) -> Any:
    """`func` with `records` added to its decisions (a new PrimFunc; `func` is unchanged)."""
    if not records:
        return func
    return func.with_attrs(**{DECISIONS: decisions_of(func).plus(*records)})
