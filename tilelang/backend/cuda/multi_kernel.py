"""One cubin for the kernels of a function with several `T.Kernel` blocks
(`backend/launch_plan.py`).

Requires: each kernel lowered by `CudaBackend.lower` (its own pipeline, source and launch
metadata; entries named after the split functions, so they differ).
Guarantees: the sources are concatenated in program order into one translation unit (our
headers are `#pragma once`) and compiled once; ptxas's figures are read per entry and checked
per kernel (`check_built`: static shared memory, registers × threads); a kernel whose registers
land just past an occupancy cliff gets `__launch_bounds__(threads, blocks)` as a single kernel
does, kept only if no kernel then spills more than `SPILL_SLACK` bytes.
"""

from __future__ import annotations

from typing import Any

from ..toolrun import ToolTimeoutError
from .build_options import nvcc_flags, verbose_ptxas
from .check_launch_limits import check_built
from .compiler import CompileError, compile_cuda
from .occupancy import SPILL_SLACK


def build_joined(pres: list, name: str, target: Any, options: dict, workdir: str) -> tuple:
    """(source, cubin path, per-kernel metadata with ptxas's figures) for `pres`."""
    from . import native_launch
    from .backend import _fast_math, _with_min_blocks

    native_launch.prebuild()  # the launcher's one-time C build overlaps nvcc
    cfg = dict(options.get("pass_configs") or {})
    extra = list(options.get("compile_flags") or []) + nvcc_flags(cfg)
    arch = target.arch or "sm_80"
    fast_math = _fast_math(cfg)
    sources = [p.kernel_source for p in pres]
    entries = [p.meta["entry"] for p in pres]

    def compile_all(srcs: list, suffix: str) -> tuple:
        path, stats = compile_cuda("\n".join(srcs), workdir, name + suffix, arch, fast_math, extra,
                                   verbose_ptxas(cfg), per_entry=True)  # fmt: skip
        return path, [stats.get(e, {}) for e in entries]

    path, stats = compile_all(sources, "")
    bounded = []
    for p, src, st in zip(pres, sources, stats):
        b = _with_min_blocks(src, int(p.meta["threads"]), arch, st, int(p.meta["smem"]))
        bounded.append(src if b is None else b)
    if bounded != sources:  # registers just past an occupancy cliff: ask ptxas for the block back
        try:
            retry = compile_all(bounded, "_bounded")
        except (CompileError, ToolTimeoutError):  # ptxas cannot fit an instruction under the cap
            retry = None
        if retry is not None and all(st.get("spill_bytes", 0) <= SPILL_SLACK for st in retry[1]):
            sources, (path, stats) = bounded, retry
    metas = []
    for p, st in zip(pres, stats):
        check_built(p.lowered, arch, st)
        metas.append({**p.meta, **st})
    return "\n".join(sources), path, metas
