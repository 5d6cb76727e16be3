"""Base machinery shared by all IR nodes: immutability, spans, child fields.

Requires nothing. Guarantees: every node class is a frozen dataclass whose
child-bearing fields are listed in `child_fields(cls)`, so visitors and
mutators can walk any node generically.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

from .span import NO_SPAN, Span

# The frontend installs a provider that maps the Python frame currently being
# traced to a Span; outside tracing every new node gets NO_SPAN unless given one.
# Per thread: kernels are traced and lowered concurrently (compile thread pools,
# the language server), and one thread's provider must never stamp another's nodes.
_local = threading.local()


def set_span_provider(fn: Callable[[], Span] | None) -> Callable[[], Span] | None:
    old = getattr(_local, "provider", None)
    _local.provider = fn
    return old


def current_span() -> Span:
    provider = getattr(_local, "provider", None)
    return provider() if provider is not None else NO_SPAN


def span_field() -> Any:
    return dataclasses.field(default_factory=current_span, compare=False, repr=False)


class Node:
    """Marker base class of every IR node."""

    __slots__ = ()


class FrozenDict(dict):
    """A hashable, read-only dict used for annotations and attributes."""

    def _blocked(self, *a, **k):
        raise TypeError("IR attribute dicts are immutable; build a new one with dict(d, key=value)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _blocked  # type: ignore

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted((k, _hashable(v)) for k, v in self.items())))

    def __reduce__(self):
        return (FrozenDict, (dict(self),))

    def set(self, **kw: Any) -> FrozenDict:
        return FrozenDict({**self, **kw})


def _hashable(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    try:
        hash(v)
        return v
    except TypeError:
        return id(v)


EMPTY = FrozenDict()

_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def child_fields(cls: type) -> tuple[str, ...]:
    """Names of the dataclass fields of `cls` (span excluded), cached."""
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls) if f.name != "span")
        _CHILD_FIELDS[cls] = names
    return names


def spans_in_walk_order(root: Any) -> list[Span]:
    """The span of every node reachable from `root` (itself first; tuples, lists and dict values
    followed; each node once), depth first in field order. Two IRs that print alike yield their
    spans in the same order, which is what lets one stand in for the other (the analysis memo,
    the cache's marker re-anchoring)."""
    out: list[Span] = []
    seen: set[int] = set()

    def walk(n: Any) -> None:
        if isinstance(n, Node):
            if id(n) in seen:
                return
            seen.add(id(n))
            s = getattr(n, "span", None)
            if s is not None:
                out.append(s)
            for name in child_fields(type(n)):
                walk(getattr(n, name))
        elif isinstance(n, tuple | list):
            for x in n:
                walk(x)
        elif isinstance(n, dict):
            for x in n.values():
                walk(x)

    walk(root)
    return out
