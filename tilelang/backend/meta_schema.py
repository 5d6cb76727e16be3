"""Checks for launch metadata read back from the kernel cache.

Why: `meta.json` comes from disk; a damaged or edited one must make the cache rebuild
the entry, not crash the loader later with a KeyError deep in a launcher (or feed a
wrong value to a launch). Each backend's `check_meta` is written with these helpers;
each raises `ValueError` naming the field.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")


def need(cond: bool, what: str) -> None:
    if not cond:
        raise ValueError(f"launch metadata: {what}")


def is_int(x: Any, lo: int = -(1 << 63), hi: int = 1 << 63) -> bool:
    return type(x) is int and lo <= x < hi


def field(meta: dict, name: str, check: Callable[[Any], bool], what: str, optional: bool = False) -> Any:
    """`meta[name]` after checking it with `check` (absent is fine when `optional`)."""
    if name not in meta:
        need(optional, f"`{name}` is missing")
        return None
    value = meta[name]
    need(check(value), f"`{name}` must be {what}, got {value!r:.80}")
    return value


def is_identifier(x: Any) -> bool:
    return type(x) is str and _IDENT.fullmatch(x) is not None


def is_list_of(x: Any, check: Callable[[Any], bool], max_len: int = 1 << 16) -> bool:
    return type(x) is list and len(x) <= max_len and all(check(v) for v in x)
