"""overlap_gemms: which warp-specialized loops may issue their last gemm one iteration late.

Requires: the consumer statements of one `T.Pipelined` loop that `inject_pipeline` is turning
into its warp-specialized form (tile level, after layout inference: `layouts` maps fragments to
their layouts), each already reading its ring slot, and the ring buffers the producers fill.

Guarantees: `plan_overlap` returns an `OverlapPlan` or None. A plan exists when the body is

    early..., S, middle..., G

- G, the last statement, is a gemm planned on wgmma;
- S is the only earlier statement holding gemms: a wgmma gemm, or an if / else each of whose
  branches ends with its only gemm, all wgmma gemms writing one accumulator (a causal mask
  folded into the gemm);
- G's B operand is a ring buffer that no other statement reads (the "late" ring); every other
  ring buffer is read by early and S only (the "early" ring);
- S's tiles come on the other ring buffers (the "early" ring), which no statement after S reads;
- early and S write nothing G reads (its operands, any scalar of its regions) and name nothing
  G writes (its accumulator).

`join` is the index, within middle, of the first statement that writes something G reads or
names G's accumulator (len(middle) when none does). inject_pipeline then emits, for n trips,

    trip 0:     wait early(0); S(0); wait for it; release early(0); middle(0)
    trip k ≥ 1: wait early(k); S(k) async; wait late(k-1); G(k-1) async;
                tl::wgmma_wait<1> (S retired: groups retire in order); release early(k);
                middle[:join](k); tl::wgmma_wait<0>; release late(k-1); middle[join:](k)
    after:      wait late(n-1); G(n-1); release late(n-1)

In program order only G(k-1) moved: past early(k) and S(k), which write nothing it reads and
touch nothing it writes (the last condition; G's B tile nobody else reads at all), and
middle[:join](k) runs while G(k-1) is in flight without writing its operands or touching its
accumulator. So the result is the source's, and middle[:join](k) — FlashAttention's
row max, exponentials and row sums — runs on the CUDA cores while G(k-1) = P(k-1)·V(k-1) runs
on the tensor cores (FlashAttention-3's intra-warpgroup overlap). The two rings let a tile of
V stay resident one trip longer than its K tile.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass
from typing import Any

from ...ir.buffer import Buffer
from ...ir.stmt import Gemm, IfThenElse, Stmt, flat_stmts
from ...ir.visitor import collect


@dataclass(frozen=True)
class OverlapPlan:
    s_index: int  # S's position among the consumer statements
    join: int  # first statement of middle (relative to S + 1) naming G's register tiles
    s_registers: tuple  # register tiles S's gemms write or read (accumulator, register A)
    g_registers: tuple  # G's accumulator and register A operand
    late_buffers: frozenset  # ring buffers read by G only (the late ring)


def plan_overlap(stmts: list, layouts: dict | None, ring_buffers: set) -> OverlapPlan | None:
    """The plan for consumer statements `stmts` (see the module docstring), or None.
    `layouts` None: before layout inference, every gemm counts as a wgmma gemm (the shape of the
    loop alone, for passes that run earlier: auto_persistent)."""
    from ...transform.infer_layout import wgmma_plan_of

    def on_wgmma(g: Any) -> bool:
        if layouts is None:
            return isinstance(g, Gemm)
        return isinstance(g, Gemm) and wgmma_plan_of(layouts.get(g.C.buffer)) is not None

    if len(stmts) < 2 or not on_wgmma(stmts[-1]):
        return None
    g = stmts[-1]
    holders = [i for i, s in enumerate(stmts[:-1]) if collect(s, lambda n: isinstance(n, Gemm))]
    if len(holders) != 1:
        return None
    si = holders[0]
    s_gemms = gemms_of(stmts[si])
    if s_gemms is None or not all(on_wgmma(x) for x in s_gemms):
        return None
    if len({id(x.C.buffer) for x in s_gemms}) != 1:
        return None
    late = {g.B.buffer} & ring_buffers
    if not late:
        return None
    if any(names(s, late) for s in stmts[:-1]):
        return None  # the late tile must stay G's alone
    early_ring = ring_buffers - late
    if not early_ring or any(names(s, early_ring) for s in stmts[si + 1 :]):
        return None  # S's tiles come on the early ring, released as soon as S retires
    g_reads, g_writes = buffers_named(g), {g.C.buffer}
    if any(_conflicts(s, g_reads, g_writes) for s in stmts[: si + 1]):
        return None
    middle = stmts[si + 1 : -1]
    join = next((j for j, s in enumerate(middle) if _conflicts(s, g_reads, g_writes)), len(middle))
    s_regs = tuple(dict.fromkeys(b for x in s_gemms for b in registers_of(x)))
    return OverlapPlan(si, join, s_regs, registers_of(g), frozenset(late))


def _conflicts(s: Stmt, g_reads: set, g_writes: set) -> bool:
    """`s` may not run while G is in flight, nor swap places with it: it writes something G
    reads (operands, the scalars of its regions) or touches what G writes."""
    from ...transform.inject_sync import collect_accesses

    written = collect_accesses(s).buffers_written()
    return bool(written & g_reads) or names(s, g_writes)


def gemms_of(s: Stmt) -> list | None:
    """The gemms of S: S itself, or every gemm of an if / else (each branch holding one); None
    when the gemms sit deeper (in a loop) or a branch has none or several."""
    if isinstance(s, Gemm):
        return [s]
    if not isinstance(s, IfThenElse) or s.else_body is None:
        return None
    out = []
    for branch in (s.then_body, s.else_body):
        found = collect(branch, lambda n: isinstance(n, Gemm))
        if len(found) != 1 or flat_stmts(branch)[-1] is not found[0]:
            return None  # the gemm ends its branch: nothing may read its accumulator before the wait
        out.append(found[0])
    return out


def registers_of(g: Gemm) -> tuple:
    """The register tiles a wgmma gemm in flight owns: its accumulator and a register A operand."""
    return (g.C.buffer,) + ((g.A.buffer,) if g.A.buffer.scope == "local.fragment" else ())


def buffers_named(s: Any) -> set:
    """Every buffer some node of `s` names in a field."""
    out: set = set()

    def hit(n: Any) -> bool:
        if is_dataclass(n):
            out.update(v for f in fields(n) if isinstance(v := getattr(n, f.name, None), Buffer))
        return False

    collect(s, hit)
    return out


def names(s: Any, buffers: set) -> bool:
    """Some node of `s` names one of `buffers` in a field (loads, stores, regions, tile ops)."""
    return not buffers_named(s).isdisjoint(buffers)


__all__ = ["OverlapPlan", "buffers_named", "gemms_of", "names", "plan_overlap", "registers_of"]
