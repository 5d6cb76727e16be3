"""Which buffers are views of which: the alias facts every pass that reasons about storage reads.

A view is declared by an `Allocate` annotated `view_of` (see `language/views.py`): it owns
no memory. Passes rebuild buffers (a flattened shared tile keeps its name but is a new
object; a multi-buffered one grows a stage dimension), so the annotation's base is matched
to the current IR first by identity, then by its unique name in the same scope, and the
sizes recorded when the view was made must still hold: when a pass changed them (the tile
is multi-buffered by `T.Pipelined`), the view no longer describes its base, and
`alias_roots` stops with an `unsupported` error at the view instead of aliasing the wrong
bytes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import UnsupportedError
from ..ir.buffer import Buffer
from ..ir.expr import const_int
from ..ir.stmt import Allocate
from ..ir.visitor import collect

VIEW_KEY = "view_of"


def is_view(a: Any) -> bool:
    return isinstance(a, Allocate) and a.annotations.get(VIEW_KEY) is not None


def view_allocs(body: Any) -> list:
    return collect(body, is_view)


def _bytes(b: Buffer) -> int:
    n = b.dtype.bits * b.dtype.lanes
    for d in b.shape:
        c = const_int(d)
        if c is None:
            return -1
        n *= c
    return (n + 7) // 8


def alias_roots(body: Any, params: tuple = ()) -> dict:
    """view buffer → the buffer (current object) whose storage it names. Empty without views."""
    views = view_allocs(body)
    if not views:
        return {}
    declared = [a.buffer for a in collect(body, lambda n: isinstance(n, Allocate) and not is_view(n))]
    declared += [p for p in params if isinstance(p, Buffer)]
    ids = {id(b) for b in declared}
    out: dict = {}
    for a in views:
        base = a.annotations[VIEW_KEY]
        if id(base) not in ids:
            same = [b for b in declared if b.name == base.name and b.scope == base.scope]
            if len(same) != 1:
                raise UnsupportedError(
                    f"view `{a.buffer.name}` of `{base.name}`: the compiler rebuilt `{base.name}` in a way the "
                    "view cannot follow",
                    a.span,
                    "declare the view right after its base, or copy into a buffer of the view's shape",
                )
            base = same[0]
        if base.scope != "global":
            recorded = (a.annotations.get("view_bytes"), a.annotations.get("base_bytes"))
            if recorded != (_bytes(a.buffer), _bytes(base)):
                raise UnsupportedError(
                    f"view `{a.buffer.name}` of `{base.name}`: a pass changed the size of one of them "
                    f"({recorded[0]} / {recorded[1]} bytes → {_bytes(a.buffer)} / {_bytes(base)}), as T.Pipelined "
                    "does when it multi-buffers a tile it loads",
                    a.span,
                    "use the view outside the pipelined loop, or load into the view's own buffer "
                    "(T.alloc_shared) inside it",
                )
        out[a.buffer] = base
    return out


def roots_or_empty(func: Any) -> dict:
    """`alias_roots` of a function mid-pipeline, or {} where a view no longer matches its base
    (the pass that needs the match reports it at the view)."""
    try:
        return alias_roots(func.body, func.params)
    except UnsupportedError:
        return {}


def storage_groups(roots: dict) -> dict:
    """root buffer → [its views] (for passes that treat one storage at a time)."""
    groups: dict = {}
    for v, r in roots.items():
        groups.setdefault(r, []).append(v)
    return groups


# The alias map of the function a pass is working on, for helpers that summarise accesses
# statement by statement without the function at hand (`inject_sync.collect_accesses`).
_local = threading.local()


def current_roots() -> dict:
    return getattr(_local, "roots", None) or {}


@contextmanager
def roots_in_force(roots: dict) -> Iterator[None]:
    prev = getattr(_local, "roots", None)
    _local.roots = roots
    try:
        yield
    finally:
        _local.roots = prev
