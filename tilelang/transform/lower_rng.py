"""lower_rng: `T.rng_init` / `T.rng_rand` / `T.rng_rand_float` → Philox calls at explicit positions.

Requires: a verified tile-level PrimFunc, before anything that may fold, move or duplicate
expressions (`simplify` would fold `T.rng_rand() - T.rng_rand()` to zero).

Guarantees: an equivalent PrimFunc (the input is never modified) with no `tl.rng_init`,
`tl.rng_draw` or `tl.rng_value` calls. A kernel that uses the generator gets three
`local.var` uint64 scalars at the top of its body (seed, subsequence, position; one copy
per thread on CUDA, all equal: they are only assigned at block level), and each draw
becomes a pure call `tl.philox_<kind>(seed, seq, position)` (C: `tl_philox_*`, CUDA:
`tl::philox_*`) at the position language/random.py defines:

* a draw outside any `T.Parallel` nest binds its value with a `LetStmt` at the current
  position, then advances the position by its width;
* a draw inside a nest (a `T.Parallel` loop, or a loop bound to threads) gets `base + Σ trip·(draws per trip) + k` from the loop indices
  (static counts: loops inside a nest need constant trip counts, `while` is not allowed),
  and the statement after the nest advances the position by the nest's total.

Errors: a draw before any `T.rng_init` of its kernel (in program order), `T.rng_init`
inside a `T.Parallel` nest, and draws under a `while` or a loop of non-constant trip count
inside a nest, each at its line.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import DSLError, UnsupportedError
from ..ir.buffer import make_buffer
from ..ir.dtype import DataType
from ..ir.expr import BufferLoad, Call, IntImm, PrimExpr, Var, binary, cast, const_int
from ..ir.function import PrimFunc
from ..ir.stmt import Allocate, BufferStore, Evaluate, For, IfThenElse, KernelLaunch, LetStmt, SeqStmt, Stmt, While
from ..ir.stmt import seq as make_seq
from ..ir.visitor import Mutator, SplicingMutator, collect

U64 = DataType("uint64")
# draw kind -> (call, positions it takes)
KINDS = {
    "u32": ("tl.philox_u32", 1),
    "uniform_f32": ("tl.philox_uniform_f32", 1),
    "uniform_f64": ("tl.philox_uniform_f64", 2),
    "normal_f32": ("tl.philox_normal_f32", 2),
    "normal_f64": ("tl.philox_normal_f64", 4),
}
RNG_OPS = ("tl.rng_init", "tl.rng_draw", "tl.rng_value")
# loops whose iterations may run in different threads: positions come from the index, so the
# numbers do not depend on which thread (or, on the CPU, which order) runs an iteration
NEST_KINDS = ("parallel", "thread")


def lower_rng(func: PrimFunc, ctx: dict | None = None) -> PrimFunc:
    if not collect(func.body, lambda n: isinstance(n, Call) and n.op in RNG_OPS):
        return func
    body = _Kernels().visit(func.body)
    return func if body is func.body else func.with_body(body)


def _is(s: Any, op: str) -> bool:
    return isinstance(s, Evaluate) and isinstance(s.value, Call) and s.value.op == op


def _u64(e: Any) -> PrimExpr:
    return cast(e, U64) if isinstance(e, PrimExpr) else IntImm(int(e), U64)


def _zero(n: Any) -> bool:
    return isinstance(n, int) and n == 0


def _add(a: PrimExpr, b: Any) -> PrimExpr:
    if _zero(b):
        return a
    return binary("add", a, _u64(b))


class _Kernels(Mutator):
    def visit_KernelLaunch(self, k: KernelLaunch) -> KernelLaunch:
        if not collect(k.body, lambda n: isinstance(n, Call) and n.op in RNG_OPS):
            return k
        lw = _Block(k.span)
        body = lw.visit(k.body)
        allocs = [Allocate(b, IntImm(0, U64), span=k.span) for b in lw.state]
        return replace(k, body=make_seq(*allocs, body))


class _Values(Mutator):
    """Replaces `tl.rng_value(id)` by the expression its draw was given."""

    def __init__(self, values: dict) -> None:
        super().__init__()
        self.values = values

    def visit_Call(self, c: Call) -> Any:
        if c.op == "tl.rng_value":
            hit = self.values.get(c.args[0].value)
            if hit is None:
                raise DSLError("a random value is used outside the block where it was drawn", c.span)
            return hit
        return self.generic_visit(c)


class _Block(SplicingMutator):
    """Block-level statements: draws in program order, positions advanced at run time."""

    def __init__(self, span: Any) -> None:
        super().__init__()
        names = ("rng_seed", "rng_seq", "rng_pos")
        self.state = tuple(make_buffer(n, (1,), U64, "local.var", span) for n in names)
        self.values: dict = {}
        self.inited = False

    def load(self, i: int) -> PrimExpr:
        return BufferLoad(self.state[i], (IntImm(0),), U64)

    def philox(self, kind: str, pos: PrimExpr, dtype: DataType, span: Any) -> PrimExpr:
        return Call(KINDS[kind][0], (self.load(0), self.load(1), pos), dtype, span)

    def check_init(self, s: Stmt) -> None:
        if not self.inited:
            raise DSLError(
                "random draw before T.rng_init", s.span, "call T.rng_init(seed) in the kernel before drawing"
            )

    def advance(self, n: Any, span: Any) -> Stmt:
        pos = self.state[2]
        return BufferStore(pos, (IntImm(0),), _add(self.load(2), n), span)

    def visit_Evaluate(self, s: Evaluate) -> Any:
        if _is(s, "tl.rng_init"):
            seed, sq, off = (_Values(self.values).visit(a) for a in s.value.args)
            self.inited = True
            return make_seq(*(BufferStore(b, (IntImm(0),), v, s.span) for b, v in zip(self.state, (seed, sq, off))))
        if _is(s, "tl.rng_draw"):
            self.check_init(s)
            uid, kind = s.value.args[0].value, s.value.args[1].value
            var = Var(f"rng_{kind}", s.value.dtype)
            self.values[uid] = var
            let = LetStmt(var, self.philox(kind, self.load(2), s.value.dtype, s.span), s.span)
            return make_seq(let, self.advance(KINDS[kind][1], s.span))
        return _Values(self.values).visit(s)

    def visit_Call(self, c: Call) -> Any:
        return _Values(self.values).visit(c)

    def visit_For(self, s: For) -> Any:
        if s.kind not in NEST_KINDS:
            return self.generic_visit(s)
        total = _count(s)
        if _zero(total) and not collect(s, lambda n: isinstance(n, Call) and n.op == "tl.rng_value"):
            return s
        if collect(s, lambda n: _is(n, "tl.rng_init")):
            bad = collect(s, lambda n: _is(n, "tl.rng_init"))[0]
            raise UnsupportedError(
                "T.rng_init inside T.Parallel: the generator belongs to the block",
                bad.span,
                "call T.rng_init before the loop (a per-element stream is T.rng_init(seed, seq=element))",
            )
        if not _zero(total):
            self.check_init(s)
        out = _Nest(self, self.load(2), s).stmt(s, IntImm(0, U64))  # raises where a count is not static
        return out if _zero(total) else make_seq(out, self.advance(total, s.span))


def _count(s: Any) -> Any:
    """Positions one execution of `s` takes (static; an int, or a PrimExpr for a root loop)."""
    if _is(s, "tl.rng_draw"):
        return KINDS[s.value.args[1].value][1]
    if isinstance(s, SeqStmt):
        return _sum(_count(x) for x in s.stmts)
    if isinstance(s, IfThenElse):
        return _sum((_count(s.then_body), _count(s.else_body) if s.else_body is not None else 0))
    if isinstance(s, For):
        inner = _count(s.body)
        if _zero(inner):
            return 0
        n = const_int(s.extent)
        if n is None:
            return binary("mul", _u64(s.extent), IntImm(inner, U64)) if isinstance(inner, int) else None
        return inner * n if isinstance(inner, int) else None
    if isinstance(s, While):
        return 0 if _zero(_count(s.body)) else None
    if isinstance(s, Stmt):
        # a statement with a body (a region, a let's scope) counts the draws inside it
        return _sum(_count(x) for x in _child_stmts(s))
    return 0


def _sum(xs: Any) -> Any:
    total: Any = 0
    for x in xs:
        if x is None:
            return None
        if isinstance(total, int) and isinstance(x, int):
            total += x
        else:
            total = binary("add", _u64(total), _u64(x))
    return total


def _child_stmts(s: Stmt) -> list:
    from ..ir.node import child_fields

    out = []
    for name in child_fields(type(s)):
        v = getattr(s, name)
        for x in v if isinstance(v, tuple) else (v,):
            if isinstance(x, Stmt):
                out.append(x)
    return out


class _Nest:
    """Statements of a `T.Parallel` nest: each draw's position from the loop indices."""

    def __init__(self, block: _Block, base: PrimExpr, root: For) -> None:
        self.block = block
        self.base = base
        self.root = root

    def stmt(self, s: Any, off: PrimExpr) -> Any:
        b = self.block
        if s is None:
            return None
        if _is(s, "tl.rng_draw"):
            uid, kind = s.value.args[0].value, s.value.args[1].value
            b.values[uid] = b.philox(kind, _add(self.base, off), s.value.dtype, s.span)
            return make_seq()
        if isinstance(s, SeqStmt):
            out, acc = [], off
            for x in s.stmts:
                out.append(self.stmt(x, acc))
                acc = _add(acc, _count(x))
            return make_seq(*out)
        if isinstance(s, IfThenElse):
            cond = _Values(b.values).visit(s.cond)
            then = self.stmt(s.then_body, off)
            other = self.stmt(s.else_body, _add(off, _count(s.then_body)))
            return IfThenElse(cond, then, other, s.span)
        if isinstance(s, For):
            per = _count(s.body)
            if _zero(per):
                return _Values(b.values).visit(s)
            if not isinstance(per, int) or (s is not self.root and const_int(s.extent) is None):
                raise UnsupportedError(
                    "random draws in a loop of non-constant trip count inside T.Parallel",
                    s.span,
                    "give the inner loop a constant extent, or draw outside the T.Parallel nest",
                )
            trip: PrimExpr = binary("sub", s.var, s.start)
            if s.step is not None and const_int(s.step) != 1:
                trip = binary("floordiv", trip, s.step)
            inner = _add(off, binary("mul", _u64(trip), IntImm(per, U64)))
            return replace(
                s,
                start=_Values(b.values).visit(s.start),
                extent=_Values(b.values).visit(s.extent),
                body=self.stmt(s.body, inner),
            )
        if isinstance(s, While):
            if not _zero(_count(s.body)):
                raise UnsupportedError(
                    "random draws in a while loop inside T.Parallel", s.span, "draw outside the while loop"
                )
            return _Values(b.values).visit(s)
        if not _zero(_count(s)):
            raise UnsupportedError(f"random draws inside {type(s).__name__} in T.Parallel", s.span)
        return _Values(b.values).visit(s)


__all__ = ["lower_rng"]
