"""Best-first search for GEMM tile shapes (the automation of the seed's
"five parameters" derivation).

For C[M, N] = A[M, K] @ B[K, N]:

1. Candidates per spatial axis: the divisors of the extent that are multiples of
   the instruction granularity, plus the powers of two from that granularity up
   to the first one covering the extent (16 for fp16/bf16 mma; 64 for block_M
   with wgmma; block_K granularity 32 for 8-bit inputs).
2. For a (block_M, block_N) the rest follows from rules:
   - warps: as close to `sm_partition` as the per-warp accumulator limit
     (128 registers per thread, i.e. 64x64 fp32 per warp) allows, squarest
     warp tile first;
   - occupancy target: 1 block/SM for large tiles (>= 128x256), else 2,
     never above what the register proxy allows;
   - block_K (rstep): at least one full 128-byte transaction per row (64 fp16),
     grown while a 3-stage pipeline (the conservative default) still lets the
     target number of blocks share one SM's shared memory; if even the
     coalesced minimum does not fit, 2 stages, then a smaller block_K;
   - pipeline_stage: the deepest in [2, 4] that keeps that occupancy (and never
     deeper than the number of K iterations).
3. Constraints: stages * (A tile + B tile) <= smem_cap (per block) and the
   register proxy `2 * max(prod(tile) * bits / 32)` over the A, B and C tiles
   <= reg_cap (for fp32 accumulation the C term 2*bM*bN dominates).
4. Objective (lower is better): `(traffic + 1) * num_wave`, where traffic is
   the DRAM bytes of one output tile (each A/B row segment rounded up to the
   32-byte transaction, plus the C write) times the number of tiles, and
   `num_wave = ceil(grid / (block_per_SM * SMs))` with
   `block_per_SM = min(smem limit, register limit, sm_partition)`. The smem
   limit counts the physical shared memory per SM (and the per-block reserve).

The search starts from the smallest tile and always expands the best tile seen
so far by one step along each axis; infeasible tiles are not expanded (both
constraints are monotone in the tile size).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

from ..arch.arch_base import TileDevice

COALESCE_BYTES = 128  # one full transaction per row segment


@dataclass(frozen=True)
class GemmProblem:
    M: int
    N: int
    K: int
    in_bits: int
    accum_bits: int
    out_bits: int
    trans_A: bool = False
    trans_B: bool = True
    with_bias: bool = False


@dataclass(frozen=True)
class TileChoice:
    """A feasible GEMM configuration and the numbers that scored it."""

    block_m: int
    block_n: int
    rstep: int
    stages: int
    warp_m: int
    warp_n: int
    smem_bytes: int
    reg_usage: int
    block_per_sm: int
    grid: int
    traffic: int
    num_wave: int
    score: float

    @property
    def warps(self) -> int:
        return (self.block_m // self.warp_m) * (self.block_n // self.warp_n)


def divisors(n: int) -> list[int]:
    small, large = [], []
    i = 1
    while i * i <= n:
        if n % i == 0:
            small.append(i)
            if i * i != n:
                large.append(n // i)
        i += 1
    return small + large[::-1]


def axis_candidates(extent: int, gran: int, cap: int = 4096) -> list[int]:
    """Divisors of `extent` that are multiples of `gran`, plus powers of two from
    `gran` to the first one >= extent; all <= cap (sorted)."""
    out = {d for d in divisors(extent) if d % gran == 0 and d <= cap}
    p = gran
    while p <= cap:
        out.add(p)
        if p >= extent:
            break
        p *= 2
    return sorted(out)


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


class GemmTileSearch:
    """Search over GEMM tiles on one arch; `search(topk)` returns `TileChoice`s best first."""

    def __init__(self, problem: GemmProblem, arch: TileDevice, gran: tuple[int, int, int], warp_multiple: int = 1):
        self.p = problem
        self.arch = arch
        self.gm, self.gn, self.gk = gran
        self.warp_multiple = warp_multiple  # e.g. 4 for wgmma (whole warpgroups)
        self.m_cands = axis_candidates(problem.M, self.gm)
        self.n_cands = axis_candidates(problem.N, self.gn)
        self.k_cands = axis_candidates(problem.K, self.gk)
        self.txn = arch.transaction_size[0]

    # -- pieces ---------------------------------------------------------------------
    def stage_bytes(self, bm: int, bn: int, r: int) -> int:
        return (bm * r + r * bn) * self.p.in_bits // 8

    def reg_usage(self, bm: int, bn: int, r: int) -> int:
        p = self.p
        return 2 * max(bm * bn * p.accum_bits, bm * r * p.in_bits, r * bn * p.in_bits) // 32

    def _fits(self, per_stage: int, stages: int, blocks: int) -> bool:
        a = self.arch
        smem = stages * per_stage
        return smem <= a.smem_cap and blocks * (smem + a.reserved_smem_per_block) <= a.smem_per_sm

    def choose_warps(self, bm: int, bn: int) -> tuple[int, int] | None:
        a = self.arch
        max_acc_bits = 128 * 32 * max(32, a.warp_size)  # 128 registers per thread of a 32+ wide warp
        best, best_key = None, None
        for wm in divisors(bm):
            if wm % min(16, bm):
                continue
            for wn in divisors(bn):
                if wn % min(16, bn) or wm * wn * self.p.accum_bits > max_acc_bits:
                    continue
                warps = (bm // wm) * (bn // wn)
                if warps * a.warp_size > a.max_threads_per_block or warps % self.warp_multiple:
                    continue
                key = (abs(warps - a.sm_partition), abs(math.log2(wm / wn)), -wm * wn, -wm)
                if best_key is None or key < best_key:
                    best, best_key = (wm, wn), key
        return best

    def choose_rstep_and_stages(self, bm: int, bn: int, target: int) -> tuple[int, int] | None:
        """block_K and pipeline depth for a block shape, given the occupancy target.

        block_K is the largest candidate that fits the first satisfiable budget of:
        3 stages / `target` blocks with a coalesced block_K (>= one 128-byte
        transaction per row), 2 stages / `target` blocks coalesced, then the same
        two without the coalescing floor, then 2 stages / 1 block.
        """
        want = max(self.gk, COALESCE_BYTES * 8 // self.p.in_bits)
        floor = min(want, self.k_cands[-1])
        levels = ((3, target, floor), (2, target, floor), (3, target, 0), (2, target, 0), (2, 1, 0))
        r = None
        for stages, blocks, lo in levels:
            fitting = [k for k in self.k_cands if k >= lo and self._fits(self.stage_bytes(bm, bn, k), stages, blocks)]
            if fitting:
                r = fitting[-1]
                break
        if r is None:
            return None
        per_stage = self.stage_bytes(bm, bn, r)
        stages = next((s for s in (4, 3, 2) if self._fits(per_stage, s, target)), 2)
        iters = -(-self.p.K // r)
        return r, min(stages, max(2, iters))

    def traffic_per_tile(self, bm: int, bn: int, r: int) -> int:
        p, txn = self.p, self.txn
        ib, ob = p.in_bits // 8 or 1, max(1, p.out_bits // 8)
        iters = -(-p.K // r)
        a = iters * r * _round_up(bm * ib, txn) if p.trans_A else bm * iters * _round_up(r * ib, txn)
        b = bn * iters * _round_up(r * ib, txn) if p.trans_B else iters * r * _round_up(bn * ib, txn)
        c = bm * _round_up(bn * ob, txn)
        bias = _round_up(bn * ob, txn) if p.with_bias else 0
        return a + b + c + bias

    # -- evaluation and search --------------------------------------------------------
    def evaluate(self, bm: int, bn: int) -> TileChoice | None:
        """Score one block shape; None if it violates a constraint."""
        a, p = self.arch, self.p
        if 2 * bm * bn * p.accum_bits // 32 > a.reg_cap:
            return None
        warps = self.choose_warps(bm, bn)
        if warps is None:
            return None
        reg_limit = a.reg_cap // max(1, 2 * bm * bn * p.accum_bits // 32)
        target = min(1 if bm * bn >= 128 * 256 else 2, reg_limit, a.sm_partition)
        rs = self.choose_rstep_and_stages(bm, bn, target)
        if rs is None:
            return None
        r, stages = rs
        regs = self.reg_usage(bm, bn, r)
        if regs > a.reg_cap:
            return None
        smem = stages * self.stage_bytes(bm, bn, r)
        block_per_sm = max(
            1, min(a.smem_per_sm // (smem + a.reserved_smem_per_block), a.reg_cap // regs, a.sm_partition)
        )
        grid = -(-p.M // bm) * -(-p.N // bn)
        num_wave = -(-grid // (block_per_sm * a.compute_max_core))
        traffic = self.traffic_per_tile(bm, bn, r) * grid
        return TileChoice(
            bm,
            bn,
            r,
            stages,
            *warps,
            smem,
            regs,
            block_per_sm,
            grid,
            traffic,
            num_wave,
            float((traffic + 1) * num_wave),
        )

    @staticmethod
    def _order(c: TileChoice) -> tuple:
        return (c.score, abs(math.log2(c.block_m / c.block_n)), -c.block_m * c.block_n, c.block_m)

    def search(self, topk: int = 10, max_evals: int = 4096) -> list[TileChoice]:
        """Best-first search from the smallest tile; returns up to `topk` choices, best first."""
        seen = {(0, 0)}
        first = self.evaluate(self.m_cands[0], self.n_cands[0])
        if first is None:
            return []
        heap = [(self._order(first), 0, 0, first)]
        done: list[TileChoice] = []
        evals = 1
        while heap and evals < max_evals:
            _, i, j, choice = heapq.heappop(heap)
            done.append(choice)
            for ni, nj in ((i + 1, j), (i, j + 1)):
                if ni >= len(self.m_cands) or nj >= len(self.n_cands) or (ni, nj) in seen:
                    continue
                seen.add((ni, nj))
                evals += 1
                c = self.evaluate(self.m_cands[ni], self.n_cands[nj])
                if c is not None:
                    heapq.heappush(heap, (self._order(c), ni, nj, c))
        done.extend(entry[3] for entry in heap)
        return sorted(done, key=self._order)[:topk]
