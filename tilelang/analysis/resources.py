"""The resource estimate of a traced kernel (per-architecture limits: `backend/arch_limits.py`).

Requires: a PrimFunc straight from the frontend (tile ops intact) whose
buffer shapes may be symbolic. Guarantees: every number reported is either
computed from concrete values or None (never guessed); shared memory counts
pipeline multi-buffering; registers are an estimate (fragment elements per
thread + a fixed overhead) labelled as such.
"""

from __future__ import annotations

from ..backend.arch_limits import ARCHES, ArchLimits, arch_limits  # noqa: F401 - re-exported
from ..ir.buffer import Buffer
from ..ir.expr import const_int
from ..ir.stmt import Allocate, Copy, For, KernelLaunch
from ..ir.visitor import Visitor, collect

REG_OVERHEAD = 32  # addresses, loop counters, temporaries: a conservative allowance


def numel(buf: Buffer) -> int | None:
    n = 1
    for d in buf.shape:
        v = const_int(d)
        if v is None:
            return None
        n *= v
    return n


def buffer_bytes(buf: Buffer) -> int | None:
    n = numel(buf)
    return None if n is None else buf.dtype.storage_bytes(n)  # 4-bit types: two per byte


class _PipelineStages(Visitor):
    """Shared buffers written by copies inside `T.Pipelined(num_stages=s)` are multi-buffered s times."""

    def __init__(self) -> None:
        self.stages: dict[Buffer, int] = {}
        self.current = 1

    def visit_For(self, node: For) -> None:
        prev = self.current
        if node.kind == "pipelined":
            self.current = max(1, int(node.annotations.get("num_stages", 0) or 0))
        self.generic_visit(node)
        self.current = prev

    def visit_Copy(self, node: Copy) -> None:
        dst = node.dst.buffer
        if dst.is_shared and node.src.buffer.scope == "global" and self.current > 1:
            self.stages[dst] = max(self.stages.get(dst, 1), self.current)

    visit_Im2Col = visit_Copy  # a T.im2col tile is a pipelined load too (inject_pipeline)


def pipeline_stages(func) -> dict[Buffer, int]:
    v = _PipelineStages()
    v.visit(func.body)
    return v.stages


def kernel_of(func) -> KernelLaunch | None:
    ks = collect(func.body, lambda n: isinstance(n, KernelLaunch))
    return ks[0] if ks else None


def allocations(func) -> list[Allocate]:
    return collect(func.body, lambda n: isinstance(n, Allocate))


def fragment_regs_per_thread(buf: Buffer, threads: int) -> int | None:
    """32-bit registers one thread needs for its share of a fragment (or a local array)."""
    n = numel(buf)
    if n is None or threads <= 0:
        return None
    words = buf.dtype.bits * buf.dtype.lanes / 32
    per_thread = n if buf.scope in ("local", "local.var") else -(-n // threads)
    return max(1, int(-(-per_thread * words // 1)))


def occupancy(limits: ArchLimits, threads: int, smem: int, regs_per_thread: int) -> tuple[float, int, str]:
    """(resident warps / max warps, blocks per SM, limiting resource)."""
    warps = -(-threads // limits.warp_size)
    by_threads = limits.max_threads_per_sm // max(threads, 1)
    by_smem = limits.smem_per_sm // smem if smem > 0 else limits.max_blocks_per_sm
    regs_block = regs_per_thread * warps * limits.warp_size
    by_regs = limits.regs_per_sm // regs_block if regs_block > 0 else limits.max_blocks_per_sm
    options = {
        "threads": by_threads,
        "shared memory": by_smem,
        "registers": by_regs,
        "blocks": limits.max_blocks_per_sm,
    }
    limiting = min(options, key=lambda k: options[k])
    blocks = max(0, options[limiting])
    max_warps = limits.max_threads_per_sm // limits.warp_size
    return min(1.0, blocks * warps / max_warps), blocks, limiting
