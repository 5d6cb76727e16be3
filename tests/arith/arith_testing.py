"""Helpers for the arith tests: a reference evaluator and random expressions.

`evaluate(e, env)` computes an integer/boolean IR expression with Python
integers (mathematical, no wrap-around — the semantics the analyzer assumes —
except that an integer cast wraps into its type):
`//` and `%` floor, `div` truncates toward zero, loads read a deterministic
pseudo-random table. `RandomExprs` builds random index expressions over a set
of variables with known ranges.
"""

from __future__ import annotations

import random

from tilelang.ir import (
    And,
    BinaryOp,
    BufferLoad,
    Call,
    Cast,
    Compare,
    IntImm,
    Not,
    Or,
    Select,
    Var,
    binary,
    call,
    cast,
    make_buffer,
    select,
)
from tilelang.ir.dtype import int32, int64


def _trunc_div(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y > 0) else -q


def _load(buffer, idx: tuple) -> int:
    h = hash((buffer.name,) + idx) & 0xFFFF
    return h % 41 - 20


def evaluate(e, env: dict) -> int:
    """The value of `e` with Vars taken from `env` (keyed by id(var));
    raises ZeroDivisionError where the program would divide by zero."""
    t = type(e)
    if t is IntImm:
        return e.value
    if t is Var:
        return env[id(e)]
    if t is BinaryOp:
        a, b = evaluate(e.a, env), evaluate(e.b, env)
        op = e.op
        if op == "add":
            return a + b
        if op == "sub":
            return a - b
        if op == "mul":
            return a * b
        if op == "floordiv":
            return a // b
        if op == "floormod":
            return a % b
        if op == "div":
            return _trunc_div(a, b)
        if op == "min":
            return min(a, b)
        if op == "max":
            return max(a, b)
        if op == "shl":
            return a << b
        if op == "shr":
            return a >> b
        if op == "bitand":
            return a & b
        if op == "bitor":
            return a | b
        if op == "bitxor":
            return a ^ b
        raise NotImplementedError(op)
    if t is Compare:
        a, b = evaluate(e.a, env), evaluate(e.b, env)
        return int({"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[e.op])
    if t is And:
        return int(bool(evaluate(e.a, env)) and bool(evaluate(e.b, env)))
    if t is Or:
        return int(bool(evaluate(e.a, env)) or bool(evaluate(e.b, env)))
    if t is Not:
        return int(not evaluate(e.a, env))
    if t is Select:
        return evaluate(e.true_value if evaluate(e.cond, env) else e.false_value, env)
    if t is Cast:
        v = evaluate(e.value, env)
        if e.dtype.is_bool:
            return int(v != 0)
        bits = e.dtype.bits  # a cast wraps into its type (two's complement), like C
        v &= (1 << bits) - 1
        return v - (1 << bits) if e.dtype.is_int and v >> (bits - 1) else v
    if t is BufferLoad:
        return _load(e.buffer, tuple(evaluate(i, env) for i in e.indices))
    if t is Call:
        args = [evaluate(a, env) for a in e.args]
        if e.op == "ceildiv":
            return -(-args[0] // args[1])
        if e.op == "abs":
            return abs(args[0])
        if e.op in ("min", "max"):
            return min(args) if e.op == "min" else max(args)
    raise NotImplementedError(type(e).__name__)


class RandomExprs:
    """Random integer index expressions over `vars` (Var -> inclusive (lo, hi))."""

    def __init__(self, rng: random.Random, ranges: dict) -> None:
        self.rng = rng
        self.ranges = ranges
        self.vars = list(ranges)
        self.buf = make_buffer("T", (64,), "int32")

    def leaf(self):
        r = self.rng.random()
        if r < 0.6:
            return self.rng.choice(self.vars)
        if r < 0.9:
            return IntImm(self.rng.randint(-9, 17))
        return BufferLoad(self.buf, (self.rng.choice(self.vars),), self.buf.dtype)

    def expr(self, depth: int = 4):
        rng = self.rng
        if depth <= 0 or rng.random() < 0.15:
            return self.leaf()
        kind = rng.random()
        sub = lambda: self.expr(depth - 1)  # noqa: E731
        if kind < 0.22:
            return binary("add", sub(), sub())
        if kind < 0.34:
            return binary("sub", sub(), sub())
        if kind < 0.48:
            k = rng.choice([1, 2, 3, 4, 8, 16, -1, -2, 0])
            return binary("mul", sub(), IntImm(k)) if rng.random() < 0.8 else binary("mul", sub(), sub())
        if kind < 0.62:
            c = rng.choice([1, 2, 3, 4, 8, 16, 32, 6, 12, -4])
            return binary("floordiv", sub(), IntImm(c))
        if kind < 0.74:
            c = rng.choice([1, 2, 3, 4, 8, 16, 32, 6, 12, -4])
            return binary("floormod", sub(), IntImm(c))
        if kind < 0.78:
            c = rng.choice([2, 4, 5, -3])
            return binary("div", sub(), IntImm(c))
        if kind < 0.82:
            # divisor a variable with a positive range, or a constant-plus-var
            pos = [v for v in self.vars if self.ranges[v][0] >= 1]
            if pos:
                d = rng.choice(pos)
                return binary(rng.choice(["floordiv", "floormod"]), sub(), d)
            return self.leaf()
        if kind < 0.9:
            return binary(rng.choice(["min", "max"]), sub(), sub())
        if kind < 0.94:
            return select(self.cond(depth - 1), sub(), sub())
        if kind < 0.96:
            return binary("shl", sub(), IntImm(rng.choice([0, 1, 3])))
        if kind < 0.98:
            return call("ceildiv", sub(), IntImm(rng.choice([1, 3, 4, 16])), dtype="int32")
        if kind < 0.99:
            return call("abs", sub())
        return cast(binary("add", cast(sub(), int64), IntImm(rng.choice([1, 5]), int64)), int32)

    def cond(self, depth: int = 3):
        rng = self.rng
        op = rng.choice(["lt", "le", "gt", "ge", "eq", "ne"])
        c = Compare(op, self.expr(depth), self.expr(depth))
        r = rng.random()
        if r < 0.15:
            return And(c, Compare(rng.choice(["lt", "ge"]), self.expr(depth - 1), self.expr(depth - 1)))
        if r < 0.25:
            return Or(c, Compare(rng.choice(["lt", "ge"]), self.expr(depth - 1), self.expr(depth - 1)))
        if r < 0.3:
            return Not(c)
        return c

    def assignment(self) -> dict:
        return {id(v): self.rng.randint(lo, hi) for v, (lo, hi) in self.ranges.items()}


# --------------------------------------------------------------------------
# A reference interpreter for small statement trees
# --------------------------------------------------------------------------


def run_stmt(s, env: dict, mem: dict) -> None:
    """Execute `s` (KernelLaunch, For, IfThenElse, SeqStmt, LetStmt,
    BufferStore, Allocate, Evaluate) with Vars in `env` (id -> int); stores go
    to `mem[(buffer name, indices)]`."""
    from tilelang.ir import Allocate, BufferStore, Evaluate, For, IfThenElse, KernelLaunch, LetStmt, SeqStmt

    t = type(s)
    if t is SeqStmt:
        env = dict(env)  # LetStmts bind until the end of the enclosing block
        for x in s.stmts:
            if type(x) is LetStmt:
                env[id(x.var)] = evaluate(x.value, env)
            else:
                run_stmt(x, env, mem)
    elif t is LetStmt:
        pass  # a LetStmt that is a whole body binds nothing anyone reads
    elif t is BufferStore:
        idx = tuple(evaluate(i, env) for i in s.indices)
        mem[(s.buffer.name, idx)] = evaluate(s.value, env)
    elif t is For:
        start, extent = evaluate(s.start, env), evaluate(s.extent, env)
        step = 1 if s.step is None else evaluate(s.step, env)
        for k in range(extent):
            run_stmt(s.body, {**env, id(s.var): start + k * step}, mem)
    elif t is IfThenElse:
        if evaluate(s.cond, env):
            run_stmt(s.then_body, env, mem)
        elif s.else_body is not None:
            run_stmt(s.else_body, env, mem)
    elif t is KernelLaunch:
        import itertools

        grid = [evaluate(g, env) for g in s.grid]
        for point in itertools.product(*(range(g) for g in grid)):
            run_stmt(s.body, {**env, **{id(v): p for v, p in zip(s.block_vars, point)}}, mem)
    elif t in (Allocate, Evaluate):
        pass
    else:
        raise NotImplementedError(t.__name__)


class RandomPrograms:
    """Random kernels: loop nests with guards, lets and stores into `out`."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.out = make_buffer("out", (4096,), "int32")
        self.src = make_buffer("src", (64,), "int32")
        self.n = Var("n")  # a scalar parameter
        self.M = Var("M")  # a dynamic dimension
        self.a = make_buffer("a", (self.M,), "int32")

    def _expr(self, ranges: dict):
        gen = RandomExprs(self.rng, ranges)
        gen.buf = self.src
        return gen

    def block(self, ranges: dict, depth: int):
        from tilelang.ir import For, IfThenElse, LetStmt, seq

        rng = self.rng
        gen = self._expr(ranges)
        stmts = []
        for _ in range(rng.randint(1, 3)):
            r = rng.random()
            if r < 0.3 and depth > 0:
                v = Var(rng.choice("ijk"))
                start = IntImm(rng.randint(-2, 3)) if rng.random() < 0.8 else gen.expr(1)
                extent = IntImm(rng.randint(0, 5)) if rng.random() < 0.8 else binary("max", gen.expr(1), 0)
                step = None if rng.random() < 0.7 else IntImm(rng.choice([1, 2, 3, -1]))
                inner = dict(ranges)
                inner[v] = (-20, 30)  # only used to draw sub-expressions
                stmts.append(For(v, start, extent, "serial", self.block(inner, depth - 1), step))
            elif r < 0.6:
                then = self.block(ranges, depth - 1) if depth > 0 else self.store(gen)
                other = None
                if rng.random() < 0.4:
                    other = self.block(ranges, depth - 1) if depth > 0 else self.store(gen)
                stmts.append(IfThenElse(gen.cond(2), then, other))
            elif r < 0.75:
                v = Var("t")
                value = gen.expr(2) if rng.random() < 0.7 else BufferLoad(self.src, (gen.expr(1),), self.src.dtype)
                stmts.append(LetStmt(v, value))
                inner = dict(ranges)
                inner[v] = (-50, 50)
                ranges = inner
                gen = self._expr(ranges)
            else:
                stmts.append(self.store(gen))
        return seq(*stmts)

    def store(self, gen):
        from tilelang.ir import BufferStore

        return BufferStore(self.out, (gen.expr(3),), gen.expr(3))

    def kernel(self):
        from tilelang.ir import KernelLaunch, PrimFunc

        rng = self.rng
        bx = Var("bx")
        grid = IntImm(rng.randint(1, 3)) if rng.random() < 0.7 else binary("floordiv", self.M + 1, 2)
        ranges = {bx: (0, 2), self.n: (-5, 5), self.M: (1, 5)}
        body = self.block(ranges, 3)
        launch = KernelLaunch((grid,), (bx,), (32, 1, 1), body)
        return PrimFunc("k", (self.out, self.src, self.a, self.n), launch)
