"""`MatmulTemplate`: C = A @ B (+ bias), tile hints from the GEMM search."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..arch import CUDA, TileDevice, is_tensorcore_supported_precision
from ..roller.gemm import GemmProblem, GemmTileSearch, TileChoice
from ..roller.hint import Hint, IntrinInfo
from ..roller.rasterization import NoRasterization, Rasterization2DRow
from .base import BaseTemplate, check_dtype, check_extent


@dataclass
class MatmulTemplate(BaseTemplate):
    """A[M, K] (A[K, M] if trans_A) times B[K, N] (B[N, K] if trans_B)."""

    M: int
    N: int
    K: int
    trans_A: bool = False
    trans_B: bool = True
    in_dtype: Any = "float16"
    out_dtype: Any = "float16"
    accum_dtype: Any = "float16"
    with_bias: bool = False

    def __post_init__(self) -> None:
        for name in ("M", "N", "K"):
            check_extent(name, getattr(self, name))
        self.in_dtype = check_dtype("in_dtype", self.in_dtype)
        self.out_dtype = check_dtype("out_dtype", self.out_dtype)
        self.accum_dtype = check_dtype("accum_dtype", self.accum_dtype)

    def problem(self) -> GemmProblem:
        return GemmProblem(
            self.M,
            self.N,
            self.K,
            self.in_dtype.bits,
            self.accum_dtype.bits,
            self.out_dtype.bits,
            bool(self.trans_A),
            bool(self.trans_B),
            bool(self.with_bias),
        )

    def search(self, arch: TileDevice) -> tuple[GemmTileSearch, Any]:
        """The configured search and the tensor instruction it assumes (None for SIMT)."""
        instr = None
        if is_tensorcore_supported_precision(self.in_dtype, self.accum_dtype, arch):
            instr = arch.tensor_instruction_for(self.in_dtype.bits)
        if instr is None:
            gran, multiple = (16, 16, 16), 1
        else:
            wide = instr.name in ("wgmma", "tcgen05")
            gran = (instr.shape[0] if wide else 16, 16, instr.shape[2])
            multiple = 4 if instr.name == "wgmma" else 1
        return GemmTileSearch(self.problem(), arch, gran, multiple), instr

    def get_hardware_aware_configs(self, arch: TileDevice, topk: int = 10) -> list[Hint]:
        search, instr = self.search(arch)
        choices = search.search(topk)
        if not choices:
            raise ValueError(
                f"no tile configuration of {self} fits {arch.name} ({arch.smem_cap} B shared memory per block, "
                f"{arch.reg_cap} registers per SM)"
            )
        return [self._hint(c, arch, instr) for c in choices]

    def _hint(self, c: TileChoice, arch: TileDevice, instr: Any) -> Hint:
        ws = max(1, arch.warp_size)
        tm = 1 << ((ws.bit_length() - 1) // 2)  # lay a warp's threads out as tm x (ws // tm)
        warps_m, warps_n = c.block_m // c.warp_m, c.block_n // c.warp_n
        vec = max(1, 128 // self.in_dtype.bits)
        multi_wave = c.grid > c.block_per_sm * arch.compute_max_core
        return Hint(
            block=[c.block_m, c.block_n],
            warp=[c.warp_m, c.warp_n],
            thread=[warps_m * tm, warps_n * (ws // tm)],
            rstep=[c.rstep],
            use_tc=instr is not None,
            intrin_info=IntrinInfo(
                str(self.in_dtype),
                str(self.accum_dtype),
                bool(self.trans_A),
                bool(self.trans_B),
                instr.name,
                instr.shape,
            )
            if instr is not None
            else None,
            rasterization_plan=Rasterization2DRow(10) if multi_wave and c.grid >= 4 else NoRasterization(),
            pipeline_stage=c.stages,
            use_async=isinstance(arch, CUDA) and (arch.sm_version or 0) >= 80 and c.stages > 1,
            vectorize={"A": vec, "B": vec},
            shared_scope="shared.dyn",
            arch=arch,
            score=c.score,
        )
