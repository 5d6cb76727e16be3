"""Expression printing shared by the C-family code generators (c, cuda).

Requires: a generator class providing `expr(e) -> str` and
`operands(e, op) -> (a, b)` (operand text with the target's own promotion
rules). Guarantees: comparisons and logical operators print identically on
every C-family target.
"""

from __future__ import annotations

from ..ir.expr import And, Compare, Not, Or

CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


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
