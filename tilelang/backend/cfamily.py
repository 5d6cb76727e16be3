"""Expression printing shared by the C-family code generators (c, cuda).

Requires: a generator class providing `expr(e) -> str`, `operands(e, op) -> (a, b)`
(operand text with the target's own promotion rules) and `nonneg` (the set of
variables known to be non-negative, e.g. loop variables counting up from 0).
Guarantees: comparisons, logical operators, string literals and the
non-negativity facts that pick cheap `/`/`%` for floor division are the same on
every C-family target.
"""

from __future__ import annotations

from typing import Any

from ..ir.expr import And, BinaryOp, Cast, Compare, IntImm, Not, Or, Var, const_int

CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def wrap(x: str) -> str:
    """Parenthesize `x` unless it is a single operand (no space outside parentheses)."""
    depth = 0
    for ch in x:
        depth += ch in "(["
        depth -= ch in ")]"
        if ch == " " and depth == 0:
            return f"({x})"
    return x


def strip(s: str) -> str:
    """Drop one pair of redundant outer parentheses."""
    if s.startswith("(") and s.endswith(")"):
        depth = 0
        for i, ch in enumerate(s):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and i < len(s) - 1:
                return s
        return s[1:-1]
    return s


def c_string(s: str) -> str:
    """`s` as a C string literal (non-ASCII bytes as octal escapes)."""
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif 32 <= ord(ch) < 127:
            out.append(ch)
        else:
            out.extend(f"\\{b:03o}" for b in ch.encode("utf-8"))
    out.append('"')
    return "".join(out)


class LogicalOpsMixin:
    def e_Compare(self, e: Compare) -> str:
        a, b = self.operands(e, CMP[e.op])
        return f"({a} {CMP[e.op]} {b})"

    def e_And(self, e: And) -> str:
        a, b = self.operands(e, "&&")
        return f"({a} && {b})"

    def e_Or(self, e: Or) -> str:
        a, b = self.operands(e, "||")
        return f"({a} || {b})"

    def e_Not(self, e: Not) -> str:
        return f"(!{self.expr(e.a)})"

    def is_nonneg(self, e: Any) -> bool:
        """True if the integer expression `e` can never be negative (so C's truncating `/`
        and `%` equal floor division). Loads are unknown; a narrowing cast may wrap."""
        if isinstance(e, IntImm):
            return e.value >= 0
        if isinstance(e, Var):
            return e in self.nonneg or e.dtype.is_uint
        if isinstance(e, Cast):
            return (
                e.dtype.is_integer
                and e.value.dtype.is_integer
                and self.is_nonneg(e.value)
                and (
                    e.dtype.bits > e.value.dtype.bits
                    or (e.dtype.bits == e.value.dtype.bits and e.dtype.kind == e.value.dtype.kind)
                )
            )
        if isinstance(e, BinaryOp):
            if e.op == "floormod":
                return self.is_nonneg(e.b) and const_int(e.b) != 0
            if e.op in ("add", "mul", "floordiv", "div", "min", "max", "shr", "bitor", "bitxor"):
                return self.is_nonneg(e.a) and self.is_nonneg(e.b)
            if e.op == "bitand":
                return self.is_nonneg(e.a) or self.is_nonneg(e.b)
        return False
