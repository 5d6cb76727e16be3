"""The HIP dialect of the SIMT simulator: waves of 64 lanes (shuffles and `AllReduce` groups of
up to 64 lanes without LDS scratch), and `hip.mfma(name, acc, src0, src1)` — one MFMA
instruction of `mfma.py` per wave, acc = src0-matrix x src1-matrix + acc."""

from __future__ import annotations

from .core import Dialect
from .mfma import wave_rendezvous
from .wave import run

MFMA_OP = "hip.mfma"  # as backend/hip/gemm.py records it in the per-thread IR


def _call(comp, e) -> str | None:
    if e.op == MFMA_OP:
        name = e.args[0].value
        acc, src0, src1 = (comp.expr(a) for a in e.args[1:])
        return f"(yield ('mfma', {name!r}, {acc}, {src0}, {src1}))"
    return None


HIP = Dialect("hip", 64, _call, lambda comp, s: False, {"mfma": wave_rendezvous})


def simulate(func, args: list, arch: str = "gfx90a", max_blocks: int | None = None, pass_configs: dict | None = None):
    """Lower `func` for HIP (`arch` gfx90a / gfx940 / gfx942) and run it on CPU tensors; returns
    the lowered PrimFunc."""
    from tilelang.backend.hip.pipeline import lower
    from tilelang.backend.target import parse

    lowered = lower(func, {"target": parse({"kind": "hip", "arch": arch}), "pass_configs": pass_configs or {}})
    run(lowered, args, HIP, max_blocks)
    return lowered
