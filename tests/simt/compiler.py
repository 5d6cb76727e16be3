"""Compiling a backend's per-thread IR into a Python generator function, one thread per call.

Target-neutral: the statements, expressions and the device functions every thread-level backend
shares (`tl.sync_threads`, `tl.all_reduce`, `tl::copy_vec`, `tl::shfl_lane`, atomics, math).
A target's own intrinsics come from its `Dialect` (`cuda.py`, `hip.py`), asked first. A collective
is a `yield (kind, ...)` that `wave.run_block` answers once every thread of the block has yielded.
"""

from __future__ import annotations

import math
import re
from typing import Any

from tilelang.backend.c.floatfmt import round_to
from tilelang.backend.cuda.ops import ALL_REDUCE_OP, BLOCK_BARRIER, all_reduce_fields
from tilelang.ir.buffer import Buffer
from tilelang.ir.expr import (
    And,
    BinaryOp,
    BufferLoad,
    Call,
    Cast,
    Compare,
    FloatImm,
    IntImm,
    Not,
    Or,
    Select,
    StringImm,
    Var,
    const_int,
)
from tilelang.ir.stmt import (
    Allocate,
    Break,
    BufferStore,
    Continue,
    Evaluate,
    For,
    IfThenElse,
    KernelLaunch,
    LetStmt,
    SeqStmt,
    While,
)

from .core import (
    MATH,
    Dialect,
    SharedMem,
    SimError,
    _atomic_update,
    _copy,
    _fdiv,
    _max,
    _min,
    _philox,
    _round,
    _tdiv,
    _tmod,
    _to_int,
)

_PY_BIN = {"add": "+", "sub": "-", "mul": "*", "bitand": "&", "bitor": "|", "bitxor": "^", "shl": "<<", "shr": ">>"}
_PY_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_REDUCE = {"tl::SumOp": "sum", "tl::MaxOp": "max", "tl::MinOp": "min", "tl::BitAndOp": "and", "tl::BitOrOp": "or",
           "tl::BitXorOp": "xor"}  # fmt: skip


class Compiler:
    def __init__(self, func, dialect: Dialect) -> None:
        self.func = func
        self.dialect = dialect
        self.lines: list = []
        self.names: dict = {}
        self.used: set = set()
        self.consts: dict = {}
        self.depth = 1
        self.syncs = 0  # __syncthreads() statements numbered so far

    def name(self, obj: Any) -> str:
        hit = self.names.get(id(obj))
        if hit is None:
            base = re.sub(r"\W", "_", obj.name) or "v"
            hit = f"v_{base}"
            k = 0
            while hit in self.used:
                k += 1
                hit = f"v_{base}_{k}"
            self.used.add(hit)
            self.names[id(obj)] = hit
        return hit

    def const(self, value: Any) -> str:
        key = f"K{len(self.consts)}"
        self.consts[key] = value
        return key

    def emit(self, s: str) -> None:
        self.lines.append("    " * self.depth + s)

    def compile(self, kernel: KernelLaunch, params: list, dyn: list) -> Any:
        args = [self.name(p) for p in params] + [self.name(v) for v in dyn]
        bvars = [self.name(v) for v in kernel.block_vars]
        self.lines = [f"def thread(__tx, __blk, __smem, {', '.join(args + bvars)}):"]
        self.emit("if False: yield None")
        self.stmt(kernel.body)
        src = "\n".join(self.lines)
        env = {
            "_tdiv": _tdiv, "_tmod": _tmod, "_max": _max, "_min": _min, "_fdiv": _fdiv, "_copy": _copy, "_philox": _philox,
            "_to_int": _to_int, "math": math, "SimError": SimError, "_Shared": SharedMem, "_atomic": _atomic_update, **{f"_m_{k}": v for k, v in MATH.items()},
            **self.consts,
        }  # fmt: skip
        exec(compile(src, f"<sim {self.func.name}>", "exec"), env)  # noqa: S102
        self.env = env
        return env["thread"], src

    # -- statements ---------------------------------------------------------------
    def stmt(self, s: Any) -> None:
        if s is None:
            return
        fn = getattr(self, "s_" + type(s).__name__)
        fn(s)

    def s_SeqStmt(self, s: SeqStmt) -> None:
        if not s.stmts:
            self.emit("pass")
        for x in s.stmts:
            self.stmt(x)

    def s_For(self, s: For) -> None:
        v = self.name(s.var)
        if s.kind == "thread":
            self.emit(f"{v} = __tx")
            self.stmt(s.body)
            return
        start, ext = self.expr(s.start), self.expr(s.extent)
        step = self.expr(s.step) if s.step is not None else "1"
        self.emit(f"for {v} in range({start}, ({start}) + ({ext}) * ({step}), {step}):")
        self.depth += 1
        self.emit("pass")
        self.stmt(s.body)
        self.depth -= 1

    def s_While(self, s: While) -> None:
        self.emit(f"while {self.expr(s.cond)}:")
        self.depth += 1
        self.emit("pass")
        self.stmt(s.body)
        self.depth -= 1

    def s_IfThenElse(self, s: IfThenElse) -> None:
        self.emit(f"if {self.expr(s.cond)}:")
        self.depth += 1
        self.emit("pass")
        self.stmt(s.then_body)
        self.depth -= 1
        if s.else_body is not None:
            self.emit("else:")
            self.depth += 1
            self.emit("pass")
            self.stmt(s.else_body)
            self.depth -= 1

    def s_Break(self, s: Break) -> None:
        self.emit("break")

    def s_Continue(self, s: Continue) -> None:
        self.emit("continue")

    def s_LetStmt(self, s: LetStmt) -> None:
        self.emit(f"{self.name(s.var)} = {self.expr(s.value)}")

    def s_Allocate(self, s: Allocate) -> None:
        b = s.buffer
        if s.annotations.get("view_of") is not None:  # a view: the same element list as its base
            from tilelang.transform.view_alias import alias_roots

            base = alias_roots(self.func.body, self.func.params)[b]
            if base.dtype is not b.dtype:
                raise SimError(f"view `{b.name}` reinterprets {base.dtype} as {b.dtype}: values, not bytes, here")
            self.emit(f"{self.name(b)} = {self.name(base)}")
            return
        n = 1
        for d in b.shape:
            n *= const_int(d)
        if b.scope in ("shared", "shared.dyn"):
            key = f"{b.name}#{id(b)}"
            self.emit(
                f"{self.name(b)} = __smem[{key!r}] if {key!r} in __smem else __smem.setdefault({key!r}, _Shared({b.name!r}, {n}))"
            )
        elif b.scope == "local.var":
            init = "None" if s.init is None else f"{self.rnd(b)}({self.expr(s.init)})"
            self.emit(f"{self.name(b)} = [{init}]")
        else:
            self.emit(f"{self.name(b)} = [None] * {n}")

    def rnd(self, b: Buffer) -> str:
        return self.const(_round(str(b.dtype.element_of())))

    def s_BufferStore(self, s: BufferStore) -> None:
        b = s.buffer
        self.emit(f"{self.name(b)}[{self.offset(b, s.indices)}] = {self.rnd(b)}({self.expr(s.value)})")

    def s_Evaluate(self, s: Evaluate) -> None:
        if self.dialect.evaluate(self, s):
            return
        v = s.value
        if isinstance(v, (IntImm, FloatImm)):
            return
        self.emit(self.expr(v))

    def offset(self, b: Buffer, indices: tuple) -> str:
        if b.scope == "local.var":
            return "0"
        idx = [self.expr(i) for i in indices]
        out = idx[0]
        for i, d in zip(idx[1:], b.shape[1:]):
            out = f"({out}) * ({self.expr(d)}) + ({i})"
        return out

    # -- expressions ---------------------------------------------------------------
    def expr(self, e: Any) -> str:
        if isinstance(e, Var):
            return self.name(e)
        if isinstance(e, IntImm):
            return str(bool(e.value)) if e.dtype.is_bool else str(int(e.value))
        if isinstance(e, FloatImm):
            v = e.value
            if v != v:
                return "math.nan"
            if math.isinf(v):
                return "math.inf" if v > 0 else "(-math.inf)"
            return repr(float(round_to(v, e.dtype.base)) if e.dtype.base in ("float16", "bfloat16") else float(v))
        if isinstance(e, StringImm):
            return repr(e.value)
        if isinstance(e, BinaryOp):
            a, b = self.expr(e.a), self.expr(e.b)
            dt = e.dtype
            if e.op in _PY_BIN:
                return f"({a} {_PY_BIN[e.op]} {b})"
            if e.op == "min":
                return f"_min({a}, {b})"
            if e.op == "max":
                return f"_max({a}, {b})"
            if e.op == "div":
                return f"_fdiv({a}, {b})" if dt.is_float else f"_tdiv({a}, {b})"
            if e.op == "floordiv":
                return f"math.floor(_fdiv({a}, {b}))" if dt.is_float else f"({a} // {b})"
            if e.op == "floormod":
                return f"({a} % {b})"
            raise SimError(f"binary op {e.op}")
        if isinstance(e, Compare):
            return f"({self.expr(e.a)} {_PY_CMP[e.op]} {self.expr(e.b)})"
        if isinstance(e, And):
            return f"({self.expr(e.a)} and {self.expr(e.b)})"
        if isinstance(e, Or):
            return f"({self.expr(e.a)} or {self.expr(e.b)})"
        if isinstance(e, Not):
            return f"(not {self.expr(e.a)})"
        if isinstance(e, Select):
            return f"({self.expr(e.true_value)} if {self.expr(e.cond)} else {self.expr(e.false_value)})"
        if isinstance(e, Cast):
            x = self.expr(e.value)
            dt = e.dtype
            if dt.is_bool:
                return f"bool({x})"
            if dt.is_integer:
                return f"{self.const(_round(str(dt)))}(_to_int({x}))"
            return f"{self.const(_round(str(dt.element_of())))}(float({x}))"
        if isinstance(e, BufferLoad):
            return f"{self.name(e.buffer)}[{self.offset(e.buffer, e.indices)}]"
        if isinstance(e, Call):
            return self.call(e)
        raise SimError(f"cannot simulate {type(e).__name__}")

    def call(self, e: Call) -> str:
        own = self.dialect.call(self, e)
        if own is not None:
            return own
        op, args = e.op, e.args
        if op == "address_of":
            ld = args[0]
            return f"({self.name(ld.buffer)}, {self.offset(ld.buffer, ld.indices)})"
        if op == "tl.store_nibble_pair":  # pair_nibble_stores.py: elements i and i + 1 of a packed buffer
            at = args[0]
            r = self.rnd(at.buffer)
            n, off = self.name(at.buffer), self.offset(at.buffer, at.indices)
            lo, hi = self.expr(args[1]), self.expr(args[2])
            return f"(lambda o, a, b: ({n}.__setitem__(o, {r}(a)), {n}.__setitem__(o + 1, {r}(b))))({off}, {lo}, {hi})"
        if op == "tl.sync_threads":
            self.syncs += 1
            return f"(yield ('sync', {self.syncs}))"
        if op in ("tl.atomic_add_x2", "tl.atomic_add_x4"):  # vector atomics: dst[k] += src[k]
            n = int(op[-1])
            r = self.const(_round(str(args[0].args[0].buffer.dtype.element_of())))
            p, q = self.expr(args[0]), self.expr(args[1])
            step = f"_atomic((p[0], p[1] + k), lambda old: {r}(old + q[0][q[1] + k]))"
            return f"(lambda p, q: [{step} for k in range({n})])({p}, {q})"
        if op.startswith("tl.atomic_"):
            kind = op[len("tl.atomic_") :]
            v = args[1]
            ptr = self.expr(args[0])
            val = self.expr(v)
            comb = {"add": "{old} + {v}", "max": "_max({old}, {v})", "min": "_min({old}, {v})"}[kind]
            r = self.const(_round(str(v.dtype.element_of())))
            return f"(lambda p, v: _atomic(p, lambda old: {r}({comb.format(old='old', v='v')})))({ptr}, {val})"
        if op == ALL_REDUCE_OP:
            op_class, threads, scale, barrier = all_reduce_fields(e)
            if barrier != BLOCK_BARRIER:
                raise SimError(f"cannot simulate a reduction over a thread range of its own: {barrier}")
            # a group beyond one warp / wave exchanges partials through scratch (the 8th argument)
            return f"(yield ('red', {_REDUCE[op_class]!r}, {threads}, {scale}, {self.expr(args[6])}, {len(args) > 7}))"
        if op == "tl.print":
            return f"print({', '.join(self.expr(a) for a in args)})"
        if op == "tl.call":
            fn = args[0].value
            xs = [self.expr(a) for a in args[1:]]
            m = re.match(r"tl::(cp_async_zfill|copy_vec_pred|copy_vec)<(\d+)>", fn)
            if m:
                dst_ld = args[1].args[0]
                dt = dst_ld.buffer.dtype
                n = int(m.group(2)) * 8 // dt.bits if dt.bits < 8 else int(m.group(2)) // dt.bytes
                pred = xs[2] if len(xs) > 2 else "True"
                return f"_copy({xs[0]}, {xs[1]}, {n}, {pred})"
            m = re.match(r"tl::cvt_pair<(.*)>", fn)
            if m:
                d = args[1].args[0].buffer.dtype
                r = self.const(_round(str(d.element_of())))
                return f"(lambda p, a, b: (p[0].__setitem__(p[1], {r}(a)), p[0].__setitem__(p[1] + 1, {r}(b))))({xs[0]}, {xs[1]}, {xs[2]})"
            if fn == "tl::device_assert_fail":
                return f"(_ for _ in ()).throw(SimError('device_assert: ' + {xs[0]}))"
            m = re.match(r"tl::shfl_lane<(\d)>", fn)
            if m:  # a warp collective: a rendezvous of the block's threads (mask: every lane)
                return f"(yield ('shfl', {int(m.group(1))}, {xs[0]}, {xs[1]}, {xs[2]}))"
            raise SimError(f"cannot simulate device function {fn}")
        if op.startswith("tl.philox_"):  # T.rng_*: the pure-Python Philox reference
            return f"_philox({op[len('tl.philox_') :]!r}, {', '.join(self.expr(a) for a in args)})"
        if op in MATH:
            return f"_m_{op}({', '.join(self.expr(a) for a in args)})"
        if op in ("infinity", "inf"):
            return "math.inf"
        if op == "isnan":
            return f"({self.expr(args[0])} != {self.expr(args[0])})"
        if op == "if_then_else":
            return f"({self.expr(args[1])} if {self.expr(args[0])} else {self.expr(args[2])})"
        raise SimError(f"cannot simulate intrinsic {op}")
