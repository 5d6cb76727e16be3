"""`GEMVTemplate`: y[N] = B @ x (+ bias), with B[N, K] (trans_B) or B[K, N].

Heuristic, for blocks of 128 (then 256, 64) threads:
- each thread loads 16 bytes of B at a time (`vec` elements);
- trans_B (K contiguous): `reduce_thread` threads split K (a warp's worth,
  fewer when K is short), the block covers `block_N = threads / reduce_thread`
  rows, and `block_K = reduce_thread * vec`;
- not trans_B (N contiguous): `tn` threads run along N with `vec` columns each
  (block_N = tn * vec), the other threads split K (block_K = threads / tn);
- block_N halves while the grid would leave SMs idle and the block keeps at
  least one warp.
Hints are ordered by |threads - 128| plus the number of idle SMs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..arch import TileDevice
from ..roller.hint import Hint
from .base import BaseTemplate, check_dtype, check_extent, pow2_ceil, pow2_floor


@dataclass
class GEMVTemplate(BaseTemplate):
    N: int
    K: int
    trans_B: bool = True
    in_dtype: Any = "float16"
    out_dtype: Any = "float16"
    accum_dtype: Any = "float16"
    with_bias: bool = False

    def __post_init__(self) -> None:
        check_extent("N", self.N)
        check_extent("K", self.K)
        self.in_dtype = check_dtype("in_dtype", self.in_dtype)
        self.out_dtype = check_dtype("out_dtype", self.out_dtype)
        self.accum_dtype = check_dtype("accum_dtype", self.accum_dtype)

    def _one(self, arch: TileDevice, threads: int) -> Hint:
        ws, sms = max(1, arch.warp_size), arch.compute_max_core
        vec = max(1, 128 // self.in_dtype.bits)
        if self.trans_B:
            rt = min(ws, pow2_floor(-(-self.K // vec)))
            tn = max(1, threads // rt)
            while tn > 1 and -(-self.N // tn) < sms and (tn // 2) * rt >= ws:
                tn //= 2
            block_n, block_k = tn, rt * vec
        else:
            tn = min(ws, pow2_ceil(-(-self.N // vec)))
            while tn > 1 and -(-self.N // (tn * vec)) < sms:
                tn //= 2
            rt = max(1, min(threads // tn, pow2_ceil(self.K)))
            rt = max(rt, -(-ws // tn))
            block_n, block_k = tn * vec, rt
        idle = max(0, sms - -(-self.N // block_n))
        return Hint(
            block=[block_n],
            thread=[tn],
            rstep=[block_k],
            reduce_thread=[rt],
            pipeline_stage=1,
            vectorize={"B": vec},
            arch=arch,
            score=float(abs(tn * rt - 128) + idle),
        )

    def get_hardware_aware_configs(self, arch: TileDevice, topk: int = 10) -> list[Hint]:
        ws = max(1, arch.warp_size)
        hints: dict[tuple, Hint] = {}
        for threads in (128, 256, 64):
            h = self._one(arch, max(ws, threads))
            hints.setdefault((tuple(h.block), tuple(h.rstep), tuple(h.thread), tuple(h.reduce_thread)), h)
        return sorted(hints.values(), key=lambda h: h.score)[:topk]
