"""Buffers and buffer regions.

A `Buffer` is a named, typed, shaped piece of memory in one scope:
`global` (kernel parameters), `shared.dyn` (block-shared), `local.fragment`
(a tile distributed over the block's threads), `local` (per-thread array) or
`local.var` (per-thread scalar). Indexing a buffer builds a `BufferLoad`
(all indices scalar) or a `BufferRegion` (any slice); assigning to an index
emits a `BufferStore` into the statement currently being traced.

Layouts are not stored on buffers: layout inference records them in a map
on the PrimFunc, so buffer identity is stable across passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .dtype import DataType, int32
from .expr import BufferLoad, IntImm, PrimExpr, as_expr, binary, cast, const_int
from .node import Node, span_field
from .span import Span

SCOPES = ("global", "shared.dyn", "shared", "local.fragment", "local", "local.var", "local.reducer", "shared.barrier")

# Installed by the frontend: emits a statement into the trace.
_store_hook = None


def set_store_hook(fn) -> None:
    global _store_hook
    _store_hook = fn


@dataclass(frozen=True, eq=False)
class Buffer(Node):
    name: str
    shape: tuple
    dtype: DataType
    scope: str = "global"
    strides: tuple | None = None
    span: Span = span_field()

    __hash__ = object.__hash__

    # -- properties ------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def static_shape(self) -> tuple[int, ...] | None:
        dims = tuple(const_int(d) for d in self.shape)
        return None if any(d is None for d in dims) else dims  # type: ignore[return-value]

    def numel(self) -> PrimExpr | int:
        n: Any = 1
        for d in self.shape:
            n = n * d if not isinstance(n, int) or not isinstance(d, int) else n * d
        return n

    @property
    def is_shared(self) -> bool:
        return self.scope.startswith("shared")

    @property
    def is_fragment(self) -> bool:
        return self.scope == "local.fragment"

    @property
    def is_local(self) -> bool:
        return self.scope.startswith("local")

    @property
    def data(self) -> Any:
        """`buf.data`: this buffer's storage, to declare a view over (`T.Tensor(shape, dtype, buf.data)`)."""
        from ..language.views import DataHandle

        return DataHandle(self)

    def with_shape(self, shape: tuple, name: str | None = None) -> Buffer:
        return Buffer(name or self.name, tuple(shape), self.dtype, self.scope, None, self.span)

    # -- indexing ----------------------------------------------------------
    def _normalise_key(self, key: Any) -> tuple:
        if not isinstance(key, tuple):
            key = (key,)
        if self.scope == "local.var" and key in ((), (0,)):
            return (IntImm(0),)
        if len(key) != self.ndim:
            from ..errors import DSLError

            raise DSLError(
                f"buffer `{self.name}` has {self.ndim} dimension(s) {_fmt_shape(self.shape)} "
                f"but was indexed with {len(key)}",
                None,
                f"give exactly {self.ndim} indices (use `:` for a whole dimension)",
            )
        return key

    def __getitem__(self, key: Any):
        key = self._normalise_key(key)
        if any(isinstance(k, slice) for k in key):
            return self.region(key)
        return BufferLoad(self, tuple(as_expr(k) for k in key), self.dtype)

    def access_ptr(self, access_mask: Any = "r", *args: Any, **kwargs: Any) -> Any:
        """TVM's `Buffer.access_ptr(access_mask, ptr_type="handle", content_lanes=1, offset=0,
        extent=None)`: a pointer argument for `T.call_extern` (tilelang/language/extern.py)."""
        from ..language.extern import buffer_access_ptr

        return buffer_access_ptr(self, access_mask, *args, **kwargs)

    def region(self, key: tuple) -> BufferRegion:
        ranges = []
        for k, dim in zip(key, self.shape):
            if isinstance(k, slice):
                if k.step is not None and const_int(k.step) != 1:  # a symbolic step: not `in`, it builds IR
                    from ..errors import DSLError

                    raise DSLError("strided slices are not supported in tile regions", None, "use step 1")
                start = as_expr(0 if k.start is None else k.start)
                stop = dim if k.stop is None else k.stop
                ranges.append(Range(start, as_expr(binary("sub", stop, start))))
            else:
                ranges.append(Range(as_expr(k), IntImm(1)))
        return BufferRegion(self, tuple(ranges))

    def full_region(self) -> BufferRegion:
        return BufferRegion(self, tuple(Range(IntImm(0), as_expr(d)) for d in self.shape))

    def __setitem__(self, key: Any, value: Any) -> None:
        key = self._normalise_key(key)
        if any(isinstance(k, slice) for k in key):
            from ..errors import DSLError

            raise DSLError(
                f"cannot assign to a slice of `{self.name}`",
                None,
                "use T.fill(region, value) or T.copy(src, region), or a T.Parallel loop",
            )
        if _store_hook is None:
            from ..errors import DSLError

            raise DSLError(f"`{self.name}[...] = ...` is only valid inside a kernel body", None)
        idx = tuple(as_expr(k) for k in key)
        _store_hook(self, idx, cast(as_expr(value, self.dtype), self.dtype))

    # `local.var` buffers (T.alloc_var) read as their single element.
    def __tl_expr__(self) -> PrimExpr:
        if self.scope == "local.var":
            return BufferLoad(self, (IntImm(0),), self.dtype)
        from ..errors import DSLError

        raise DSLError(
            f"buffer `{self.name}` {_fmt_shape(self.shape)} used where a scalar is expected",
            None,
            f"index it, e.g. `{self.name}[i]`",
        )

    def astype(self, dtype: Any) -> PrimExpr:
        return cast(self.__tl_expr__(), dtype)

    def __iter__(self):
        from ..errors import DSLError

        raise DSLError(f"cannot iterate over buffer `{self.name}`", None, "loop over indices with T.Parallel/T.serial")

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"Buffer({self.name}: {self.scope} {self.dtype}{_fmt_shape(self.shape)})"

    __str__ = __repr__


def _scalar_op(op: str, reflected: bool = False):
    def method(self: Buffer, other: Any):
        a = self.__tl_expr__()
        from .expr import compare

        fn = compare if op in ("eq", "ne", "lt", "le", "gt", "ge") else binary
        return fn(op, other, a) if reflected else fn(op, a, other)

    return method


for _op, _name in [
    ("add", "add"),
    ("sub", "sub"),
    ("mul", "mul"),
    ("div", "truediv"),
    ("floordiv", "floordiv"),
    ("floormod", "mod"),
]:
    setattr(Buffer, f"__{_name}__", _scalar_op(_op))
    setattr(Buffer, f"__r{_name}__", _scalar_op(_op, True))
for _op in ("lt", "le", "gt", "ge"):
    setattr(Buffer, f"__{_op}__", _scalar_op(_op))
Buffer.__neg__ = lambda self: -self.__tl_expr__()  # type: ignore[attr-defined]


def _fmt_shape(shape: tuple) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


@dataclass(frozen=True, eq=False)
class Range(Node):
    begin: PrimExpr
    extent: PrimExpr
    span: Span = span_field()

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class BufferRegion(Node):
    """A rectangular region `buffer[b0:b0+e0, b1:b1+e1, ...]`."""

    buffer: Buffer
    region: tuple  # tuple[Range, ...]
    span: Span = span_field()

    __hash__ = object.__hash__

    @property
    def dtype(self) -> DataType:
        return self.buffer.dtype

    @property
    def extents(self) -> tuple:
        return tuple(r.extent for r in self.region)

    @property
    def begins(self) -> tuple:
        return tuple(r.begin for r in self.region)

    def is_whole(self, as_int: Any = const_int) -> bool:
        """The region is all of its buffer: every range starts at 0 and spans its (constant)
        dimension. `as_int` reads a begin or extent as an int (or None); a caller with
        unsimplified regions passes one that simplifies first."""
        return all(
            as_int(r.begin) == 0 and as_int(r.extent) is not None and as_int(r.extent) == const_int(d)
            for r, d in zip(self.region, self.buffer.shape)
        )

    def __repr__(self) -> str:
        inner = ", ".join(f"{r.begin}:{r.begin}+{r.extent}" for r in self.region)
        return f"{self.buffer.name}[{inner}]"


def make_buffer(name: str, shape: Any, dtype: Any, scope: str = "global", span: Span | None = None) -> Buffer:
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    dims = tuple(as_expr(d, int32) for d in shape)
    if span is None:
        return Buffer(name, dims, DataType(dtype), scope)
    return Buffer(name, dims, DataType(dtype), scope, None, span)
