"""What thread-level code means, for every backend (no pass here: the helpers both
thread lowerings use — `backend/cuda/thread_level.py`, `backend/c/thread_level.py`).

Tile-level IR runs a kernel body in every thread of the block. A statement outside
`T.Parallel` that computes one value for the whole block (a uniform store, `A[0] = 1`)
may run in one thread; one that reads a thread index (`T.get_thread_binding`), a
thread-private value computed from one, or runs under such control (`if tx < 5`), must
run in every thread that reaches it. `BlockControl` decides which, from
`Uniformity(body, block_values=True)` and the control around the statement.

Thread-level IR nodes (built by `language/thread.py`):

* `Call(THREAD_INDEX, (dim, extent))`: threadIdx.<dim>, in `[0, extent)`; the linear
  thread of the block is `x + X * (y + Y * z)` (`thread_index_value`);
* `Call(ALLREDUCE_OP, (StringImm(kind), value, dim...))`: `value` combined (`kind`: sum,
  max, min, bitand, bitor, bitxor) over the threads that differ only along `dim...`;
  every one of them gets the result; it is a collective: every thread of the block
  must reach it;
* `Call("tl.shfl_<xor|down|up|sync>", (value, lane, width, mask))`: the value of
  another lane of the warp (a collective of the warp).
"""

from __future__ import annotations

from typing import Any

from ..ir.dtype import int32
from ..ir.expr import Call, IntImm, PrimExpr, binary
from ..ir.stmt import For, IfThenElse, While
from ..ir.visitor import collect
from .uniformity import Uniformity

THREAD_INDEX = "tl.thread_index"
ALLREDUCE_OP = "tl.thread_allreduce"
SHFL_OPS = ("tl.shfl_xor", "tl.shfl_down", "tl.shfl_up", "tl.shfl_sync")
COLLECTIVE_OPS = (ALLREDUCE_OP, *SHFL_OPS)


def is_collective(e: Any) -> bool:
    return isinstance(e, Call) and e.op in COLLECTIVE_OPS


def collectives_in(node: Any) -> list:
    return collect(node, is_collective)


def uses_thread_level(body: Any) -> bool:
    """Whether `body` reads a thread index or holds a thread collective."""
    return bool(collect(body, lambda n: isinstance(n, Call) and (n.op == THREAD_INDEX or n.op in COLLECTIVE_OPS)))


def thread_strides(threads: tuple) -> tuple:
    """Distance in the linear thread index between neighbours along x, y, z."""
    x, y, _ = (tuple(threads) + (1, 1, 1))[:3]
    return (1, x, x * y)


def thread_index_value(dim: int, threads: tuple, t: PrimExpr) -> PrimExpr:
    """threadIdx.<dim> of the thread whose linear index is `t`."""
    threads = (tuple(threads) + (1, 1, 1))[:3]
    stride = thread_strides(threads)[dim]
    total = threads[0] * threads[1] * threads[2]
    n = threads[dim]
    if n == 1:
        return IntImm(0, int32)
    e = t if stride == 1 else binary("floordiv", t, stride)
    if stride * n < total:
        e = binary("floormod", e, n)
    return e


class BlockControl:
    """The control stack of a block-level walk, and the per-thread question for what is under it."""

    def __init__(self, body: Any) -> None:
        self.uni = Uniformity(body, block_values=True)
        self.stack: list = []  # enclosing For / While / IfThenElse of the statement being visited

    def push(self, s: Any) -> None:
        self.stack.append(s)

    def pop(self) -> None:
        self.stack.pop()

    def control_uniform(self) -> bool:
        """Every thread takes the path to the current point together."""
        for s in self.stack:
            if isinstance(s, IfThenElse):
                if not self.uni.uniform(s.cond):
                    return False
            elif isinstance(s, (For, While)):
                if not self.uni.loop_uniform(s):
                    return False
        return True

    def control_why(self) -> str | None:
        for s in self.stack:
            if isinstance(s, IfThenElse):
                w = self.uni.why(s.cond)
            elif isinstance(s, While):
                w = self.uni.why(s.cond) or self.uni.jump_why(s)
            elif isinstance(s, For):
                w = self.uni.why((s.start, s.extent, s.step)) or self.uni.jump_why(s)
            else:
                w = None
            if w:
                return w
        return None

    def one_thread_enough(self, *exprs: Any) -> bool:
        """A side effect with these operands, here, is the same in every thread: one may do it."""
        return self.uni.uniform(exprs) and self.control_uniform()


__all__ = [
    "ALLREDUCE_OP",
    "COLLECTIVE_OPS",
    "SHFL_OPS",
    "THREAD_INDEX",
    "BlockControl",
    "collectives_in",
    "is_collective",
    "thread_index_value",
    "thread_strides",
    "uses_thread_level",
]
