"""`Layout`: a buffer's logical index -> its physical index.

A layout is a tuple of IR expressions (`forward_index`) over one placeholder
`Var` per logical dimension (`forward_vars`, var `k` ranging over
`[0, shape[k])`). The physical storage is the row-major array of
`output_shape`; `get_linearized_forward_index()` is the element offset in it.

Layouts are immutable. Expressions are simplified once at construction and
compiled into a Python lambda on first use, so `layout(3, 5)` on ints is one
call; on IR expressions `layout(i, j)` substitutes and returns expressions.
Whole-tile questions (output shape, equality, inversion checks) enumerate the
tile through a generated loop nest and cache the result.
"""

from __future__ import annotations

import copy
import numbers
from collections.abc import Callable
from typing import Any

from ..ir.expr import IntImm, PrimExpr, Var, as_expr, binary, const_int, structural_equal
from ..ir.printer import Printer
from ._expr import bounds, compile_map, compile_table, exact_extent, simplify, substitute, var_ranges

#: Above this many points, whole-tile enumeration is refused (or skipped where optional).
ENUM_LIMIT = 1 << 22

_NAMES = "ijklmn"
_CACHES = ("_fn", "_tbl", "_tfn", "_ftbl")


def default_var_names(n: int, prefix: str = "") -> list[str]:
    if n <= len(_NAMES) and not prefix:
        return list(_NAMES[:n])
    return [f"{prefix or 'i'}{k}" for k in range(n)]


def normalize_shape(shape: Any) -> tuple:
    """Tuple of positive ints (or symbolic PrimExprs) from an int, list or IR shape."""
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    out: list = []
    for d in shape:
        c = const_int(d)
        if c is not None:
            if c <= 0:
                raise ValueError(f"layout shape {list(shape)} has a non-positive dimension {c}")
            out.append(int(c))
        elif isinstance(d, PrimExpr):
            out.append(d)
        else:
            raise TypeError(f"layout shape entries must be ints or IR expressions, got {d!r}")
    return tuple(out)


def as_index_tuple(result: Any) -> tuple:
    if isinstance(result, (list, tuple)):
        return tuple(as_expr(x) for x in result)
    return (as_expr(result),)


def prod(xs) -> Any:
    p: Any = 1
    for x in xs:
        p = p * x
    return p


def row_major_strides(shape: tuple) -> list:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc = acc * d
    return strides[::-1]


def _fmt_shape(shape) -> str:
    return "×".join(str(d) for d in shape)


class Layout:
    """Map from a logical index to a physical index (see module docstring).

    `Layout(shape, forward_fn)` calls `forward_fn(*vars)` with one Var per
    dimension; it returns the physical index as an expression or a list of
    them. Without `forward_fn` the layout is the identity (row-major).
    `output_shape` may be given to declare padding (storage larger than the
    image of the map); otherwise it is the tight bound of the image.
    """

    def __init__(
        self,
        shape: Any,
        forward_fn: Callable | None = None,
        *,
        output_shape: Any = None,
        meta: dict | None = None,
    ) -> None:
        shape = normalize_shape(shape)
        fvars = tuple(Var(n) for n in default_var_names(len(shape)))
        index = fvars if forward_fn is None else as_index_tuple(forward_fn(*fvars))
        self._init(shape, fvars, index, output_shape, meta)

    # -- construction helpers ----------------------------------------------
    def _init(self, shape: tuple, fvars: tuple, index: tuple, output_shape: Any, meta: dict | None) -> None:
        if len(fvars) != len(shape):
            raise ValueError(f"layout has {len(shape)} dimensions but {len(fvars)} forward vars")
        self._shape = tuple(shape)
        self._vars = tuple(fvars)
        self._extents = {v: (e if isinstance(e, int) else None) for v, e in zip(fvars, shape)}
        self._index = tuple(simplify(as_expr(e), self._extents) for e in index)
        self._out_shape = None if output_shape is None else normalize_shape(output_shape)
        self.meta: dict = dict(meta or {})
        self._fn: Callable | None = None
        self._tbl: list | None = None

    @classmethod
    def from_exprs(
        cls, shape: Any, forward_vars: tuple, forward_index: Any, output_shape: Any = None, meta: dict | None = None
    ) -> Layout:
        """Build from explicit vars and index expressions (no callback)."""
        obj = Layout.__new__(Layout)
        Layout._init(
            obj, normalize_shape(shape), tuple(forward_vars), as_index_tuple(forward_index), output_shape, meta
        )
        return obj

    def _derive(
        self, shape: tuple, fvars: tuple, index: tuple, subst: dict, output_shape: Any, keep_meta: bool = False
    ) -> Layout:
        """A new layout of the same kind; `subst` maps this layout's vars to
        expressions of `fvars` (used by subclasses to carry extra maps).
        Descriptive `meta` is only kept where it stays true (`expand`)."""
        return Layout.from_exprs(shape, fvars, index, output_shape, self.meta if keep_meta else None)

    def with_meta(self, **kw: Any) -> Layout:
        """A copy with extra descriptive metadata (never affects equality)."""
        out = copy.copy(self)
        out.meta = {**self.meta, **kw}
        return out

    def __getstate__(self) -> dict:
        # compiled lambdas and enumeration caches are rebuilt on demand
        return {k: (None if k in _CACHES else v) for k, v in self.__dict__.items()}

    # -- upstream API: accessors -------------------------------------------
    @property
    def index(self) -> list:
        return list(self._index)

    def get_forward_index(self) -> list:
        return list(self._index)

    def get_forward_vars(self) -> list:
        return list(self._vars)

    def get_input_shape(self) -> list:
        return list(self._shape)

    def get_output_shape(self) -> list:
        return list(self.output_shape)

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self._shape)

    @property
    def numel(self) -> int:
        self._require_static("count elements")
        return prod(self._shape)

    @property
    def output_shape(self) -> tuple:
        if self._out_shape is None:
            self._out_shape = self._tight_extents(self._index)
        return self._out_shape

    # -- evaluation ----------------------------------------------------------
    def _eval_fn(self) -> Callable:
        if self._fn is None:
            self._fn = compile_map(self._vars, self._index)
        return self._fn

    def map_forward_index(self, indices: Any) -> tuple:
        """The physical index of `indices`: ints in -> ints out, else expressions."""
        idx = tuple(int(x) if isinstance(x, numbers.Integral) else x for x in indices)
        if len(idx) != self.ndim:
            raise ValueError(f"layout takes {self.ndim} indices, got {len(idx)}")
        if all(isinstance(x, int) for x in idx):
            return self._eval_fn()(*idx)
        m = dict(zip(self._vars, idx))
        return tuple(simplify(substitute(e, m)) for e in self._index)

    def __call__(self, *idx: Any) -> tuple:
        return self.map_forward_index(idx)

    def get_linearized_forward_index(self) -> PrimExpr:
        """Row-major element offset of the physical index in `output_shape`."""
        acc: PrimExpr = IntImm(0)
        for e, s in zip(self._index, row_major_strides(self.output_shape)):
            acc = binary("add", acc, binary("mul", e, s))
        return simplify(acc, self._extents)

    def linear_offset(self, *idx: int) -> int:
        out = self._eval_fn()(*idx)
        acc = 0
        for v, s in zip(out, row_major_strides(self.output_shape)):
            acc += v * s
        return acc

    def table(self) -> list:
        """Physical indices of every logical index, in row-major logical order (cached)."""
        if self._tbl is None:
            self._require_static("enumerate", limit=True)
            self._tbl = compile_table(self._vars, self._shape, self._index)()
        return self._tbl

    def offsets(self) -> list:
        """Linear physical offsets of every logical index, row-major logical order."""
        strides = row_major_strides(self.output_shape)
        return [sum(v * s for v, s in zip(p, strides)) for p in self.table()]

    def _require_static(self, what: str, limit: bool = False) -> None:
        if not self.is_static:
            raise ValueError(f"cannot {what} a layout with symbolic shape {list(self._shape)}")
        if limit and prod(self._shape) > ENUM_LIMIT:
            raise ValueError(f"layout {_fmt_shape(self._shape)} is too large to {what} ({ENUM_LIMIT} points max)")

    def _tight_extents(self, exprs: tuple, extra: dict | None = None) -> tuple:
        """Per-expression extent (max + 1) over the domain: bounds if exact, else enumerate."""
        extents = {**self._extents, **(extra or {})}
        exact_dims = [exact_extent(e, extents) for e in exprs]
        if all(d is not None for d in exact_dims):
            return tuple(exact_dims)
        ranges = var_ranges(extents)
        dims: list = []
        for e in exprs:
            if isinstance(e, Var) and e in extents and extents[e] is None:
                dims.append(self._shape[next(k for k, v in enumerate(self._vars) if v is e)])  # by identity
                continue
            b = bounds(e, ranges)
            if b is not None and b[0] < 0:
                raise ValueError(f"layout index `{e}` can be negative (down to {b[0]})")
            dims.append(None if b is None or b[1] is None else b[1] + 1)
        points = prod(e for e in extents.values()) if all(isinstance(e, int) for e in extents.values()) else None
        exact = points is not None and all(isinstance(d, int) for d in dims) and prod(dims) == points
        if not exact and points is not None and points <= ENUM_LIMIT:
            params = tuple(extents)
            tbl = compile_table(params, tuple(extents[v] for v in params), exprs)()
            lo = [min(col) for col in zip(*tbl)] if tbl else [0] * len(exprs)
            if any(x < 0 for x in lo):
                raise ValueError(f"layout index takes negative values: {list(exprs)}")
            dims = [max(col) + 1 for col in zip(*tbl)] if tbl else [1] * len(exprs)
        if any(d is None for d in dims):
            raise ValueError(f"cannot bound the layout's output {list(exprs)} over shape {list(self._shape)}")
        return tuple(dims)

    # -- transformations ---------------------------------------------------
    def _fresh_vars(self, n: int) -> tuple:
        return tuple(Var(x) for x in default_var_names(n))

    def repeat(self, dim: int, factor: int) -> Layout:
        """Tile this layout `factor` times along input `dim`; the tile number
        becomes a new leading output dimension."""
        dim = dim % self.ndim
        atom = self._shape[dim]
        if not isinstance(atom, int):
            raise ValueError("repeat needs a static extent along the repeated dimension")
        shape = tuple(d * factor if k == dim else d for k, d in enumerate(self._shape))
        nv = self._fresh_vars(len(shape))
        subst = {v: (binary("floormod", w, atom) if k == dim else w) for k, (v, w) in enumerate(zip(self._vars, nv))}
        index = (binary("floordiv", nv[dim], atom),) + tuple(substitute(e, subst) for e in self._index)
        return self._derive(shape, nv, index, subst, (factor,) + self.output_shape)

    def expand(self, leading_shape: Any) -> Layout:
        """Prepend pass-through dimensions (e.g. pipeline stages) to input and output."""
        lead = normalize_shape(leading_shape)
        shape = lead + self._shape
        nv = self._fresh_vars(len(shape))
        subst = dict(zip(self._vars, nv[len(lead) :]))
        index = tuple(nv[: len(lead)]) + tuple(substitute(e, subst) for e in self._index)
        out_shape = lead + self.output_shape
        return self._derive(shape, nv, index, subst, out_shape, keep_meta=True)

    def reshape(self, shape: Any, rescale_num: int = 1, rescale_den: int = 1) -> Layout:
        """Same storage seen through a new logical shape (row-major element order).

        `rescale_num / rescale_den` is new element size / old element size:
        2/1 views pairs of fp16 as one 32-bit element (each pair must be
        contiguous and aligned in the physical layout), 1/2 the opposite."""
        from fractions import Fraction

        new_shape = normalize_shape(shape)
        self._require_static("reshape")
        r = Fraction(rescale_num, rescale_den)
        old_n, new_n = self.numel, prod(new_shape)
        if new_n * r != old_n:
            raise ValueError(
                f"cannot reshape {_fmt_shape(self._shape)} ({old_n} elements) to {_fmt_shape(new_shape)} "
                f"({new_n} elements) with rescale {r}: element counts × sizes must match"
            )
        nv = self._fresh_vars(len(new_shape))
        flat: PrimExpr = IntImm(0)
        for v, s in zip(nv, row_major_strides(new_shape)):
            flat = binary("add", flat, binary("mul", v, s))
        k_up, k_down = r.numerator, r.denominator  # one of them is 1 for supported rescales
        if k_up != 1 and k_down != 1:
            raise ValueError(f"rescale {r} must be an integer or the inverse of one")
        old_flat = binary("mul", flat, k_up) if k_up > 1 else binary("floordiv", flat, k_down)
        subst = {}
        for k, (v, s) in enumerate(zip(self._vars, row_major_strides(self._shape))):
            x = binary("floordiv", old_flat, s)
            subst[v] = x if k == 0 else binary("floormod", x, self._shape[k])
        index = [substitute(e, subst) for e in self._index]
        out_shape = list(self.output_shape)
        if k_up > 1:
            self._check_groups(k_up)
            index[-1] = binary("floordiv", index[-1], k_up)
            out_shape[-1] //= k_up
        elif k_down > 1:
            index[-1] = binary("add", binary("mul", index[-1], k_down), binary("floormod", flat, k_down))
            out_shape[-1] *= k_down
        return self._derive(new_shape, nv, tuple(index), subst, tuple(out_shape))

    def _check_groups(self, k: int) -> None:
        offs = self.offsets()
        if self.output_shape[-1] % k:
            raise ValueError(f"last physical dimension {self.output_shape[-1]} is not a multiple of {k}")
        for g in range(0, len(offs), k):
            base = offs[g]
            if base % k or any(offs[g + r] != base + r for r in range(k)):
                raise ValueError(
                    f"cannot merge {k} elements into one: logical elements {g}..{g + k - 1} are stored at "
                    f"{offs[g : g + k]}, not {k} contiguous aligned slots"
                )

    def inverse(self) -> Layout:
        """The inverse map (physical index -> logical index); needs a bijection."""
        from ._inverse import invert

        self._require_static("invert")
        out_shape = self.output_shape
        names = default_var_names(len(out_shape))
        ivars, iexprs = invert(self._vars, self._shape, self._index, out_shape, tuple(names))
        return Layout.from_exprs(out_shape, ivars, iexprs, self._shape)

    # -- comparison ----------------------------------------------------------
    def is_equal(self, other: Any) -> bool:
        """Same shapes and the same map (structurally, else element by element)."""
        if type(other) is not type(self) or not _shapes_equal(self._shape, other._shape):
            return False
        if len(self._index) != len(other._index):
            return False
        if not _shapes_equal(self.output_shape, other.output_shape):
            return False
        if self._structurally_equal(other):
            return True
        return self._tables_equal(other)

    def _structurally_equal(self, other: Layout) -> bool:
        m = dict(zip(other._vars, self._vars))
        return all(structural_equal(a, substitute(b, m)) for a, b in zip(self._index, other._index))

    def _tables_equal(self, other: Layout) -> bool:
        if not self.is_static or prod(self._shape) > ENUM_LIMIT:
            return False
        return self.table() == other.table()

    def is_bijective(self) -> bool:
        """Every physical slot of `output_shape` holds exactly one element."""
        if prod(self.output_shape) != self.numel:
            return False
        return len(set(self.table())) == self.numel

    # -- rendering -------------------------------------------------------------
    def summary(self) -> str:
        from ._render import layout_summary

        return layout_summary(self)

    def describe(self, max_rows: int = 16, max_cols: int = 8) -> str:
        from ._render import describe_layout

        return describe_layout(self, max_rows=max_rows, max_cols=max_cols)

    def to_dict(self) -> dict:
        from ._render import layout_dict

        return layout_dict(self)

    def _expr_strs(self, *groups: tuple) -> list:
        p = Printer()
        for v in self._vars:
            p.name(v)
        return [[p.expr(e) for e in g] for g in groups]

    def __repr__(self) -> str:
        (names, idx) = self._expr_strs(self._vars, self._index)
        return (
            f"Layout({_fmt_shape(self._shape)} -> {_fmt_shape(self.output_shape)}: "
            f"({', '.join(names)}) -> [{', '.join(idx)}])"
        )

    __str__ = __repr__


def _shapes_equal(a: tuple, b: tuple) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, int) or isinstance(y, int):
            if x != y:
                return False
        elif not structural_equal(x, y) and x is not y:
            return False
    return True
