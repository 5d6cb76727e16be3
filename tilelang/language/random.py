"""`T.rng_init`, `T.rng_rand`, `T.rng_rand_float`: in-kernel random numbers from Philox4x32-10.

The public API's names and arguments (upstream lowers them to cuRAND); the generator here
is our own counter-based Philox4x32-10 (tilelang/backend/c/include/tl_philox.h and
tilelang/backend/cuda/include/tl/philox.h), so every target gives the same numbers for the
same program.

The stream (identical on the C backend and on CUDA):

* `T.rng_init(seed, seq=None, off=0)` starts the block's generator: key = `seed` (64 bits),
  subsequence = `seq`, position = `off`. Draw number `p` of subsequence `s` is word `p & 3`
  of Philox4x32-10(counter = (p >> 2, s) as four 32-bit words low first, key) — the layout of
  cuRAND's `curandStatePhilox4_32_10_t` after `curand_init(seed, seq, off)`, and of Triton's
  `tl.randint(seed, offset)` for `seq = 0`. `seq=None` means the block's linear index
  (`bx` fastest) times the block's thread count — upstream's default for thread 0.
* The generator belongs to the block program (the tile-level model), not to a CUDA thread:
  each draw takes the next position(s). `T.rng_rand()` takes one (a uint32);
  `T.rng_rand_float()` one (float32 uniform in (0, 1]: x·2⁻³² + 2⁻³³, as `curand_uniform`);
  `bit=64` two (53 bits: (x ^ (y << 21))·2⁻⁵³ + 2⁻⁵⁴); `dist="normal"` two (float32) or four
  (float64): Box–Muller on two uniforms, the cosine branch, computed in double precision with
  only correctly rounded operations. A draw whose value is never used still takes its
  positions (`T.rng_rand()` as a statement skips ahead).
* Outside `T.Parallel`, draws happen in program order (a serial loop draws again each trip;
  a draw in a branch only when it runs).
* In a `T.Parallel` nest (or a loop bound to threads) whose body makes `c` draws (counted statically over the whole
  body, both branches of an `if` included), iteration `it` (row-major over the nest) draws
  positions `base + it·c + k`, `k` the draw's place in the body; afterwards the block's
  position is `base + iterations·c`. This is what one thread drawing the iterations in order
  gives (upstream with `threads=1`), but it does not depend on how the compiler spreads the
  iterations over threads, so the CPU backend reproduces GPU results exactly.

Only the Philox generator exists here: the cuRAND names `curandStateXORWOW_t` and
`curandStateMRG32k3a_t` are an `unsupported` error.
"""

from __future__ import annotations

import itertools
from typing import Any

from ..errors import DSLError, UnsupportedError
from ..frontend.builder import Builder
from ..ir.dtype import DataType
from ..ir.expr import Call, IntImm, PrimExpr, StringImm, as_expr, binary, cast
from ..ir.stmt import Evaluate

PHILOX = ("curandStatePhilox4_32_10_t", "philox", "Philox4x32-10")
_OTHER_GENERATORS = ("curandStateXORWOW_t", "curandStateMRG32k3a_t")
_ids = itertools.count(1)
_U64 = DataType("uint64")


def _kernel_builder(what: str) -> Builder:
    b = Builder.require(what)
    b.require_kernel(what)
    return b


def _u64(value: Any, what: str, b: Builder) -> PrimExpr:
    e = as_expr(value)
    if not (e.dtype.is_int or e.dtype.is_uint or e.dtype.is_bool) or e.dtype.lanes != 1:
        raise DSLError(f"T.rng_init: `{what}` must be an integer scalar, got {e.dtype}", b.span_here())
    if isinstance(e, IntImm) and not 0 <= e.value < 1 << 64:
        e = IntImm(e.value % (1 << 64), _U64)  # a negative seed wraps, as the C conversion does
    return cast(e, _U64)


def _default_seq(b: Builder) -> PrimExpr:
    k = next(f.data for f in reversed(b.frames) if f.kind == "kernel")
    linear: Any = IntImm(0)
    for g, v in reversed(list(zip(k.blocks, k.vars))):
        linear = binary("add", binary("mul", linear, g), v)
    threads = k.threads[0] * k.threads[1] * k.threads[2]
    return binary("mul", cast(linear, _U64), IntImm(threads, _U64))


def rng_init(seed: Any, seq: Any = None, off: Any = 0, generator: str = "curandStatePhilox4_32_10_t") -> None:
    """Start the block's Philox4x32-10 stream at (`seed`, subsequence `seq`, position `off`)."""
    b = _kernel_builder("T.rng_init")
    if generator in _OTHER_GENERATORS:
        raise UnsupportedError(
            f"T.rng_init: generator {generator!r} is not implemented here",
            b.span_here(),
            "use the default generator, curandStatePhilox4_32_10_t (Philox4x32-10, identical on every target)",
        )
    if generator not in PHILOX:
        raise DSLError(f"T.rng_init: unknown generator {generator!r}", b.span_here(), f"use {PHILOX[0]!r}")
    s = _u64(seed, "seed", b)
    q = _default_seq(b) if seq is None else _u64(seq, "seq", b)
    o = _u64(off, "off", b)
    b.emit(Evaluate(Call("tl.rng_init", (s, q, o), _U64)))


def _draw(kind: str, dtype: str, what: str) -> PrimExpr:
    b = _kernel_builder(what)
    uid = IntImm(next(_ids))
    dt = DataType(dtype)
    b.emit(Evaluate(Call("tl.rng_draw", (uid, StringImm(kind)), dt)))
    return Call("tl.rng_value", (uid,), dt)


def rng_rand() -> PrimExpr:
    """The next uint32 of the block's stream (see the module docstring)."""
    return _draw("u32", "uint32", "T.rng_rand")


def rng_rand_float(bit: int = 32, dist: str = "uniform") -> PrimExpr:
    """The next float of the block's stream: `bit` 32 or 64, `dist` "uniform" ((0, 1]) or "normal"."""
    if bit not in (32, 64):
        raise DSLError(f"T.rng_rand_float: bit must be 32 or 64, got {bit!r}", None)
    if dist not in ("uniform", "normal"):
        raise DSLError(f"T.rng_rand_float: dist must be 'uniform' or 'normal', got {dist!r}", None)
    return _draw(f"{dist}_f{bit}", f"float{bit}", "T.rng_rand_float")


__all__ = ["rng_init", "rng_rand", "rng_rand_float"]
