"""The pass list of the C ("c") target — adding a pass is adding a line."""

from __future__ import annotations

from ...ir.function import PrimFunc
from ...transform.legalize_memory_access import legalize_memory_access
from ...transform.lower_tile_ops import lower_tile_ops
from ...transform.verify import verify

try:  # written concurrently; until it lands the pipeline runs without it
    from ...transform.simplify import simplify
except ImportError:  # pragma: no cover - depends on the checkout

    def simplify(func: PrimFunc, ctx: dict | None = None) -> PrimFunc:
        return func


def lower(func: PrimFunc, ctx: dict | None = None) -> PrimFunc:
    """Tile-level PrimFunc → PrimFunc the C code generator accepts.

    `ctx`: `target` (default "c"), `pass_configs`, and an optional
    `trace(pass_name, func)` callback called after every pass (IR dumps)."""
    ctx = {"target": "c", **(ctx or {})}
    trace = ctx.get("trace") or (lambda name, f: None)

    def run(p, f: PrimFunc) -> PrimFunc:
        out = p(f, ctx)
        trace(p.__name__, out)
        return out

    func = run(verify, func)  # structure, scopes, tile-op operands
    func = run(simplify, func)
    func = run(lower_tile_ops, func)  # tile ops -> loop nests + tl.* intrinsics
    func = run(legalize_memory_access, func)  # guard out-of-bounds global accesses
    func = run(simplify, func)  # fold what the guards and lowering left
    return func
