"""Text helpers and operator tables shared by every C-family dialect.

Requires: nothing (pure string functions and tables).
Guarantees: parenthesization, string literals, identifiers and operator spellings are
the same on every C-family target (C, CUDA and the dialects built on CUDA).
"""

from __future__ import annotations

import re

CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}

# the keywords of C, which every C-family language reserves too
C_KEYWORDS = frozenset(
    """auto break case char const continue default do double else enum extern float for goto if inline int long
    register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while""".split()
)

# C precedence of the infix operators we print (higher binds tighter)
PREC = {"*": 13, "/": 13, "%": 13, "+": 12, "-": 12, "<<": 11, ">>": 11, "<": 10, "<=": 10, ">": 10, ">=": 10,
        "==": 9, "!=": 9, "&": 8, "^": 7, "|": 6, "&&": 5, "||": 4}  # fmt: skip

# infix operators whose left operand of equal precedence needs no parentheses
LEFT_ASSOCIATIVE = ("+", "-", "*", "&&", "||", "&", "|", "^")

BIN = {"add": "+", "sub": "-", "mul": "*", "div": "/", "bitand": "&", "bitor": "|", "bitxor": "^", "shl": "<<",
       "shr": ">>"}  # fmt: skip


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


def ident(name: str) -> str:
    """A C identifier for a user name (our runtime's `tl_` / `__` prefixes are kept free)."""
    s = re.sub(r"[^0-9A-Za-z_]", "_", name or "v")
    if s[0].isdigit():
        s = "_" + s
    if s.startswith("tl_") or s.startswith("__"):
        s = "u" + s
    return s


def c_name(name: str) -> str:
    """`name` with every character that is not allowed in a C identifier replaced by `_`."""
    return re.sub(r"[^0-9A-Za-z_]", "_", name)
