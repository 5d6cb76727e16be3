"""Constant values of the index expressions of the per-thread IR, with the variables of the
unrolled loops around them bound (for the register model, `register_model.py`).

Requires: integer expressions of the per-thread IR. Guarantees: a value only where every operand
is a constant or a bound variable; None otherwise (a thread index, a rolled loop, memory).
"""

from __future__ import annotations

from typing import Any

from ..ir.buffer import Buffer
from ..ir.expr import BinaryOp, Cast, Var, const_int


def flat_index(buf: Buffer, indices: tuple, env: dict) -> int | None:
    """The row-major element index of `buf[indices]` under `env`; None when not constant."""
    flat = 0
    for d, i in zip(buf.shape, indices):
        v = evaluate(i, env)
        if v is None or not 0 <= v < const_int(d):
            return None
        flat = flat * const_int(d) + v
    return flat


INT_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: a // b if b else None,
    "floormod": lambda a, b: a % b if b else None,
    "div": lambda a, b: int(a / b) if b else None,
    "min": min,
    "max": max,
}


def evaluate(e: Any, env: dict) -> int | None:
    """An integer expression's value with the variables of `env` bound; None when it depends on
    anything else (thread index, a rolled loop, memory)."""
    from ..ir.expr import IntImm

    if isinstance(e, int):
        return e
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, Var):
        return env.get(e)
    if isinstance(e, Cast) and e.dtype.is_int:
        return evaluate(e.value, env)
    if isinstance(e, BinaryOp) and e.op in INT_OPS and e.dtype.is_int:
        a, b = evaluate(e.a, env), evaluate(e.b, env)
        return None if a is None or b is None else INT_OPS[e.op](a, b)
    return None
