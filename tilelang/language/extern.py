"""Escape hatches of the `T` namespace: foreign functions, raw pointers, assumptions.

* `T.call_extern(dtype, name, *args)` / `T.call_pure_extern(...)`: a call of a device (CUDA)
  or C function by name, `dtype` its result ("void"/"handle": none, a statement). A call
  written as a bare statement runs (its value, if any, is dropped); `T.call_pure_extern`
  promises no side effects, so a bare one is dropped. On CUDA a call outside `T.Parallel`
  runs in every thread, as in upstream TileLang; the C backend runs the block program once
  (see DESIGN.md), so a call there runs once per block — put per-element calls inside
  `T.Parallel`. On the C backend 16-bit float arguments and results travel as `float`.
* `T.import_source(code)`: source text (a device function) emitted once, before the kernel,
  in the generated file of every target; on the C backend `__device__`, `__host__` and
  `__forceinline__` are defined away, so a plain CUDA device function compiles as C.
* `T.access_ptr(base, access_type="r", *extents, offset=0, extent=None, ignore_last_ndim=0)`
  and `buffer.access_ptr(access_mask, ptr_type="handle", content_lanes=1, offset=0,
  extent=None)`: a pointer to an element (`base` a buffer, an element `A[i, j]` or a region),
  `offset` elements further on, for an extern call. The sync and bounds passes treat it as
  an access of unknown extent (barriers around it; the call is skipped when its first element
  is outside a global tensor).
* `T.assume(cond)`: a fact the compiler may use for the rest of the enclosing block
  (simplification, bounds guards, bounds checks); it is not checked at run time.
* `T.evaluate(expr)`: `expr` as a statement. `T.attr(node, key, value)` (a statement or a
  `with` frame): only `"pragma_import_c"` (= `T.import_source(value)`) has a meaning here.
* `T.call_intrin(dtype, op, *args)`: the math intrinsics by TVM name (`"tir.exp"` ...).
* `T.call_packed`: unsupported (there is no TVM runtime to call into).
"""

from __future__ import annotations

from typing import Any

from ..errors import DSLError, UnsupportedError
from ..frontend.builder import Builder
from ..ir.buffer import Buffer, BufferRegion
from ..ir.dtype import DataType
from ..ir.expr import FLOAT_UNARY, BufferLoad, Call, FloatImm, IntImm, PrimExpr, StringImm, as_expr, call, compare
from ..ir.stmt import Evaluate

EXTERN = "tl.call_extern"
PURE_EXTERN = "tl.call_pure_extern"
ASSUME = "tl.assume"
_VOID = ("void", "handle", "", None)
_INTRINSICS = FLOAT_UNARY | {"pow", "atan2", "fmod", "hypot", "copysign", "nextafter", "abs", "fabs"}


def _kernel_builder(what: str) -> Builder:
    b = Builder.require(what)
    b.require_kernel(what)
    return b


def _extern(op: str, dtype: Any, func_name: Any, args: tuple, what: str) -> PrimExpr:
    b = _kernel_builder(what)
    if not isinstance(func_name, str) or not func_name.replace("_", "a").replace("::", "a").isalnum():
        raise DSLError(f"{what}: the function name must be an identifier, got {func_name!r}", b.span_here())
    void = dtype in _VOID or (isinstance(dtype, str) and str(dtype) in ("void", "handle"))
    dt = DataType("handle") if void else DataType(dtype)
    xs = tuple(StringImm(a) if isinstance(a, str) else as_expr(a) for a in args)
    return Call(op, (StringImm(func_name), IntImm(int(void)), *xs), dt)


def call_extern(dtype: Any, func_name: str, *args: Any) -> PrimExpr:
    """Call the device / C function `func_name(*args)`; `dtype` is its result type."""
    return _extern(EXTERN, dtype, func_name, args, "T.call_extern")


def call_pure_extern(dtype: Any, func_name: str, *args: Any) -> PrimExpr:
    """`T.call_extern` of a function without side effects (a bare call of it does nothing)."""
    return _extern(PURE_EXTERN, dtype, func_name, args, "T.call_pure_extern")


def call_intrin(dtype: Any, op: Any, *args: Any, annotations: Any = None) -> PrimExpr:
    """TVM's `call_intrin` for the math intrinsics (`"tir.exp"`, `"exp2"`, ...)."""
    b = _kernel_builder("T.call_intrin")
    name = str(getattr(op, "name", op))
    short = name.split(".", 1)[1] if name.startswith(("tir.", "tl.")) else name
    if annotations:
        raise UnsupportedError("T.call_intrin: annotations are not supported", b.span_here())
    if short not in _INTRINSICS:
        raise UnsupportedError(
            f"T.call_intrin: intrinsic {name!r} has no counterpart here",
            b.span_here(),
            "use the T.* function of that name, or T.call_extern for a device function",
        )
    return call(short, *args, dtype=dtype)


def call_packed(*args: Any) -> None:
    """TVM's `T.call_packed`: not available here (there is no TVM runtime); raises `unsupported`."""
    raise UnsupportedError(
        "T.call_packed calls into the TVM runtime, which TileLang here does not have",
        Builder.current().span_here() if Builder.current() else None,
        "use T.call_extern for a device function",
    )


def as_statement(value: Any) -> None:
    """A bare expression statement: an extern call still runs (frontend/runtime.expr_stmt)."""
    if isinstance(value, Call) and value.op == EXTERN:
        b = Builder.current()
        if b is not None and b.in_kernel():
            b.emit(Evaluate(value))


def evaluate(value: Any) -> None:
    """`value` as a statement (TVM's `T.evaluate`); `T.evaluate(T.tvm_thread_allreduce(...))`
    emits the all-reduce (language/thread.py)."""
    from .thread import _AllReduce

    b = _kernel_builder("T.evaluate")
    if isinstance(value, _AllReduce):
        b.emit(value.stmt)
        return
    if value is None:
        return  # a builder that already emitted its statement (T.evaluate(T.copy(...)))
    e = as_expr(value)
    if isinstance(e, (IntImm, FloatImm)) or (isinstance(e, Call) and e.op == PURE_EXTERN):
        return  # no effect to keep
    b.emit(Evaluate(e))


def import_source(source: Any = None) -> None:
    """Emit `source` once at the top of the generated file (CUDA and C)."""
    b = Builder.require("T.import_source")
    if not isinstance(source, str) or not source.strip():
        raise DSLError("T.import_source needs the source text as a string", b.span_here())
    have = tuple(b.attrs.get("import_source", ()))
    if source not in have:
        b.attrs["import_source"] = have + (source,)


class attr:  # noqa: N801 - TVMScript name
    """`T.attr(node, key, value)` as a statement or `with T.attr(...):` — `"pragma_import_c"`
    (T.import_source) and `"reduce_scope"` over a `T.comm_reducer` (the reducer of the
    `T.tvm_thread_allreduce` calls inside, language/thread.py)."""

    def __init__(self, node: Any, key: str, value: Any = None) -> None:
        b = Builder.require("T.attr")
        self._scope = None
        if key == "reduce_scope":
            from .thread import reduce_scope

            self._scope = reduce_scope(node)
            return
        if key == "pragma_import_c":
            import_source(value.value if isinstance(value, StringImm) else value)
            return
        raise UnsupportedError(
            f"T.attr: attribute {key!r} has no meaning here",
            b.span_here(),
            "only 'pragma_import_c' (T.import_source) and 'reduce_scope' are supported; the TileLang builders "
            "cover the rest",
        )

    def __enter__(self) -> None:
        if self._scope is not None:
            self._scope.__enter__()

    def __exit__(self, *exc: Any) -> None:
        if self._scope is not None:
            self._scope.__exit__(*exc)


def assume(cond: Any) -> None:
    """Let the compiler assume `cond` for the rest of the enclosing block (not checked)."""
    b = _kernel_builder("T.assume")
    if isinstance(cond, bool):
        if not cond:
            raise DSLError("T.assume(False): the assumption never holds", b.span_here())
        return
    c = as_expr(cond)
    if not c.dtype.is_bool:
        c = compare("ne", c, 0)
    if isinstance(c, IntImm):
        if not c.value:
            raise DSLError("T.assume: the assumption is false", b.span_here())
        return
    b.emit(Evaluate(Call(ASSUME, (c,), DataType("bool"))))


_MASKS = {"r": 1, "w": 2, "rw": 3, 1: 1, 2: 2, 3: 3}


def access_ptr(
    base: Any, access_type: Any = "r", *extents: Any, offset: Any = 0, extent: Any = None, ignore_last_ndim: int = 0
) -> PrimExpr:
    """A pointer to `base` (a buffer, an element `A[i, j]` or a region) plus `offset` elements."""
    b = _kernel_builder("T.access_ptr")
    if access_type not in _MASKS:
        raise DSLError(f"T.access_ptr: access_type must be 'r', 'w', 'rw' or 1/2/3, got {access_type!r}", b.span_here())
    if isinstance(base, Buffer):
        buf, idx = base, tuple(IntImm(0) for _ in base.shape)
    elif isinstance(base, BufferLoad):
        buf, idx = base.buffer, base.indices
    elif isinstance(base, BufferRegion):
        buf, idx = base.buffer, tuple(r.begin for r in base.region)
    else:
        raise DSLError(
            f"T.access_ptr: base must be a buffer or an element of one, got {type(base).__name__}", b.span_here()
        )
    return pointer(buf, idx, offset)


def pointer(buf: Buffer, idx: tuple, offset: Any = 0) -> PrimExpr:
    """`address_of(buf[idx] + offset)` (the intrinsic both code generators print as `&ref`);
    a flat `offset` is applied row-major and split back into indices, so the bounds passes
    see the element the pointer really starts at."""
    idx = tuple(as_expr(i) for i in idx)
    off = as_expr(offset)
    if not (isinstance(off, IntImm) and off.value == 0):
        if buf.strides is not None:
            raise UnsupportedError(f"access_ptr: an offset into the strided buffer `{buf.name}`", None)
        flat: Any = IntImm(0)
        for i, d in zip(idx, buf.shape):
            flat = flat * d + i
        flat = flat + off
        out = []
        for d in reversed(buf.shape[1:]):
            out.append(flat % d)
            flat = flat // d
        idx = (flat, *reversed(out))
    return Call("address_of", (BufferLoad(buf, idx, buf.dtype),), DataType("handle"))


def buffer_access_ptr(
    buf: Buffer, access_mask: Any = "r", ptr_type: str = "handle", content_lanes: int = 1, offset: Any = 0,
    extent: Any = None,
) -> PrimExpr:  # fmt: skip
    """TVM's `Buffer.access_ptr(access_mask, ptr_type, content_lanes, offset, extent)`."""
    b = _kernel_builder("Buffer.access_ptr")
    if access_mask not in _MASKS:
        raise DSLError(f"access_ptr: access_mask must be 'r', 'w', 'rw' or 1/2/3, got {access_mask!r}", b.span_here())
    if content_lanes != 1 or ptr_type != "handle":
        raise UnsupportedError("access_ptr: only ptr_type='handle' with content_lanes=1 is supported", b.span_here())
    return pointer(buf, tuple(IntImm(0) for _ in buf.shape), offset)


def disable_warp_group_reg_alloc() -> None:
    """No automatic setmaxnreg in this kernel's warp-specialized form (sm_90a)."""
    b = _kernel_builder("T.disable_warp_group_reg_alloc")
    b.attrs["disable_warp_group_reg_alloc"] = True


__all__ = [
    "access_ptr",
    "assume",
    "attr",
    "call_extern",
    "call_intrin",
    "call_packed",
    "call_pure_extern",
    "disable_warp_group_reg_alloc",
    "evaluate",
    "import_source",
]
