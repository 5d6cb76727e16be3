"""Tiny helpers to build tile IR by hand (no frontend) for backend tests."""

from __future__ import annotations

from tilelang.ir import (
    Allocate,
    Buffer,
    BufferRegion,
    For,
    IntImm,
    KernelLaunch,
    PrimFunc,
    Range,
    Span,
    Var,
    as_expr,
    make_buffer,
    seq,
)

SPAN = Span("kernel.py", 1)


def tensor(name: str, shape, dtype: str = "float32") -> Buffer:
    return make_buffer(name, shape, dtype, "global")


def alloc(name: str, shape, dtype: str = "float32", scope: str = "local.fragment", init=None, **ann):
    from tilelang.ir import FrozenDict

    buf = make_buffer(name, shape, dtype, scope)
    return buf, Allocate(buf, None if init is None else as_expr(init, buf.dtype), FrozenDict(ann))


def region(buf: Buffer, *ranges) -> BufferRegion:
    """region(A, (b0, e0), (b1, e1)); a bare index means extent 1."""
    rs = []
    for r in ranges:
        if isinstance(r, tuple):
            rs.append(Range(as_expr(r[0]), as_expr(r[1])))
        else:
            rs.append(Range(as_expr(r), IntImm(1)))
    return BufferRegion(buf, tuple(rs))


def full(buf: Buffer) -> BufferRegion:
    return buf.full_region()


def loops(extents, fn, kind: str = "parallel", names: str = "ijkl"):
    vs = [Var(names[i]) for i in range(len(extents))]
    body = fn(*vs)
    if isinstance(body, (list, tuple)):
        body = seq(*body)
    for v, e in reversed(list(zip(vs, extents))):
        body = For(v, IntImm(0), as_expr(e), kind, body)
    return body


def kernel(name: str, params, grid, body_fn, threads: int = 128) -> PrimFunc:
    """`body_fn(*block_vars)` returns a statement or a list of statements."""
    names = ("bx", "by", "bz")
    bvars = tuple(Var(names[i]) for i in range(len(grid)))
    body = body_fn(*bvars)
    if isinstance(body, (list, tuple)):
        body = seq(*body)
    launch = KernelLaunch(tuple(as_expr(g) for g in grid), bvars, (threads, 1, 1), body)
    return PrimFunc(name, tuple(params), launch)


def ceildiv(a: int, b: int) -> int:
    return (a + b - 1) // b
