"""`T.annotate_layout` and scheduling hints (`T.use_swizzle`, ...): they steer
layout inference and block scheduling on GPUs and never change results.

Reference ("c") lowering: nothing (the statement disappears).
"""

from __future__ import annotations

from ..ir.stmt import Stmt, seq
from .base import LowerContext, dispatch


def _drop(op, lctx: LowerContext) -> Stmt:
    return seq()


RULES = {"c": _drop}


def lower(op, lctx: LowerContext) -> Stmt:
    return dispatch(RULES, op, lctx)
