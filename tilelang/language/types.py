"""Tensor types and symbols: `T.Tensor`, `T.const`, `T.dynamic`, `T.empty`.

`T.Tensor(shape, dtype)` is a *type*: it becomes a global Buffer when it
annotates a parameter (in the signature for `@T.prim_func`, or in the body of
an eager `@tilelang.jit` function).
"""

from __future__ import annotations

from typing import Any

from ..errors import DSLError
from ..ir.buffer import Buffer, make_buffer
from ..ir.dtype import DataType
from ..ir.expr import PrimExpr, Var
from .sizes import size


def _fmt_shape(shape: Any) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


class TensorType:
    """`T.Tensor((M, K), T.float16)` — shape + dtype of a global tensor parameter."""

    def __new__(cls, shape: Any = None, dtype: Any = "float32", data: Any = None, *args: Any, **kw: Any) -> Any:
        if data is not None:  # `T.Tensor(shape, dtype, buf.data)`: a view of buf's storage, not a type
            from .views import tensor_view

            return tensor_view(shape, dtype, data, "T.Tensor")
        return super().__new__(cls)

    def __init__(self, shape: Any, dtype: Any = "float32", data: Any = None, scope: str | None = None) -> None:
        if isinstance(shape, (int, PrimExpr)):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)):
            raise DSLError(
                f"T.Tensor shape must be a tuple of sizes, got {shape!r}", None, "e.g. T.Tensor((M, K), T.float16)"
            )
        self.shape = tuple(
            size(d, f"dimension {k} of the T.Tensor shape {_fmt_shape(shape)}") for k, d in enumerate(shape)
        )
        self.dtype = DataType(dtype)
        self.scope = scope or "global"

    def __class_getitem__(cls, item: Any) -> TensorType:
        if not isinstance(item, tuple) or len(item) != 2:
            raise DSLError("use T.Tensor[shape, dtype]", None, "e.g. T.Tensor[(M, K), T.float16]")
        return cls(item[0], item[1])

    def make_buffer(self, name: str) -> Buffer:
        return make_buffer(name, self.shape, self.dtype, self.scope)

    def declare_param(self, builder: Any, name: str, prev: Any) -> Buffer:
        if not builder.eager:
            raise DSLError(
                f"`{name}: T.Tensor(...)` in a kernel body is only valid in eager @tilelang.jit functions",
                builder.span_here(),
                "annotate the parameter in the signature of the @T.prim_func instead",
            )
        if not isinstance(prev, TensorPlaceholder):
            if isinstance(prev, Buffer) and prev.name == name:
                raise DSLError(f"parameter `{name}` is annotated twice", builder.span_here(), "keep one annotation")
            raise DSLError(
                f"`{name}` is annotated as a tensor but is not a parameter of the kernel",
                builder.span_here(),
                f"add `{name}` to the function's parameters, or use T.alloc_*/T.empty for local buffers",
            )
        buf = self.make_buffer(name)
        builder.params[name] = buf
        return buf

    def __repr__(self) -> str:
        return f"T.Tensor({self.shape}, {self.dtype})"


Tensor = TensorType
Buffer_ = TensorType


class TensorPlaceholder:
    """Stands in for a tensor argument of an eager kernel until its annotation runs."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _fail(self, *a: Any, **k: Any):
        raise DSLError(
            f"tensor parameter `{self.name}` is used before its `{self.name}: T.Tensor(shape, dtype)` annotation",
            None,
            "annotate it at the top of the kernel body",
        )

    __getitem__ = __setitem__ = __add__ = __mul__ = __getattr__ = _fail  # type: ignore[assignment]


def _split_names(names: str) -> list[str]:
    return [n for n in names.replace(",", " ").split() if n]


def const(names: str, dtype: Any = "int32") -> Var | tuple:
    """Compile-time symbols of an eager kernel, bound from tensor shapes or kwargs."""
    from ..frontend.builder import Builder

    b = Builder.require("T.const")
    if not b.eager:
        raise DSLError(
            "T.const is only valid in eager @tilelang.jit functions", b.span_here(), "use Python values in a factory"
        )
    vs = tuple(Var(n, DataType(dtype)) for n in _split_names(names))
    b.consts.extend(vs)
    return vs[0] if len(vs) == 1 else vs


def dynamic(names: str, dtype: Any = "int32") -> Var | tuple:
    """Run-time dimensions: one compiled kernel serves every size."""
    from ..frontend.builder import Builder

    vs = tuple(Var(n, DataType(dtype)) for n in _split_names(names))
    b = Builder.current()
    if b is not None:
        b.dynamics.extend(vs)
    return vs[0] if len(vs) == 1 else vs


symbolic = dynamic


def empty(*shape: Any, dtype: Any = "float32") -> Buffer:
    """An output tensor of an eager kernel (must be returned)."""
    from ..frontend.builder import Builder

    b = Builder.require("T.empty")
    if not b.eager:
        raise DSLError(
            "T.empty is only valid in eager @tilelang.jit functions", b.span_here(), "use out_idx with a prim_func"
        )
    if len(shape) == 2 and isinstance(shape[0], (tuple, list)) and not isinstance(shape[1], (int, PrimExpr)):
        shape, dtype = shape[0], shape[1]
    elif len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    shape = tuple(size(d, f"dimension {k} of the T.empty shape {_fmt_shape(shape)}") for k, d in enumerate(shape))
    buf = make_buffer(f"out{len(b.outputs)}", shape, dtype)
    b.outputs.append(buf)
    b.unnamed.add(id(buf))
    return buf


def declare_scalar_param(name: str, ann: Any) -> Var:
    if isinstance(ann, DataType) or isinstance(ann, str):
        return Var(name, DataType(ann))
    if isinstance(ann, Var):
        return Var(name, ann.dtype)
    raise DSLError(
        f"parameter `{name}` needs a type annotation: T.Tensor(shape, dtype) or a scalar dtype like T.int32",
        None,
        f"write `{name}: T.Tensor((M, N), T.float32)`",
    )
