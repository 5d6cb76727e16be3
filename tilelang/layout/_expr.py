"""Integer index arithmetic for layouts: compile, bound, substitute, simplify.

Layouts are maps written as IR expressions over placeholder `Var`s, each
ranging over `[0, extent)`. This module is the small amount of arithmetic
they need, kept local so that `tilelang.layout` depends only on `tilelang.ir`:

- `compile_map` turns a tuple of expressions into a Python lambda (cached by
  the callers), so evaluating a layout on ints costs one call;
- `bounds` is an interval analysis that knows the var extents;
- `substitute` replaces vars and re-folds constants through the IR builders;
- `simplify` canonicalises "digit" arithmetic. Any sum of terms
  `coef * ((v // s) % e)` (a *field*: the digits of `v` between `s` and
  `s * e`) is parsed, adjacent fields of the same var are merged and the sum
  is printed back in a canonical order, so `i // 8 * 8 + i % 8` becomes `i`
  and `(64 * a + j) % 8` becomes `j % 8`. Sub-expressions it cannot read
  (an XOR, a select) become opaque non-negative atoms with known bounds.

The same digit form (`parse_digits`) drives `_inverse.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..ir.dtype import int32
from ..ir.expr import (
    And,
    BinaryOp,
    Call,
    Cast,
    Compare,
    IntImm,
    Not,
    Or,
    PrimExpr,
    Select,
    Var,
    as_expr,
    binary,
    call,
    cast,
    compare,
    logical_and,
    logical_not,
    logical_or,
    select,
)
from ..ir.py_source import py_source, truncdiv

Extents = dict  # dict[Var, int | None]: var ranges over [0, extent)

# --------------------------------------------------------------------------
# Compilation to Python
# --------------------------------------------------------------------------


def compile_map(params: tuple, exprs: tuple) -> Callable[..., tuple]:
    """`lambda *params: tuple(exprs)` evaluated on Python ints."""
    names = {v: f"a{k}" for k, v in enumerate(params)}
    body = ", ".join(py_source(e, names) for e in exprs)
    src = f"lambda {', '.join(names.values())}: ({body},)"
    return eval(src, {"_tdiv": truncdiv, "__builtins__": {"int": int, "min": min, "max": max}})  # noqa: S307


def compile_table(params: tuple, extents: tuple, exprs: tuple) -> Callable[[], list]:
    """A function returning `[tuple(exprs) for every params in row-major order]`.

    Nested loops in generated code are about twice as fast as calling the
    compiled map once per point, which matters for the whole-tile checks.
    """
    names = {v: f"a{k}" for k, v in enumerate(params)}
    body = ", ".join(py_source(e, names) for e in exprs)
    lines = ["def _table():", "    out = []", "    push = out.append"]
    for depth, (v, ext) in enumerate(zip(params, extents)):
        lines.append("    " * (depth + 1) + f"for {names[v]} in range({int(ext)}):")
    lines.append("    " * (len(params) + 1) + f"push(({body},))")
    lines.append("    return out")
    scope: dict[str, Any] = {"_tdiv": truncdiv, "__builtins__": {"int": int, "min": min, "max": max, "range": range}}
    exec("\n".join(lines), scope)  # noqa: S102
    return scope["_table"]


# --------------------------------------------------------------------------
# Interval bounds
# --------------------------------------------------------------------------


def var_ranges(extents: Extents) -> dict:
    return {v: (0, e - 1) if isinstance(e, int) else (0, None) for v, e in extents.items()}


def bounds(e: PrimExpr, ranges: dict) -> tuple[int, int | None] | None:
    """Inclusive `(lo, hi)` of `e`; `hi` is None when unbounded above; None if unknown."""
    if isinstance(e, IntImm):
        return (int(e.value), int(e.value))
    if isinstance(e, Var):
        return ranges.get(e)
    if isinstance(e, (Compare, And, Or, Not)):
        return (0, 1)
    if isinstance(e, Cast):
        return bounds(e.value, ranges)
    if isinstance(e, Select):
        t, f = bounds(e.true_value, ranges), bounds(e.false_value, ranges)
        if t is None or f is None:
            return None
        return (min(t[0], f[0]), None if t[1] is None or f[1] is None else max(t[1], f[1]))
    if not isinstance(e, BinaryOp):
        return None
    a, b = bounds(e.a, ranges), bounds(e.b, ranges)
    if a is None or b is None:
        return None
    (alo, ahi), (blo, bhi) = a, b
    op = e.op
    if op == "add":
        return (alo + blo, None if ahi is None or bhi is None else ahi + bhi)
    if op == "sub":
        return None if bhi is None else (alo - bhi, None if ahi is None else ahi - blo)
    if op == "mul":
        if alo >= 0 and blo >= 0:
            return (alo * blo, None if ahi is None or bhi is None else ahi * bhi)
        if ahi is None or bhi is None:
            return None
        c = [alo * blo, alo * bhi, ahi * blo, ahi * bhi]
        return (min(c), max(c))
    if op in ("floordiv", "floormod") and blo == bhi and blo > 0:
        d = blo
        if op == "floordiv":
            return (alo // d, None if ahi is None else ahi // d)
        if ahi is not None and alo // d == ahi // d:
            return (alo % d, ahi % d)
        return (0, d - 1)
    if op in ("shl", "shr") and blo == bhi and blo >= 0:
        f = 2**blo
        if op == "shl":
            return (alo * f, None if ahi is None else ahi * f)
        return (alo // f, None if ahi is None else ahi // f)
    if alo >= 0 and blo >= 0 and op in ("bitand", "bitor", "bitxor"):
        if op == "bitand":
            hi = ahi if bhi is None else (bhi if ahi is None else min(ahi, bhi))
            return (0, hi)
        if ahi is None or bhi is None:
            return (0, None)
        return (0, (1 << max(ahi, bhi).bit_length()) - 1)
    if op == "min":
        return (min(alo, blo), bhi if ahi is None else (ahi if bhi is None else min(ahi, bhi)))
    if op == "max":
        return (max(alo, blo), None if ahi is None or bhi is None else max(ahi, bhi))
    return None


# --------------------------------------------------------------------------
# Substitution with constant folding
# --------------------------------------------------------------------------


def substitute(e: Any, mapping: dict) -> PrimExpr:
    """Replace Vars by expressions (ints allowed) and re-fold through the IR builders."""
    if isinstance(e, Var):
        hit = mapping.get(e)
        return e if hit is None else as_expr(hit)
    if isinstance(e, IntImm) or not isinstance(e, PrimExpr):
        return as_expr(e)
    if isinstance(e, BinaryOp):
        a, b = substitute(e.a, mapping), substitute(e.b, mapping)
        return e if a is e.a and b is e.b else _rebuild_binary(e.op, a, b)
    if isinstance(e, Compare):
        return compare(e.op, substitute(e.a, mapping), substitute(e.b, mapping))
    if isinstance(e, And):
        return logical_and(substitute(e.a, mapping), substitute(e.b, mapping))
    if isinstance(e, Or):
        return logical_or(substitute(e.a, mapping), substitute(e.b, mapping))
    if isinstance(e, Not):
        return logical_not(substitute(e.a, mapping))
    if isinstance(e, Select):
        return select(*(substitute(x, mapping) for x in (e.cond, e.true_value, e.false_value)))
    if isinstance(e, Cast):
        return cast(substitute(e.value, mapping), e.dtype)
    if isinstance(e, Call):
        return call(e.op, *(substitute(x, mapping) for x in e.args), dtype=e.dtype)
    from ..ir.visitor import substitute as ir_substitute

    return ir_substitute(e, mapping)


def _rebuild_binary(op: str, a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if op == "bitxor":
        if isinstance(a, IntImm) and a.value == 0:
            return b
        if isinstance(b, IntImm) and b.value == 0:
            return a
        if isinstance(a, IntImm) and isinstance(b, IntImm):
            return IntImm(a.value ^ b.value, a.dtype)
    if op in ("bitand", "bitor", "shl", "shr") and isinstance(a, IntImm) and isinstance(b, IntImm):
        x, y = a.value, b.value
        v = {"bitand": x & y, "bitor": x | y, "shl": x << y, "shr": x >> y}[op]
        return IntImm(v, a.dtype)
    return binary(op, a, b)


# --------------------------------------------------------------------------
# Digit form: sum of coef * ((v // s) % e) + const
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    """`coef * ((var // stride) % extent)`; extent None means "all higher digits".

    `var` is a layout Var or an opaque non-negative sub-expression (an atom);
    `limit` is the var's own extent (None if unknown)."""

    coef: int
    var: Any
    stride: int
    extent: int | None
    limit: int | None

    @property
    def span(self) -> int | None:
        """Number of distinct values the field takes (its digit range)."""
        top = None if self.limit is None else -(-self.limit // self.stride)
        if self.extent is None:
            return top
        return self.extent if top is None else min(self.extent, top)

    @property
    def max_value(self) -> int | None:
        n = self.span
        return None if n is None else self.coef * (n - 1)


@dataclass
class Digits:
    fields: list
    const: int = 0


def parse_digits(e: PrimExpr, extents: Extents, atoms: bool = True, known: dict | None = None) -> Digits | None:
    """Read `e` as a digit form, or None. With `atoms`, unreadable non-negative
    bounded sub-expressions become opaque fields instead of failing. `known`: digit forms of
    sub-expression objects already read (id -> (expr, Digits)), used instead of reading again."""
    if known is not None:
        hit = known.get(id(e))
        if hit is not None and hit[0] is e:
            return Digits(list(hit[1].fields), hit[1].const)
    if isinstance(e, IntImm):
        return Digits([], int(e.value))
    if isinstance(e, Var):
        if e in extents:
            return Digits([Field(1, e, 1, None, extents[e])])
        return Digits([Field(1, e, 1, None, None)]) if atoms else None
    if isinstance(e, BinaryOp):
        op = e.op
        if op in ("add", "sub"):
            a, b = parse_digits(e.a, extents, atoms, known), parse_digits(e.b, extents, atoms, known)
            if a is None or b is None:
                return _atom(e, extents, atoms)
            if op == "add":
                return Digits(a.fields + b.fields, a.const + b.const)
            if not b.fields:
                return Digits(a.fields, a.const - b.const)
            return _atom(e, extents, atoms)
        if op in ("mul", "shl"):
            x, k = (e.a, e.b) if isinstance(e.b, IntImm) else (e.b, e.a)
            if isinstance(k, IntImm) and (op == "mul" or x is e.a):
                f = k.value if op == "mul" else 2**k.value
                d = parse_digits(x, extents, atoms, known)
                if d is not None and f >= 0:
                    return Digits([_scale(t, f) for t in d.fields] if f else [], d.const * f)
            return _atom(e, extents, atoms)
        if op in ("floordiv", "floormod", "shr") and isinstance(e.b, IntImm) and e.b.value > 0:
            d = e.b.value if op != "shr" else 2**e.b.value
            a = parse_digits(e.a, extents, atoms, known)
            r = None if a is None else (_mod(a, d) if op == "floormod" else _div(a, d))
            return r if r is not None else _atom(e, extents, atoms)
        if op == "bitand" and isinstance(e.b, IntImm) and e.b.value >= 0 and (e.b.value + 1) & e.b.value == 0:
            a = parse_digits(e.a, extents, atoms, known)  # x & (2^k - 1) == x % 2^k for x >= 0
            r = None if a is None else _mod(a, e.b.value + 1)
            return r if r is not None else _atom(e, extents, atoms)
    return _atom(e, extents, atoms)


def _atom(e: PrimExpr, extents: Extents, atoms: bool) -> Digits | None:
    if not atoms:
        return None
    b = bounds(e, var_ranges(extents))
    if b is None or b[0] < 0:
        return None
    return Digits([Field(1, e, 1, None, None if b[1] is None else b[1] + 1)])


def _scale(t: Field, f: int) -> Field:
    return Field(t.coef * f, t.var, t.stride, t.extent, t.limit)


def _split(fields: list, d: int) -> list | None:
    """Split fields whose digit range straddles `d` so each lies wholly below or above it."""
    out = []
    for t in fields:
        if t.coef == 0:
            continue
        if t.coef < 0:
            return None
        if t.coef < d and d % t.coef == 0:
            k = d // t.coef
            n = t.span
            if n is None or n > k:
                if t.extent is not None and t.extent % k:
                    return None  # (x % e) % k != x % k unless k divides e
                upper = None if t.extent is None else t.extent // k
                out.append(Field(t.coef, t.var, t.stride, k, t.limit))
                out.append(Field(t.coef * k, t.var, t.stride * k, upper, t.limit))
                continue
        out.append(t)
    return out


def _partition(a: Digits, d: int) -> tuple[list, list] | None:
    fields = _split(a.fields, d)
    if fields is None:
        return None
    hi = [t for t in fields if t.coef % d == 0]
    lo = [t for t in fields if t.coef % d != 0]
    lo_max = a.const % d
    for t in lo:
        m = t.max_value
        if m is None:
            return None
        lo_max += m
    if lo_max >= d:
        return None
    return hi, lo


def _div(a: Digits, d: int) -> Digits | None:
    p = _partition(a, d)
    if p is None:
        return None
    hi, _ = p
    return Digits([Field(t.coef // d, t.var, t.stride, t.extent, t.limit) for t in hi], a.const // d)


def _mod(a: Digits, d: int) -> Digits | None:
    p = _partition(a, d)
    if p is None:
        return None
    _, lo = p
    return Digits(lo, a.const % d)


def _same_var(a: Any, b: Any) -> bool:
    return a is b


def normalize(dg: Digits) -> Digits:
    """Drop zero fields, merge adjacent fields of one var, sort by coefficient."""
    fields = []
    for t in dg.fields:
        n = t.span
        if t.coef == 0 or n == 1 or n == 0:
            continue
        if t.extent is not None and t.limit is not None and t.stride * t.extent >= t.limit:
            t = Field(t.coef, t.var, t.stride, None, t.limit)  # the modulo is a no-op
        fields.append(t)
    changed = True
    while changed:
        changed = False
        for x in fields:
            for y in fields:
                if x is y or not _same_var(x.var, y.var) or x.extent is None:
                    continue
                if y.stride == x.stride * x.extent and y.coef == x.coef * x.extent:
                    ext = None if y.extent is None else x.extent * y.extent
                    merged = Field(x.coef, x.var, x.stride, ext, x.limit)
                    fields = [t for t in fields if t is not x and t is not y] + [merged]
                    changed = True
                    break
                if y.stride == x.stride and y.extent == x.extent:  # same digits twice: add  # ir-eq: ints
                    merged = Field(x.coef + y.coef, x.var, x.stride, x.extent, x.limit)
                    fields = [t for t in fields if t is not x and t is not y] + [merged]
                    changed = True
                    break
            if changed:
                break
    fields.sort(key=lambda t: -t.coef)
    return Digits(fields, dg.const)


def field_expr(var: Any, stride: int, extent: int | None, limit: int | None) -> PrimExpr:
    """`(var // stride) % extent`, leaving out whatever is a no-op."""
    x = var if isinstance(var, PrimExpr) else as_expr(var)
    if stride > 1:
        x = binary("floordiv", x, stride)
    if extent is not None and not (limit is not None and stride * extent >= limit):
        x = binary("floormod", x, extent)
    return x


def emit(dg: Digits) -> PrimExpr:
    out: PrimExpr | None = None
    for t in dg.fields:
        x = field_expr(t.var, t.stride, t.extent, t.limit)
        if t.coef != 1:
            x = binary("mul", x, t.coef)
        out = x if out is None else binary("add", out, x)
    if out is None:
        return IntImm(dg.const)
    return binary("add", out, dg.const) if dg.const else out


# --------------------------------------------------------------------------
# Simplification
# --------------------------------------------------------------------------


_DIGIT_OPS = frozenset({"add", "sub", "mul", "shl", "floordiv", "floormod", "shr", "bitand"})


def _int32_form(dg: Digits) -> bool:
    """Whether the expression `emit(dg)` builds is int32 (its fields' vars and atoms are)."""
    return all(getattr(t.var, "dtype", None) is int32 for t in dg.fields)


def simplify(e: PrimExpr, extents: Extents | None = None) -> PrimExpr:
    """Canonicalise `e` given that each var in `extents` ranges over [0, extent)."""
    return _Simplifier(extents or {}).run(e)


class _Simplifier:
    """One `simplify` call: bottom-up, each node rewritten from its simplified children and then
    read as a digit form. Index maps share subtrees (a substituted layout repeats its operand
    expressions), so results are memoised per node object for the length of the call."""

    def __init__(self, extents: Extents) -> None:
        self.extents = extents
        self.memo: dict[int, tuple[PrimExpr, PrimExpr]] = {}
        self.known: dict[int, tuple[PrimExpr, Digits]] = {}
        self.dmemo: dict[int, tuple[PrimExpr, Digits | None]] = {}

    def run(self, e: PrimExpr) -> PrimExpr:
        # Leaves first, without the digit round trip (half of all calls: every operand of every
        # node): a var is itself unless its range is a single value; a constant is re-made, as
        # `emit` would, as an int32 IntImm.
        if isinstance(e, Var):
            n = self.extents.get(e)
            if n is None or (isinstance(n, int) and n > 1):
                return e
        elif isinstance(e, IntImm):
            return IntImm(int(e.value))
        hit = self.memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        if isinstance(e, BinaryOp) and e.op in _DIGIT_OPS:
            dg = self.digits(e)
            if dg is not None:
                out = emit(dg)
                self.known[id(out)] = (out, dg)
                self.memo[id(e)] = (e, out)
                return out
        out = self._children(e)
        dg = parse_digits(out, self.extents, known=self.known)
        if dg is not None:
            dg = normalize(dg)
            out = emit(dg)
            # the parent reads this node again as part of its own digit form: give it the form
            self.known[id(out)] = (out, dg)
        self.memo[id(e)] = (e, out)  # `e` kept alive: its id is not reused while the memo lives
        return out

    def digits(self, e: PrimExpr) -> Digits | None:
        """The normalised digit form of `run(e)`, read from the children's forms without building
        the intermediate expressions (an index map is a deep sum of digit terms, and building
        each level's expression only for its parent to read it again is the cost of `simplify`),
        or None where that takes the expression path: an operand that is no digit form, or not
        int32 (the rebuilt expression would cast it), or a step `parse_digits` would make an
        atom of. Equal to what `run` would read: `parse_digits` of the rebuilt node combines the
        same child forms by the same rules."""
        if isinstance(e, Var):
            if e.dtype is not int32:
                return None
            return normalize(Digits([Field(1, e, 1, None, self.extents.get(e))]))
        if isinstance(e, IntImm):
            return Digits([], int(e.value))
        if not (isinstance(e, BinaryOp) and e.op in _DIGIT_OPS):
            return None
        hit = self.dmemo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        out = self._combine(e)
        self.dmemo[id(e)] = (e, out)
        return out

    def _combine(self, e: BinaryOp) -> Digits | None:
        a = self.digits(e.a)
        if a is None or not _int32_form(a):
            return None
        b = self.digits(e.b)
        if b is None or not _int32_form(b):
            return None
        op = e.op
        if op == "add":
            return normalize(Digits(a.fields + b.fields, a.const + b.const))
        if op == "sub":
            return normalize(Digits(a.fields, a.const - b.const)) if not b.fields else None
        if op in ("mul", "shl"):
            if b.fields and (op == "shl" or a.fields):
                return None
            x, k = (a, b.const) if not b.fields else (b, a.const)
            if k < 0:
                return None
            f = k if op == "mul" else 2**k
            return normalize(Digits([_scale(t, f) for t in x.fields] if f else [], x.const * f))
        if b.fields or b.const <= 0:
            return None
        if op in ("floordiv", "floormod", "shr"):
            d = b.const if op != "shr" else 2**b.const
            r = _mod(a, d) if op == "floormod" else _div(a, d)
        elif op == "bitand" and (b.const + 1) & b.const == 0:
            r = _mod(a, b.const + 1)
        else:
            return None
        return None if r is None else normalize(r)

    def _children(self, e: PrimExpr) -> PrimExpr:
        run, extents = self.run, self.extents
        if isinstance(e, BinaryOp):
            a, b = run(e.a), run(e.b)
            if e.op == "bitxor":
                ba, bb = bounds(a, var_ranges(extents)), bounds(b, var_ranges(extents))
                # keep XOR operands ordered by their digit position for readability
                if ba and bb and ba[1] is not None and bb[1] is not None and bb[1] > ba[1]:
                    a, b = b, a
            return _rebuild_binary(e.op, a, b)
        if isinstance(e, Select):
            return select(*(run(x) for x in (e.cond, e.true_value, e.false_value)))
        if isinstance(e, Compare):
            return compare(e.op, run(e.a), run(e.b))
        if isinstance(e, Cast):
            return cast(run(e.value), e.dtype)
        return e


def simplify_all(exprs: tuple, extents: Extents) -> tuple:
    return tuple(simplify(as_expr(x), extents) for x in exprs)


def exact_extent(e: PrimExpr, extents: Extents) -> int | None:
    """`max(e) + 1` over the domain when provably exact, else None.

    Exact for digit forms with non-negative coefficients whose fields are
    disjoint digit ranges of their vars and every digit combination occurs
    (each var's extent is a multiple of its fields' top), which covers the
    maps built in this package."""
    dg = parse_digits(e, extents, atoms=False)
    if dg is None or dg.const < 0:
        return None
    dg = normalize(dg)
    by_var: dict = {}
    total = dg.const
    for t in dg.fields:
        n = t.span
        if t.coef < 0 or n is None or t.limit is None or t.limit % (t.stride * n):
            return None
        by_var.setdefault(t.var, []).append((t.stride, t.stride * n))
        total += t.coef * (n - 1)
    for spans in by_var.values():
        spans.sort()
        if any(a[1] > b[0] for a, b in zip(spans, spans[1:])):
            return None
    return total + 1
