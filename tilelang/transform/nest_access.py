"""How a `T.Parallel` nest's indices tie its iterations to a tile's elements, and
the layouts that tie implies — with unit dimensions first-class.

A nest over `(i, j)` reading `x[i, j]` walks `x` *exactly*: one iteration per
element, so the loop can run where `x` lives (`loop_from_fragment`) and a free
`x` can live where the loop runs (`implied`). A nest reading `s[i]` walks a
*projection* of itself: `s` must be held by every thread of the row.

Unit dimensions take part as any other. With `block_M = 1` a row kernel's
`T.Parallel(1, N)` over a fragment of shape `(1, N)` reads `x[0, j]` once
`simplify` has replaced the loop variable that only takes the value 0 by that
value; `T.Parallel(1)` writes `s[0]`. Such an access is still exact: a buffer
dimension of extent 1 indexed by the constant 0 (or by a loop variable of
extent 1) needs no loop variable, and a loop variable of extent 1 needs no
buffer dimension — the only value it takes is 0. `access_perm` states the
rule; the layouts built from it substitute 0 for what is left unpaired.
"""

from __future__ import annotations

from typing import Any

from ..ir.expr import IntImm, Var, const_int
from ..layout import Fragment
from ..layout._expr import substitute as lsub


def covers(layout_shape: tuple, shape: tuple) -> bool:
    """A layout over `layout_shape` can hold a tile of `shape` (padding allowed)."""
    return len(layout_shape) == len(shape) and all(a >= b for a, b in zip(layout_shape, shape))


def access_perm(indices: tuple, loop_vars: tuple, extents: tuple, shape: tuple) -> tuple | None:
    """How an access `buf[indices]` in a nest over `loop_vars` (of `extents`) walks a
    buffer of `shape` exactly, or None when it does not: `perm[d]` is the position of
    the loop variable indexing buffer dim `d`, or None for a dim of extent 1 indexed by
    the constant 0. Every loop variable of an extent other than 1 indexes exactly one
    dim; a loop variable of extent 1 may index none (it is 0). `shape` may be None when
    unknown (then only plain loop variables match)."""
    perm: list = []
    for d, ix in enumerate(indices):
        hit = [k for k, v in enumerate(loop_vars) if ix is v]
        if hit:
            perm.append(hit[0])
        elif shape is not None and d < len(shape) and const_int(shape[d]) == 1 and const_int(ix) == 0:
            perm.append(None)
        else:
            return None
    used = [p for p in perm if p is not None]
    if len(set(used)) != len(used):
        return None
    for k, e in enumerate(extents):
        if k not in used and const_int(e) != 1:
            return None
    return tuple(perm)


def loop_from_fragment(F: Fragment, perm: tuple, ext: tuple) -> Fragment | None:
    """The loop layout of a nest over `ext` that walks F exactly as `perm` says
    (`access_perm`): each iteration runs on the threads holding the element it touches."""
    fshape = tuple(F.shape)
    lshape = [1] * len(ext)
    for d, p in enumerate(perm):
        if p is not None:
            lshape[p] = fshape[d]
    if not covers(tuple(lshape), tuple(ext)):
        return None
    lv = tuple(Var(f"v{k}") for k in range(len(ext)))
    m = {fv: (IntImm(0) if p is None else lv[p]) for fv, p in zip(F.get_forward_vars(), perm)}
    thread = lsub(F.thread, m)
    local = tuple(lsub(e, m) for e in F.index)
    return Fragment.from_exprs(
        tuple(lshape),
        lv,
        thread,
        local,
        F.replicate_size,
        F.get_rep_var(),
        {"origin": F.meta.get("origin", "fragment")},
    )


def implied(L: Fragment, indices: tuple, loop_vars: tuple, extents: tuple, shape: tuple) -> Fragment | None:
    """Layout a fragment of `shape` must have to be indexed `indices` by the threads of
    loop layout L of a nest over `loop_vars` (of `extents`): an exact walk
    (`access_perm`) or an in-order projection (a subset of the loop variables,
    constant 0s in unit dims)."""
    lvars = L.get_forward_vars()
    perm = access_perm(indices, loop_vars, extents, shape)
    if perm is not None:
        lshape = tuple(1 if p is None else L.shape[p] for p in perm)
        if not covers(lshape, tuple(shape)):
            return None
        fv = tuple(Var(f"d{k}") for k in range(len(shape)))
        m: dict = {lv: IntImm(0) for lv in lvars}  # loop dims the access leaves out only take the value 0
        m.update({lvars[p]: fv[d] for d, p in enumerate(perm) if p is not None})
        return Fragment.from_exprs(
            lshape, fv, lsub(L.thread, m), tuple(lsub(e, m) for e in L.index), L.replicate_size, L.get_rep_var(),
            {"origin": L.meta.get("origin", "loop")},
        )  # fmt: skip
    return _projection(L, indices, loop_vars, shape)


def _projection(L: Fragment, indices: tuple, loop_vars: tuple, shape: tuple) -> Fragment | None:
    used = []
    for d, i in enumerate(indices):
        hit = [k for k, v in enumerate(loop_vars) if i is v]
        if hit:
            used.append((d, hit[0]))
        elif const_int(i) == 0 and shape[d] == 1:
            continue
        else:
            return None
    ks = [k for _, k in used]
    if ks != sorted(ks) or len(set(ks)) != len(ks):
        return None
    drop = tuple(k for k in range(len(loop_vars)) if k not in ks)
    if not drop:
        return None
    try:
        R = L.reduce_dims(drop, keepdims=False)
    except (ValueError, TypeError):
        return None
    # R is over the kept loop dims in order (or (1,) when none is kept); insert unit dims of the buffer.
    fv = tuple(Var(f"d{k}") for k in range(len(shape)))
    rv = R.get_forward_vars()
    m: dict[Any, Any]
    if used:
        m = {rv[n]: fv[d] for n, (d, _) in enumerate(used)}
    else:
        m = {rv[0]: IntImm(0)}
    rshape = list(shape)
    for d, k in used:
        if shape[d] > L.shape[k]:
            return None
        rshape[d] = L.shape[k]
    return Fragment.from_exprs(
        tuple(rshape), fv, lsub(R.thread, m), tuple(lsub(e, m) for e in R.index), R.replicate_size, R.get_rep_var(),
        {"origin": "projection of a T.Parallel loop"},
    )  # fmt: skip
