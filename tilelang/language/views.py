"""Buffer views: `buf.data`, `T.Tensor(shape, dtype, buf.data)`, `T.reshape`, `T.view`.

A view is a second name, shape and dtype for the storage of another buffer (its *base*):
no new memory. It is declared by an `Allocate` whose annotations carry `view_of` (the base
buffer, always the root of a chain of views) and the byte sizes both had when the view was
made (`view_bytes`, `base_bytes`): passes that see those sizes change (a multi-buffered
tile) know the view no longer describes its base (`transform/view_alias.py`).

What is expressible, checked here where the user can see it:

* the base is contiguous (no explicit strides) and in a scope with addressable storage:
  global, shared or a fragment / per-thread array (`local.var` scalars, barriers and
  reducers are not viewable);
* `T.reshape` / `T.view` keep the total size in bits; `T.Tensor(..., data)` may describe a
  prefix of the base but never more than it; sizes that are symbolic must be provably so;
* a fragment or per-thread view keeps the element width: each thread owns its own elements
  of a fragment, so a view that packs two 16-bit elements into one 32-bit element would
  pair elements that may live in different threads.

Sizes are counted in bits (`dtype.bits * lanes`), not bytes, so a sub-byte dtype (packed
int4 / fp4) needs no change here once `DataType` knows it.
"""

from __future__ import annotations

from typing import Any

from ..errors import DSLError
from ..frontend.builder import Builder
from ..ir.buffer import Buffer, make_buffer
from ..ir.dtype import DataType
from ..ir.expr import IntImm, PrimExpr, as_expr, const_int
from ..ir.node import FrozenDict
from ..ir.stmt import Allocate
from .sizes import size

VIEWABLE_SCOPES = ("global", "shared.dyn", "shared", "local.fragment", "local")
REGISTER_SCOPES = ("local.fragment", "local")


class DataHandle:
    """`buf.data`: the storage of a buffer, to build a view over (`T.Tensor(shape, dtype, buf.data)`)."""

    __slots__ = ("buffer",)

    def __init__(self, buffer: Buffer) -> None:
        self.buffer = buffer

    def __repr__(self) -> str:
        return f"{self.buffer.name}.data"


def _bits(dtype: DataType) -> int:
    return dtype.bits * dtype.lanes


def _total_bits(shape: tuple, dtype: DataType) -> Any:
    n: Any = _bits(dtype)
    for d in shape:
        n = n * d
    return n


def _diff(a: Any, b: Any) -> int | None:
    """`a - b` as an int when the simplifier can fold it (symbolic shapes included)."""
    from ..arith import Analyzer

    c = const_int(Analyzer().simplify(as_expr(a) - as_expr(b)))
    return c


def _fmt(shape: tuple) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def root_of(buf: Buffer) -> Buffer:
    """The buffer that owns the storage `buf` names (itself unless it is a view)."""
    return getattr(buf, "_view_root", None) or buf


def make_view(base: Any, shape: Any, dtype: Any, what: str, exact: bool) -> Buffer:
    b = Builder.require(what)
    span = b.span_here()
    if isinstance(base, DataHandle):
        base = base.buffer
    if not isinstance(base, Buffer):
        raise DSLError(
            f"{what}: the storage to view must be a buffer or `buf.data`, got {type(base).__name__}",
            span,
            "pass an existing buffer, e.g. T.Tensor((M * N,), dtype, A.data)",
        )
    b.require_kernel(what)
    if base.scope not in VIEWABLE_SCOPES:
        raise DSLError(
            f"{what}: `{base.name}` is a {base.scope} buffer, which has no storage a view can name",
            span,
            "view a global, shared, fragment or T.alloc_local buffer",
        )
    if base.strides is not None:
        raise DSLError(
            f"{what}: `{base.name}` is not contiguous (it has explicit strides), so its elements are not "
            "one run of memory a reshape can reinterpret",
            span,
            "copy it into a contiguous buffer first, or index it directly",
        )
    dtype = DataType(dtype)
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    shape = tuple(size(d, f"dimension {k} of the {what} shape {_fmt(tuple(shape))}") for k, d in enumerate(shape))
    root = root_of(base)
    if base.scope in REGISTER_SCOPES and _bits(dtype) != _bits(base.dtype):
        raise DSLError(
            f"{what}: a {base.scope} view of `{base.name}` as {dtype} changes the element width "
            f"({_bits(base.dtype)} → {_bits(dtype)} bits), which breaks its layout: the threads of a fragment "
            "each own their own elements, and one wider element would span several of them",
            span,
            "view it with a dtype of the same width (e.g. int8 ↔ float8_e4m3fn), or reinterpret a shared buffer",
        )
    want, have = _total_bits(shape, dtype), _total_bits(base.shape, base.dtype)
    d = _diff(have, want)
    what_size = f"{_fmt(shape)} {dtype} ({want} bits)"
    base_size = f"`{base.name}` {_fmt(base.shape)} {base.dtype} ({have} bits)"
    if d is None:
        raise DSLError(
            f"{what}: cannot prove that the view {what_size} fits {base_size}",
            span,
            "write the view's shape in terms of the base's dimensions (e.g. (M * K,) for a (M, K) tensor)",
        )
    if (exact and d != 0) or d < 0:
        need = "have the same size in bits as" if exact else "be no larger than"
        raise DSLError(
            f"{what}: the view {what_size} must {need} {base_size}",
            span,
            "fix the shape or dtype so the element counts times the element widths match",
        )
    view = make_buffer("view", shape, dtype, base.scope, span)
    object.__setattr__(view, "_view_root", root)
    ann = {"view_of": root, "view_bytes": _bytes(view), "base_bytes": _bytes(root)}
    b.unnamed.add(id(view))
    b.emit(Allocate(view, None, FrozenDict(ann), span))
    return view


def _bytes(buf: Buffer) -> int:
    """Size in bytes when the shape is constant (shared and register views), else -1."""
    n = const_int(_total_bits(buf.shape, buf.dtype)) if buf.static_shape is not None else None
    return -1 if n is None else (n + 7) // 8


def reshape(src: Any, shape: Any) -> Buffer:
    """`T.reshape(buf, shape)`: the same storage and dtype under another shape."""
    base = src.buffer if isinstance(src, DataHandle) else src
    return make_view(base, shape, getattr(base, "dtype", None) or "float32", "T.reshape", exact=True)


def view(src: Any, shape: Any = None, dtype: Any = None) -> Buffer:
    """`T.view(buf, shape=None, dtype=None)`: the same storage under another shape and/or dtype.

    Without `shape`, the last dimension is rescaled by the ratio of the element widths
    (a (M, K) int8 buffer viewed as uint32 is (M, K // 4))."""
    base = src.buffer if isinstance(src, DataHandle) else src
    if not isinstance(base, Buffer):
        return make_view(base, (), "float32", "T.view", exact=True)  # reports the bad operand
    dt = DataType(dtype) if dtype is not None else base.dtype
    if shape is None:
        shape = tuple(base.shape)
        old, new = _bits(base.dtype), _bits(dt)
        if old != new:
            if not shape:
                raise DSLError("T.view: a 0-d buffer cannot change its dtype", Builder.require("T.view").span_here())
            last = const_int(shape[-1])
            total = None if last is None else last * old
            if total is None or total % new:
                raise DSLError(
                    f"T.view: the last dimension of `{base.name}` ({shape[-1]} × {old} bits) is not a multiple of "
                    f"{new} bits, so it cannot be viewed as {dt}",
                    Builder.require("T.view").span_here(),
                    "give the view's shape explicitly, or pick a dtype whose width divides the row",
                )
            shape = shape[:-1] + (IntImm(total // new),)
    return make_view(base, shape, dt, "T.view", exact=True)


def tensor_view(shape: Any, dtype: Any, data: Any, what: str = "T.Tensor") -> Buffer:
    """`T.Tensor(shape, dtype, buf.data)` / `T.Buffer(shape, dtype, data)`: a view of `buf`'s storage."""
    return make_view(data, shape, dtype, what, exact=False)
