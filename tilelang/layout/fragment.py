"""`Fragment`: how a tile held in registers is spread over a block's threads.

A fragment maps each logical element to `(thread, local)`:

- `thread` is an expression over the element vars and, when `replicate > 1`,
  a replicate var `rep` in `[0, replicate)`: element `e` is held by the
  `replicate` threads `thread(e, 0..replicate-1)`;
- `local` (the inherited `forward_index`) is the element's index in the
  per-thread register array of shape `output_shape`; it never depends on
  `rep`, so every copy sits in the same register slot of its thread.

Conventions: `thread` is the linear thread index in the block (`threadIdx.x`);
warp = thread // 32, lane = thread % 32. A fragment is valid when the map
(element, rep) -> (thread, local) is a bijection onto
`[0, get_thread_size()) × [0, locals_per_thread())`: every register slot of
every thread holds exactly one element, and every element has `replicate`
copies in distinct threads. `check_bijective()` proves it by enumeration.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..errors import LayoutError
from ..ir.expr import IntImm, PrimExpr, Var, as_expr, binary, structural_equal
from ._expr import compile_map, compile_table, simplify, substitute
from .layout import (
    ENUM_LIMIT,
    Layout,
    _fmt_shape,
    _shapes_equal,
    as_index_tuple,
    default_var_names,
    normalize_shape,
    prod,
    row_major_strides,
)


def _arity(fn: Callable) -> int | None:
    """Number of positional parameters `fn` accepts (None: any number)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def _call_with_rep(fn: Callable, fvars: tuple, rep: Var, replicate: int, what: str) -> Any:
    n = _arity(fn)
    if n is None or n == len(fvars) + 1:
        return fn(*fvars, rep)
    if n == len(fvars):
        if replicate > 1:
            raise TypeError(
                f"{what} takes {n} arguments but the fragment has replicate={replicate}: "
                f"add a last parameter for the replicate var (in [0, {replicate}))"
            )
        return fn(*fvars)
    raise TypeError(
        f"{what} must take {len(fvars)} arguments (one per dimension){' plus rep' if replicate > 1 else ''}"
    )


class Fragment(Layout):
    """Element -> (thread, local register index), with replication.

    Either `forward_fn(*vars[, rep]) -> (thread, local_index(es))`, or
    `forward_thread_fn(*vars[, rep])` together with `forward_index_fn(*vars)`.
    """

    def __init__(
        self,
        shape: Any,
        forward_fn: Callable | None = None,
        forward_thread_fn: Callable | None = None,
        replicate: int = 1,
        forward_index_fn: Callable | None = None,
        *,
        meta: dict | None = None,
    ) -> None:
        shape = normalize_shape(shape)
        replicate = int(replicate)
        if replicate < 1:
            raise ValueError(f"replicate must be >= 1, got {replicate}")
        fvars = tuple(Var(n) for n in default_var_names(len(shape)))
        rep = Var("rep")
        if forward_fn is not None:
            res = _call_with_rep(forward_fn, fvars, rep, replicate, "forward_fn")
            if not isinstance(res, (tuple, list)) or len(res) != 2:
                raise TypeError("forward_fn must return (thread, local_index) — local_index may be a list")
            thread, index = res
        elif forward_thread_fn is not None:
            if forward_index_fn is None:
                raise TypeError("Fragment(forward_thread_fn=...) also needs forward_index_fn (the register index)")
            thread = _call_with_rep(forward_thread_fn, fvars, rep, replicate, "forward_thread_fn")
            index = forward_index_fn(*fvars)
        else:
            raise TypeError("Fragment needs forward_fn, or forward_thread_fn and forward_index_fn")
        self._init_fragment(shape, fvars, as_expr(thread), as_index_tuple(index), rep, replicate, meta)

    def _init_fragment(
        self, shape: tuple, fvars: tuple, thread: PrimExpr, index: tuple, rep: Var, replicate: int, meta: dict | None
    ) -> None:
        Layout._init(self, shape, fvars, index, None, meta)
        self._rep = rep
        self._replicate = replicate
        if replicate == 1:
            thread = substitute(thread, {rep: 0})
        self._thread = simplify(thread, {**self._extents, rep: replicate})
        for e in self._index:
            if any(x is rep for x in _vars_in(e)):
                raise ValueError("a fragment's local index must not depend on the replicate var")
        self._tfn: Callable | None = None
        self._ftbl: list | None = None
        self._tsize: int | None = None

    @classmethod
    def from_exprs(  # type: ignore[override]
        cls,
        shape: Any,
        forward_vars: tuple,
        thread: Any,
        forward_index: Any,
        replicate: int = 1,
        rep_var: Var | None = None,
        meta: dict | None = None,
    ) -> Fragment:
        """Build from explicit vars and expressions (`rep_var` used by `thread`)."""
        obj = Fragment.__new__(Fragment)
        rep = rep_var if rep_var is not None else Var("rep")
        obj._init_fragment(
            normalize_shape(shape), tuple(forward_vars), as_expr(thread), as_index_tuple(forward_index), rep,
            int(replicate), meta,
        )  # fmt: skip
        return obj

    def _derive(
        self, shape: tuple, fvars: tuple, index: tuple, subst: dict, output_shape: Any, keep_meta: bool = False
    ) -> Fragment:
        thread = substitute(self._thread, subst)
        meta = self.meta if keep_meta else None
        return Fragment.from_exprs(shape, fvars, thread, index, self._replicate, self._rep, meta)

    # -- accessors -----------------------------------------------------------
    @property
    def thread(self) -> PrimExpr:
        return self._thread

    def get_thread(self) -> PrimExpr:
        return self._thread

    @property
    def replicate_size(self) -> int:
        return self._replicate

    def get_replicate_size(self) -> int:
        return self._replicate

    def get_rep_var(self) -> Var:
        return self._rep

    def get_thread_size(self) -> int:
        """Number of threads the fragment spans: max thread + 1."""
        if self._tsize is None:
            (self._tsize,) = self._tight_extents((self._thread,), {self._rep: self._replicate})
        return self._tsize

    def locals_per_thread(self) -> int:
        """Register slots per thread (elements, not 32-bit registers)."""
        return prod(self.output_shape)

    @property
    def num_warps(self) -> int:
        return -(-self.get_thread_size() // 32)

    # -- evaluation ----------------------------------------------------------
    def _thread_fn(self) -> Callable:
        if self._tfn is None:
            self._tfn = compile_map(self._vars + (self._rep,), (self._thread,))
        return self._tfn

    def map_forward_thread(self, indices: Any, rep: Any = 0) -> Any:
        """Thread holding element `indices` (copy number `rep`): int or expression."""
        idx = tuple(indices)
        if len(idx) != self.ndim:
            raise ValueError(f"fragment takes {self.ndim} indices, got {len(idx)}")
        if all(isinstance(x, int) for x in idx) and isinstance(rep, int):
            return self._thread_fn()(*idx, rep)[0]
        m = dict(zip(self._vars, idx))
        m[self._rep] = rep
        return simplify(substitute(self._thread, m))

    def locate(self, *idx: int, rep: int = 0) -> tuple[int, int]:
        """`(thread, flat local index)` of an element, on ints."""
        t = self._thread_fn()(*idx, rep)[0]
        loc = self._eval_fn()(*idx)
        flat = sum(v * s for v, s in zip(loc, row_major_strides(self.output_shape)))
        return t, flat

    def placements(self) -> list:
        """`(element index, rep, thread, flat local)` for every element copy,
        row-major over elements, rep innermost (cached)."""
        if self._ftbl is None:
            self._require_static("enumerate", limit=True)
            if prod(self._shape) * self._replicate > ENUM_LIMIT:
                raise ValueError(f"fragment {_fmt_shape(self._shape)} × {self._replicate} is too large to enumerate")
            flat = IntImm(0)
            for e, s in zip(self._index, row_major_strides(self.output_shape)):
                flat = binary("add", flat, binary("mul", e, s))
            params = self._vars + (self._rep,)
            rows = compile_table(
                params, self._shape + (self._replicate,), self._vars + (self._rep, self._thread, flat)
            )()
            n = self.ndim
            self._ftbl = [(r[:n], r[n], r[n + 1], r[n + 2]) for r in rows]
        return self._ftbl

    def thread_elements(self, thread: int) -> list:
        """Elements held by `thread`, ordered by local index: [(local, element index)]."""
        return sorted((loc, e) for e, _, t, loc in self.placements() if t == thread)

    # -- validity --------------------------------------------------------------
    def check_bijective(self) -> None:
        """Raise `LayoutError` unless (element, rep) -> (thread, local) is a bijection
        onto threads × registers (every slot filled once, copies in distinct threads)."""
        problem = self.bijectivity_problem()
        if problem is not None:
            raise LayoutError(f"fragment {_fmt_shape(self._shape)} is not a valid thread mapping: {problem}")

    def is_bijective(self) -> bool:
        return self.bijectivity_problem() is None

    def bijectivity_problem(self) -> str | None:
        """A one-line description of the first defect, or None if the fragment is valid."""
        T, L = self.get_thread_size(), self.locals_per_thread()
        rows = self.placements()
        if len(rows) == T * L and len({t * L + loc for _, _, t, loc in rows if t >= 0 and 0 <= loc < L}) == T * L:
            if self._replicate == 1 or all(
                len({r[2] for r in rows[k : k + self._replicate]}) == self._replicate
                for k in range(0, len(rows), self._replicate)
            ):
                return None  # fast path: injective into exactly T × L slots, copies in distinct threads
        seen: dict = {}
        holders: dict = {}
        for e, r, t, loc in self.placements():
            if t < 0 or not 0 <= loc < L:
                return f"element {_fmt_idx(e)} (rep {r}) maps to thread {t} register {loc}, outside {T} × {L}"
            prev = seen.get((t, loc))
            if prev is not None:
                return (
                    f"thread {t} register {loc} holds both {_fmt_idx(prev[0])} (rep {prev[1]}) "
                    f"and {_fmt_idx(e)} (rep {r})"
                )
            seen[(t, loc)] = (e, r)
            hs = holders.setdefault(e, set())
            if t in hs:
                return f"element {_fmt_idx(e)} has two copies in thread {t}; replicas must live in different threads"
            hs.add(t)
        if len(seen) != T * L:
            for t in range(T):
                for loc in range(L):
                    if (t, loc) not in seen:
                        return (
                            f"thread {t} register {loc} holds no element: {T} threads × {L} registers = {T * L} "
                            f"slots but {len(seen)} element copies ({self.numel} elements × {self._replicate})"
                        )
        return None

    # -- transformations ---------------------------------------------------
    def repeat(  # type: ignore[override]
        self, repeats: Any, repeat_on_thread: bool = False, lower_dim_first: bool = True
    ) -> Fragment:
        """Tile the fragment `repeats[d]` times along each dimension d.

        Tiles are numbered row-major over the tile grid (dimension 0 slowest)
        when `lower_dim_first`, column-major otherwise. Tile `b` goes to
        threads `thread + b * get_thread_size()` (`repeat_on_thread`) or to
        registers: the tile number becomes a new leading local dimension."""
        reps = (repeats,) * self.ndim if isinstance(repeats, int) else tuple(int(r) for r in repeats)
        if len(reps) != self.ndim:
            raise ValueError(f"repeat needs one factor per dimension ({self.ndim}), got {list(reps)}")
        self._require_static("repeat")
        shape = tuple(d * r for d, r in zip(self._shape, reps))
        nv = self._fresh_vars(len(shape))
        subst = {v: binary("floormod", w, d) for v, w, d in zip(self._vars, nv, self._shape)}
        order = range(self.ndim) if lower_dim_first else reversed(range(self.ndim))
        block: PrimExpr = IntImm(0)
        for k in order:
            block = binary("add", binary("mul", block, reps[k]), binary("floordiv", nv[k], self._shape[k]))
        thread = substitute(self._thread, subst)
        index = tuple(substitute(e, subst) for e in self._index)
        if repeat_on_thread:
            thread = binary("add", thread, binary("mul", block, self.get_thread_size()))
        else:
            index = (block,) + index
        return Fragment.from_exprs(shape, nv, thread, index, self._replicate, self._rep)

    def replicate(self, n: int) -> Fragment:
        """`n` more copies of every element, in threads `thread + k * get_thread_size()`."""
        T, R = self.get_thread_size(), self._replicate
        rep = Var("rep")
        inner = binary("floormod", rep, R) if R > 1 else IntImm(0)
        thread = binary(
            "add", substitute(self._thread, {self._rep: inner}), binary("mul", binary("floordiv", rep, R), T)
        )
        return Fragment.from_exprs(self._shape, self._vars, thread, self._index, R * int(n), rep)

    def condense_rep_var(self) -> Fragment:
        """Turn the replicate var into a trailing element dimension (replicate 1)."""
        nv = self._fresh_vars(self.ndim + 1)
        subst = dict(zip(self._vars + (self._rep,), nv))
        thread = substitute(self._thread, subst)
        index = tuple(substitute(e, subst) for e in self._index)
        return Fragment.from_exprs(self._shape + (self._replicate,), nv, thread, index, 1, None)

    def reduce_dims(self, dims: Any, keepdims: bool = False) -> Fragment:
        """The fragment of a reduction over `dims` (e.g. a row max of an accumulator).

        Result element e is held by every thread that held some element
        reduced into it: the digits of `thread` that came from the reduced
        dims (and from `rep`) become the new replicate var, so the result is
        replicated over exactly those threads, and each thread keeps one
        register per distinct kept-index digit (registers compacted in their
        original order). Needs digit-form maps (sums of `(v // s) % e`), which
        every mma/wgmma/blocked fragment is."""
        from ._expr import field_expr, normalize, parse_digits

        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        dims = tuple(d % self.ndim for d in dims)
        self._require_static("reduce")
        drop = {self._vars[d] for d in dims} | {self._rep}
        ext = {**self._extents, self._rep: self._replicate}
        flat: PrimExpr = IntImm(0)
        for e, st in zip(self._index, row_major_strides(self.output_shape)):
            flat = binary("add", flat, binary("mul", e, st))
        tdg, ldg = parse_digits(self._thread, ext, atoms=False), parse_digits(simplify(flat, ext), ext, atoms=False)
        if tdg is None or ldg is None:
            raise ValueError(f"reduce_dims needs digit-form thread/register maps; got thread `{self._thread}`")
        rep = Var("rep")
        thread: PrimExpr = IntImm(normalize(tdg).const)
        nrep = 1
        for f in sorted(normalize(tdg).fields, key=lambda f: f.coef):
            x = field_expr(rep, nrep, f.span, None) if f.var in drop else field_expr(f.var, f.stride, f.extent, f.limit)
            nrep *= f.span if f.var in drop else 1
            thread = binary("add", thread, binary("mul", x, f.coef))
        local: PrimExpr = IntImm(0)
        radix = 1
        for f in sorted(normalize(ldg).fields, key=lambda f: f.coef):
            if f.var not in drop:
                local = binary("add", local, binary("mul", field_expr(f.var, f.stride, f.extent, f.limit), radix))
                radix *= f.span
        keep = [k for k in range(self.ndim) if k not in dims]
        if keepdims:
            shape = tuple(1 if k in dims else d for k, d in enumerate(self._shape))
            fvars = tuple(Var(f"r{k}") if k in dims else v for k, v in enumerate(self._vars))
        else:
            shape = tuple(self._shape[k] for k in keep) or (1,)
            fvars = tuple(self._vars[k] for k in keep) or (Var("i"),)
        meta = {"origin": f"{self.meta.get('origin', 'fragment')} reduced over dims {list(dims)}"}
        return Fragment.from_exprs(shape, fvars, thread, local, nrep, rep, meta)

    def reshape(self, shape: Any, rescale_num: int = 1, rescale_den: int = 1) -> Fragment:  # type: ignore[override]
        if (rescale_num, rescale_den) != (1, 1):
            raise ValueError("a fragment cannot be rescaled (registers hold whole elements); reshape with 1/1")
        return super().reshape(shape)  # type: ignore[return-value]

    def inverse(self) -> Layout:
        """(thread, *local) -> (*element index[, rep]); rep is output only when replicate > 1."""
        from ._inverse import invert

        self._require_static("invert")
        ins = self._vars + ((self._rep,) if self._replicate > 1 else ())
        ext = self._shape + ((self._replicate,) if self._replicate > 1 else ())
        out_shape = (self.get_thread_size(),) + self.output_shape
        names = ("thread",) + tuple(default_var_names(len(self.output_shape), "local"))
        ivars, iexprs = invert(ins, ext, (self._thread,) + self._index, out_shape, names)
        return Layout.from_exprs(out_shape, ivars, iexprs, ext)

    # -- comparison ----------------------------------------------------------
    def is_equal(self, other: Any) -> bool:
        """Same element shape, replication, thread map and register map."""
        if not isinstance(other, Fragment) or self._replicate != other._replicate:
            return False
        if not _shapes_equal(self._shape, other._shape) or len(self._index) != len(other._index):
            return False
        if not _shapes_equal(self.output_shape, other.output_shape):
            return False
        m = dict(zip(other._vars + (other._rep,), self._vars + (self._rep,)))
        if self._structurally_equal(other) and structural_equal(self._thread, substitute(other._thread, m)):
            return True
        if not self.is_static or prod(self._shape) * self._replicate > ENUM_LIMIT:
            return False
        return self.placements() == other.placements()

    def mismatch(self, other: Fragment) -> str | None:
        """First element whose (thread, register) differs from `other`, or None."""
        if not _shapes_equal(self._shape, other._shape):
            return f"shapes differ: {_fmt_shape(self._shape)} vs {_fmt_shape(other._shape)}"
        if self._replicate != other._replicate:
            return f"replication differs: {self._replicate} vs {other._replicate}"
        for (e, r, t, loc), (_, _, t2, loc2) in zip(self.placements(), other.placements()):
            if (t, loc) != (t2, loc2):
                return f"element {_fmt_idx(e)} (rep {r}) is in thread {t} register {loc} vs thread {t2} register {loc2}"
        return None

    # -- rendering -------------------------------------------------------------
    def summary(self, dtype: Any = None) -> str:
        from ._render import fragment_summary

        return fragment_summary(self, dtype)

    def describe(self, max_rows: int = 16, max_cols: int = 8) -> str:
        from ._render import describe_fragment

        return describe_fragment(self, max_rows=max_rows, max_cols=max_cols)

    def to_dict(self) -> dict:
        from ._render import fragment_dict

        return fragment_dict(self)

    def __repr__(self) -> str:
        (names, thr, idx) = self._expr_strs(self._vars + (self._rep,), (self._thread,), self._index)
        args = ", ".join(names if self._replicate > 1 else names[:-1])
        rep = f", replicate={self._replicate}" if self._replicate > 1 else ""
        return f"Fragment({_fmt_shape(self._shape)}: ({args}) -> thread {thr[0]}, local [{', '.join(idx)}]{rep})"

    __str__ = __repr__


def _fmt_idx(e: tuple) -> str:
    return "[" + ", ".join(str(x) for x in e) + "]"


def _vars_in(e: PrimExpr) -> list:
    from ..ir.visitor import free_vars_of

    return free_vars_of(e)
