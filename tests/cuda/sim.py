"""A CPU simulator of the CUDA backend's lowered (per-thread) IR, for tests without a GPU.

It executes exactly what the CUDA code generator consumes (the output of
`tilelang.backend.cuda.pipeline.lower`): every thread of a block is a Python
generator compiled from the per-thread IR; `__syncthreads()` and the
collective device functions of our header library are rendezvous points where
all threads of the block must arrive together:

* `tl::wgmma_gemm_ss` / `_rs` (sm_90a) likewise, with the wgmma register tables;
* `tl::gemm_ss` / `tl::gemm_rs` compute C += op(A) · op(B) from the shared tiles
  (addressed with a Python port of `tl::SmemLayout`) and scatter the product
  into the threads' accumulator registers with the register convention stated
  in gemm.h (warp grid, m16n8 atoms row-major, c0..c3) — restated here from
  the PTX fragment tables, independently of `tilelang.layout`;
* `tl::AllReduce<Op, kThreads, kScale>` combines the values of the threads of
  each group {t : t % kScale, t / (kThreads·kScale) equal};
* `tl::cp_async_zfill`, `tl::copy_vec(_pred)`: element copies (landing at once).

Registers start as `None` (reading one before writing it raises), shared
memory as NaN-free `None` too, so uninitialised reads are caught. Values are
rounded to a buffer's dtype when stored. Threads diverging at a barrier or a
collective is an error, and so is a barrier that the threads reach at different
`__syncthreads()` statements (each one is numbered).

Shared memory is race-checked (`SharedMem`): the threads of a block run one
after another between two barriers, which would hide a missing barrier, so every
word remembers which thread last wrote it and which threads read it since the
last block barrier (its *epoch*). A thread reading a word another thread wrote
in the same epoch, or writing a word another thread read or wrote in it, is a
`RaceError`. A tensor-core gemm reads its tiles on behalf of the whole block:
any word of them written in the current epoch is a race. Atomics do not race
with each other, and a store of the value a word already holds from a store of
this epoch is no race (every thread storing the same element: nothing changes). Warp collectives (`AllReduce`) do not end an epoch.
"""

from __future__ import annotations

import math
import re
import struct
from typing import Any

import torch

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


class SimError(AssertionError):
    pass


class RaceError(SimError):
    """Two threads of a block touch one shared word between two barriers (one of them writing)."""


class _Clock:
    """The running thread (`BLOCK` while a collective runs for the whole block) and the epoch."""

    BLOCK = -1
    thread = 0
    epoch = 0


class SharedMem:
    """One shared buffer of one block, with the per-word state of the race check."""

    __slots__ = ("name", "data", "wt", "we", "rt", "re")

    def __init__(self, name: str, n: int) -> None:
        self.name = name
        self.data = [None] * n
        self.wt = [0] * n  # last writer
        self.we = [-1] * n  # epoch of the last write
        self.rt = [0] * n  # reader since `re` (BLOCK: several)
        self.re = [-1] * n  # epoch of the reads

    def __len__(self) -> int:
        return len(self.data)

    def _race(self, what: str, i: int, other: int) -> None:
        t = _Clock.thread
        who = "the block" if t == _Clock.BLOCK else f"thread {t}"
        by = "several threads" if other == _Clock.BLOCK or isinstance(other, frozenset) else f"thread {other}"
        raise RaceError(
            f"shared `{self.name}`[{i}]: {who} {what} {by} since the last barrier (epoch {_Clock.epoch}): "
            "a barrier is missing"
        )

    def _wrote(self, i: int, t: int) -> bool:
        w = self.wt[i]
        return w == t or (isinstance(w, frozenset) and t in w)

    def __getitem__(self, i: int):
        t, ep = _Clock.thread, _Clock.epoch
        if self.we[i] == ep and (t == _Clock.BLOCK or not self._wrote(i, t)):
            self._race("reads a word written by", i, self.wt[i])
        if self.re[i] != ep:
            self.re[i], self.rt[i] = ep, t
        elif self.rt[i] != t:
            self.rt[i] = _Clock.BLOCK
        return self.data[i]

    def __setitem__(self, i: int, v) -> None:
        t, ep = _Clock.thread, _Clock.epoch
        if self.we[i] == ep and t != _Clock.BLOCK and v is not None and v == self.data[i]:
            # a store of the value the word already holds this epoch (every thread stores the
            # same element): it changes nothing another thread can observe
            w = self.wt[i]
            self.wt[i] = (w if isinstance(w, frozenset) else frozenset((w,))) | {t}
            return
        if self.we[i] == ep and (t == _Clock.BLOCK or not self._wrote(i, t) or isinstance(self.wt[i], frozenset)):
            self._race("overwrites a word written by", i, self.wt[i])
        if self.re[i] == ep and (t == _Clock.BLOCK or self.rt[i] != t):
            self._race("overwrites a word read by", i, self.rt[i])
        self.data[i] = v
        self.wt[i], self.we[i] = t, ep

    def atomic(self, i: int, fn) -> None:
        """`data[i] = fn(data[i])` as one atomic operation: ordered against plain accesses only."""
        t, ep = _Clock.thread, _Clock.epoch
        if self.re[i] == ep and self.rt[i] != t and self.we[i] != ep:
            self._race("atomically updates a word read by", i, self.rt[i])
        self.data[i] = fn(self.data[i])
        self.wt[i], self.we[i] = _Clock.BLOCK, ep  # an atomic result: any later plain access of another thread races


def _atomic_update(p, fn) -> None:
    lst, i = p
    if isinstance(lst, SharedMem):
        lst.atomic(i, fn)
    else:
        lst[i] = fn(lst[i])


# ----------------------------------------------------------------------------
# Value helpers used by the generated Python
# ----------------------------------------------------------------------------


def _round(dt: str):
    if dt in ("float32", "tfloat32"):
        pk = struct.Struct("<f")

        def r(x):
            if x is None:
                return None
            try:
                return pk.unpack(pk.pack(x))[0]
            except OverflowError:
                return math.copysign(math.inf, x)

        return r
    if dt == "float64":
        return lambda x: None if x is None else float(x)
    if dt in ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn"):
        return lambda x: None if x is None else round_to(float(x), dt)
    if dt == "bool":
        return lambda x: None if x is None else bool(x)
    m = re.match(r"(u?)int(\d+)", dt)
    if m:
        bits = int(m.group(2))
        signed = not m.group(1)

        def ri(x):
            if x is None:
                return None
            v = int(x) & ((1 << bits) - 1)
            if signed and v >= 1 << (bits - 1):
                v -= 1 << bits
            return v

        return ri
    raise SimError(f"no rounding for {dt}")


def _tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _tmod(a, b):
    return a - _tdiv(a, b) * b


def _max(a, b):
    if a != a:
        return b
    if b != b:
        return a
    return a if a >= b else b


def _min(a, b):
    if a != a:
        return b
    if b != b:
        return a
    return a if a <= b else b


def _fdiv(a, b):
    if b == 0:
        if a == 0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _exp2(x):
    try:
        return 2.0**x
    except OverflowError:
        return math.inf


def _exp(x):
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _to_int(x):
    if isinstance(x, float):
        if x != x:
            return 0
        return int(x)
    return int(x)


MATH = {
    "exp2": _exp2,
    "exp": _exp,
    "log": math.log,
    "log2": math.log2,
    "log10": math.log10,
    "sqrt": math.sqrt,
    "rsqrt": lambda x: 1.0 / math.sqrt(x),
    "tanh": math.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + _exp(-x)),
    "sin": math.sin,
    "cos": math.cos,
    "erf": math.erf,
    "floor": math.floor,
    "ceil": math.ceil,
    "trunc": math.trunc,
    "round": round,
    "abs": abs,
    "pow": math.pow,
}


def _philox(kind: str, seed: int, seq: int, pos: int):
    import os
    import sys

    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from conformance.philox_ref import draw

    return draw(kind, int(seed), int(seq), int(pos))


def _copy(dst, src, n, pred=True):
    dl, di = dst
    sl, si = src
    for k in range(n):
        dl[di + k] = sl[si + k] if pred else 0


# ----------------------------------------------------------------------------
# Compiling per-thread IR to a Python generator
# ----------------------------------------------------------------------------

_PY_BIN = {"add": "+", "sub": "-", "mul": "*", "bitand": "&", "bitor": "|", "bitxor": "^", "shl": "<<", "shr": ">>"}
_PY_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_REDUCE = {"tl::SumOp": "sum", "tl::MaxOp": "max", "tl::MinOp": "min", "tl::BitAndOp": "and", "tl::BitOrOp": "or",
           "tl::BitXorOp": "xor"}  # fmt: skip


class _Compiler:
    def __init__(self, func) -> None:
        self.func = func
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
        v = s.value
        if isinstance(v, Call) and v.op == "tl.call" and v.args[0].value.startswith(GEMM_FNS):
            fn = v.args[0].value
            ptrs = ", ".join(self.expr(a) for a in v.args[1:])
            # packed 4-bit operand tiles: the template counts K and the layouts in bytes
            a0 = v.args[1]
            packed = isinstance(a0, Call) and a0.op == "address_of" and a0.args[0].buffer.dtype.bits < 8
            self.emit(f"yield ('gemm', {fn!r}, ({ptrs},), {packed})")
            return
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
        if op in ("tl.cp_async_commit", "tl.cp_async_wait"):
            return "None"
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
            return f"(yield ('red', {_REDUCE[op_class]!r}, {threads}, {scale}, {self.expr(args[6])}))"
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
            if fn == "tl::fence_proxy_async":  # memory lands at once here: ordering is a no-op
                return "None"
            if fn.startswith("tl::warpgroup_fence_operands<"):  # a compiler-only register fence
                return "None"
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


# ----------------------------------------------------------------------------
# Collective device functions
# ----------------------------------------------------------------------------


def smem_offset(rows: int, cols: int, e: int, s: int, row: int, col: int) -> int:
    """Python port of tl::SmemLayout<rows, cols, e, s>::offset."""
    if s == 0:
        return row * cols + col
    byte = col * e
    panel, inner = byte // s, byte % s
    a = panel * (rows * s) + row * s + inner
    a ^= ((a >> 7) & (s // 16 - 1)) << 4
    return a // e


def _parse_gemm(fn: str) -> tuple:
    inner = fn[fn.index("<") + 1 : fn.rindex(">")]
    layouts = re.findall(r"tl::SmemLayout<(\d+), (\d+), (\d+), (\d+)>", inner)
    head = re.sub(r"tl::SmemLayout<[^>]*>", "", inner)
    nums = [x.strip() for x in head.split(",") if x.strip()]
    return nums, [tuple(int(v) for v in lay) for lay in layouts]


def _tile(ptr, lay, rows, cols, trans, packed=False):
    lst, base = ptr
    R, C, E, S = lay
    out = torch.zeros(rows, cols, dtype=torch.float64)
    for i in range(rows):
        for j in range(cols):
            r, c = (j, i) if trans else (i, j)
            if packed:  # element (r, c) is nibble c % 2 of byte (r, c // 2) of the byte layout
                v = lst[base + 2 * smem_offset(R, C, E, S, r, c // 2) + c % 2]
            else:
                v = lst[base + smem_offset(R, C, E, S, r, c)]
            if v is None:
                raise SimError("gemm reads uninitialised shared memory")
            out[i, j] = v
    return out


GEMM_FNS = ("tl::gemm_ss", "tl::gemm_rs", "tl::wgmma_gemm_ss", "tl::wgmma_gemm_rs")


def wgmma_gemm(fn: str, per_thread: list, threads: int) -> None:
    """tl::wgmma_gemm_ss / _rs (gemm_sm90.h): warpgroup g = (t - base) / 128 at
    (g % WG_M, g / WG_M); C registers of a warpgroup tile: m64n8 atoms row-major, each in
    the PTX wgmma d order (row 16 w + l/4 + 8 ((i/2) % 2), col 2 (l % 4) + i % 2); RS A:
    k-step s of row atom mi = the 8 halves at 4 (mi K/8 + 2 s), in the mma m16n8k16 A order."""
    nums, lays = _parse_gemm(fn)
    rs = fn.startswith("tl::wgmma_gemm_rs")
    M, N, K, GM, GN = (int(x) for x in nums[:5])
    if rs:
        TA, TB, clear, base = False, nums[6] == "true", nums[7] == "true", int(nums[9])
        (blay,) = lays
    else:
        TA, TB, clear, base = nums[6] == "true", nums[7] == "true", nums[8] == "true", int(nums[10])
        alay, blay = lays
    tm, tn = M // GM, N // GN
    a_ptr, b_ptr, _ = per_thread[base]
    B = _tile(b_ptr, blay, K, N, TB)
    if rs:
        A = torch.zeros(M, K, dtype=torch.float64)
        for t in range(base, base + 128 * GM):
            g, w, lane = (t - base) // 128, ((t - base) % 128) // 32, t % 32
            regs, rbase = per_thread[t][0]
            for mi in range(tm // 64):
                for s_ in range(K // 16):
                    for r in range(8):
                        row = g * tm + 64 * mi + 16 * w + lane // 4 + 8 * ((r // 2) % 2)
                        col = 16 * s_ + 2 * (lane % 4) + r % 2 + 8 * (r // 4)
                        v = regs[rbase + 4 * (mi * K // 8 + 2 * s_) + r]
                        if v is None:
                            raise SimError("wgmma_gemm_rs reads an unwritten A register")
                        A[row, col] = v
    else:
        A = _tile(a_ptr, alay, M, K, TA)
    P = A @ B
    for t in range(base, base + 128 * GM * GN):
        g, w, lane = (t - base) // 128, ((t - base) % 128) // 32, t % 32
        regs, cbase = per_thread[t][2]
        for mi in range(tm // 64):
            for n8 in range(tn // 8):
                for r in range(4):
                    row = (g % GM) * tm + 64 * mi + 16 * w + lane // 4 + 8 * (r // 2)
                    col = (g // GM) * tn + 8 * n8 + 2 * (lane % 4) + r % 2
                    k = cbase + (mi * (tn // 8) + n8) * 4 + r
                    if clear:
                        regs[k] = float(P[row, col])
                    elif regs[k] is None:
                        raise SimError("wgmma accumulates into an unwritten register")
                    else:
                        regs[k] = regs[k] + float(P[row, col])


def gemm(fn: str, per_thread: list, threads: int, packed: bool = False) -> None:
    if fn.startswith("tl::wgmma_gemm"):
        return wgmma_gemm(fn, per_thread, threads)
    nums, lays = _parse_gemm(fn)
    rs = fn.startswith("tl::gemm_rs")
    M, N, K, WM, WN = (int(x) for x in nums[:5])
    if packed:
        K *= 2  # the template's K counts bytes of two 4-bit elements
    if rs:
        TB = nums[5] == "true"
        (blay,) = lays
        TA = False
    else:
        TA, TB = nums[5] == "true", nums[6] == "true"
        alay, blay = lays
    a_ptr, b_ptr, _ = per_thread[0]
    B = _tile(b_ptr, blay, K, N, TB, packed)
    if rs:
        A = torch.zeros(M, K, dtype=torch.float64)
        for t in range(WM * 32):  # warps with wn = 0 hold every row band
            w, lane = t // 32, t % 32
            g, q = lane // 4, lane % 4
            regs, rbase = per_thread[t][0]
            mt, kt = (M // WM) // 16, K // 16
            for mi in range(mt):
                for ki in range(kt):
                    for r in range(8):
                        row = (w % WM) * (M // WM) + mi * 16 + g + 8 * ((r // 2) % 2)
                        col = ki * 16 + 2 * q + r % 2 + 8 * (r // 4)
                        v = regs[rbase + (mi * kt + ki) * 8 + r]
                        if v is None:
                            raise SimError("gemm_rs reads an unwritten A register")
                        A[row, col] = v
    else:
        A = _tile(a_ptr, alay, M, K, TA, packed)
    P = A @ B
    wm_t, wn_t = M // WM, N // WN
    nt = wn_t // 8
    for t in range(threads):
        w, lane = t // 32, t % 32
        if w >= WM * WN:
            continue
        g, q = lane // 4, lane % 4
        regs, cbase = per_thread[t][2]
        for mi in range(wm_t // 16):
            for ni in range(nt):
                for r in range(4):
                    row = (w % WM) * wm_t + mi * 16 + g + 8 * (r // 2)
                    col = (w // WM) * wn_t + ni * 8 + 2 * q + r % 2
                    k = cbase + (mi * nt + ni) * 4 + r
                    if regs[k] is None:
                        raise SimError("gemm accumulates into an unwritten register")
                    regs[k] = regs[k] + float(P[row, col])


def all_reduce(kind: str, k_threads: int, k_scale: int, values: list) -> list:
    groups: dict = {}
    for t, v in enumerate(values):
        groups.setdefault((t % k_scale, t // (k_threads * k_scale)), []).append(v)
    comb = {"sum": lambda a, b: a + b, "max": _max, "min": _min, "and": lambda a, b: a & b,
            "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}[kind]  # fmt: skip
    res = {}
    for key, vs in groups.items():
        if any(v is None for v in vs):
            raise SimError("AllReduce of an unwritten value")
        acc = vs[0]
        for v in vs[1:]:
            acc = comb(acc, v)
        res[key] = acc
    return [res[(t % k_scale, t // (k_threads * k_scale))] for t in range(len(values))]


def shuffle(events: list) -> list:
    """tl::shfl_lane<kind>(v, lane, width) of every thread (CUDA's __shfl_*_sync: the source lane
    is computed within groups of `width` lanes of the thread's warp; out of range: its own)."""
    out = []
    for t, (_, kind, _, lane, width) in enumerate(events):
        pos, start = t % 32 % width, t - t % 32 % width
        if kind == 0:
            src = start + (pos ^ lane) if (pos ^ lane) < width else t
        elif kind == 1:
            src = t + lane if pos + lane < width else t
        elif kind == 2:
            src = t - lane if pos - lane >= 0 else t
        else:
            src = start + lane % width
        if src >= len(events) or events[src][2] is None:
            raise SimError(f"thread {t} shuffles from lane {src}, which has no value")
        out.append(events[src][2])
    return out


# ----------------------------------------------------------------------------
# Running a kernel
# ----------------------------------------------------------------------------


def _eval_int(e: Any, env: dict) -> int:
    from tilelang.jit.adapter import eval_int

    return eval_int(e, env)


def run(lowered, args: list, max_blocks: int | None = None) -> None:
    """Run the lowered kernel on CPU torch tensors `args` (all parameters, in order)."""
    kernels = [s for s in _walk(lowered.body) if isinstance(s, KernelLaunch)]
    (kernel,) = kernels
    params = list(lowered.params)
    dyn = lowered.dynamic_vars()
    env: dict = {}
    for p, a in zip(params, args):
        if isinstance(p, Buffer):
            for d, n in zip(p.shape, a.shape):
                if isinstance(d, Var):
                    env[d] = int(n)
        else:
            env[p] = a
    comp = _Compiler(lowered)
    thread_fn, src = comp.compile(kernel, params, dyn)
    mem = []
    for p, a in zip(params, args):
        if isinstance(p, Buffer):
            mem.append(a.detach().reshape(-1).to(torch.float64 if a.dtype.is_floating_point else torch.int64).tolist())
        else:
            mem.append(a)
    dyn_vals = [env[v] for v in dyn]
    grid = [_eval_int(g, env) for g in kernel.grid]
    T = kernel.num_threads
    blocks = [(x, y, z) for z in range(grid[2] if len(grid) > 2 else 1) for y in range(grid[1] if len(grid) > 1 else 1)
              for x in range(grid[0])]  # fmt: skip
    if max_blocks is not None:
        blocks = blocks[:max_blocks]
    for blk in blocks:
        smem: dict = {}
        bv = list(blk[: len(kernel.block_vars)])
        gens = [thread_fn(t, blk, smem, *mem, *dyn_vals, *bv) for t in range(T)]
        _run_block(gens, T, src)
    for p, a, m in zip(params, args, mem):
        if isinstance(p, Buffer):
            vals = [0 if v is None else v for v in m]
            a.copy_(torch.tensor(vals, dtype=torch.float64).reshape(a.shape).to(a.dtype))


def _run_block(gens: list, T: int, src: str) -> None:
    sends: list = [None] * T
    _Clock.epoch += 1  # a fresh block: nothing of another block's shared memory is visible
    while True:
        events = []
        done = 0
        for t, g in enumerate(gens):
            _Clock.thread = t
            try:
                ev = g.send(sends[t])
            except StopIteration:
                ev = None
                done += 1
            events.append(ev)
        if done == T:
            return
        if done:
            waiting = next(e for e in events if e is not None)
            raise SimError(f"{done} of {T} threads finished while others wait at {waiting[0]}")
        kinds = {e[0] for e in events}
        if len(kinds) != 1:
            raise SimError(f"threads diverge at a rendezvous: {sorted(kinds)}")
        kind = events[0][0]
        if kind == "sync":
            sites = sorted({e[1] for e in events})
            if len(sites) != 1:
                raise SimError(f"threads wait at different barriers (__syncthreads() statements {sites})")
            _Clock.epoch += 1
            sends = [None] * T
        elif kind == "red":
            _, op, kt, ks, _ = events[0]
            sends = all_reduce(op, kt, ks, [e[4] for e in events])
        elif kind == "shfl":
            sends = shuffle(events)
        elif kind == "gemm":
            _Clock.thread = _Clock.BLOCK
            gemm(events[0][1], [e[2] for e in events], T, events[0][3])
            sends = [None] * T
        else:
            raise SimError(f"unknown rendezvous {kind}")


def _walk(s: Any) -> list:
    if isinstance(s, SeqStmt):
        out = []
        for x in s.stmts:
            out.extend(_walk(x))
        return out
    return [s]


def simulate(func, args: list, arch: str = "sm_80", max_blocks: int | None = None, pass_configs: dict | None = None):
    """Lower `func` for CUDA and run it on CPU tensors; returns the lowered PrimFunc."""
    from tilelang.backend.cuda.pipeline import lower
    from tilelang.backend.target import parse

    lowered = lower(func, {"target": parse({"kind": "cuda", "arch": arch}), "pass_configs": pass_configs or {}})
    run(lowered, args, max_blocks)
    return lowered
