"""The CUDA simulator of the tests, as the CUDA tests import it (`from sim import simulate`): the
shared SIMT simulator in `tests/simt/` with its CUDA dialect (warps of 32, mma.sync / wgmma)."""

from __future__ import annotations

import os
import sys

_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from simt.core import RaceError, SharedMem, SimError  # noqa: E402
from simt.cuda import CUDA, gemm, simulate, smem_offset, wgmma_gemm  # noqa: E402
from simt.wave import all_reduce, run, shuffle  # noqa: E402

__all__ = ["CUDA", "RaceError", "SharedMem", "SimError", "all_reduce", "gemm", "run", "shuffle", "simulate",
           "smem_offset", "wgmma_gemm"]  # fmt: skip
