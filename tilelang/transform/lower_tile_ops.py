"""lower_tile_ops: replace every tile operator by its lowering for the target.

Requires: a verified PrimFunc; `ctx.target` (a `CompileContext`'s Target;
defaults to the function's `target` attribute, else "c"). Guarantees: no `TileOp` remains; each op became what
`tilelang.tileop.lower` returned for the target (for "c": plain loop nests,
scalar `local.var` temporaries and `tl.*` intrinsic calls). Statement lists
stay flat (a lowering that returns several statements is spliced in place);
ops with no effect on the target disappear. New nodes carry the op's span.
Never mutates its input.
"""

from __future__ import annotations

from .. import tileop
from ..ir.function import PrimFunc
from ..ir.stmt import Allocate, KernelLaunch, SeqStmt, Stmt, TileOp
from ..ir.visitor import Mutator
from .context import CompileContext


def lower_tile_ops(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    target = CompileContext.of(ctx).target
    if target is None:
        target = func.attrs.get("target", "c")
    lctx = tileop.LowerContext(target, func)
    body = _Lower(lctx).visit(func.body)
    return func if body is func.body else func.with_body(body)


class _Lower(Mutator):
    def __init__(self, lctx: tileop.LowerContext) -> None:
        super().__init__()
        self.lctx = lctx

    def visit(self, node):
        if isinstance(node, TileOp):
            return tileop.lower(node, self.lctx)
        return super().visit(node)

    def visit_Allocate(self, node: Allocate) -> Stmt:
        self.lctx.allocations[node.buffer] = node
        return node

    def visit_KernelLaunch(self, node: KernelLaunch) -> Stmt:
        outer = self.lctx.block_vars, self.lctx.threads
        self.lctx.block_vars, self.lctx.threads = node.block_vars, tuple(node.threads)
        try:
            return self.generic_visit(node)
        finally:
            self.lctx.block_vars, self.lctx.threads = outer

    def visit_SeqStmt(self, node: SeqStmt) -> Stmt:
        out: list[Stmt] = []
        changed = False
        for s in node.stmts:
            n = self.visit(s)
            changed |= n is not s
            if isinstance(n, SeqStmt) and n is not s:
                out.extend(n.stmts)  # splice a multi-statement lowering (possibly empty)
            else:
                out.append(n)
        if not changed:
            return node
        if len(out) == 1:
            return out[0]
        return SeqStmt(tuple(out), node.span)


__all__ = ["lower_tile_ops"]
