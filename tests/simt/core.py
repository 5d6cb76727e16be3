"""The core of the SIMT simulator shared by the CUDA and HIP tests: memory, values, the target table.

The simulator (`compiler.py`, `wave.py`) executes a backend's lowered (per-thread) IR on the CPU:
every thread of a block is a Python generator compiled from the per-thread IR; barriers and the
collective device functions (gemms, reductions, shuffles, MFMA) are rendezvous points where all
threads of the block arrive together. What differs between targets — the width of a warp (32) or
wave (64) and the target's own intrinsics — is a `Dialect` (`cuda.py`, `hip.py`).

Registers start as `None` (reading one before writing it raises), shared memory as `None` too,
so uninitialised reads are caught. Values are rounded to a buffer's dtype when stored. Threads
diverging at a barrier or a collective is an error, and so is a barrier that the threads reach at
different barrier statements (each one is numbered).

Shared memory is race-checked (`SharedMem`): the threads of a block run one after another between
two barriers, which would hide a missing barrier, so every word remembers which thread last wrote
it and which threads read it since the last block barrier (its *epoch*). A thread reading a word
another thread wrote in the same epoch, or writing a word another thread read or wrote in it, is a
`RaceError`. A tensor-core gemm reads its tiles on behalf of the whole block: any word of them
written in the current epoch is a race. Atomics do not race with each other, and a store of the
value a word already holds from a store of this epoch is no race (every thread storing the same
element: nothing changes). Warp / wave collectives do not end an epoch.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tilelang.backend.c.floatfmt import round_to


class SimError(AssertionError):
    """The simulated program does something a GPU would not do reliably (or the simulator cannot model)."""


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
# Targets
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Dialect:
    """What one target adds to the shared simulator.

    `wave_size`: lanes of a warp (CUDA 32) or wave (AMD 64), the unit of shuffles and wave ops.
    `call(compiler, call)`: Python for a target intrinsic call, or None when it is not one.
    `evaluate(compiler, stmt)`: emits a target statement form and returns True, else False.
    `rendezvous`: kind -> handler(events, threads) -> the value each thread's `yield` returns,
    for the collectives the hooks above yield."""

    name: str
    wave_size: int
    call: Callable[[Any, Any], str | None] = lambda compiler, call: None
    evaluate: Callable[[Any, Any], bool] = lambda compiler, stmt: False
    rendezvous: dict = field(default_factory=dict)
