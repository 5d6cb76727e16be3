"""Stable, JSON-able descriptions of Python values, for tuning-cache keys.

A value is *stable* when its description is the same in every process that
sees the same program: numbers, strings, dtypes, enums, containers of those,
tensors (described by shape/dtype/device, never by contents), and module-level
functions (by qualified name + a hash of their source). Lambdas, closures and
objects whose repr is an address are not: `stable()` raises `Unstable`, and
the caller turns disk caching off.
"""

from __future__ import annotations

import enum
import hashlib
import inspect
import json
import types
from typing import Any


class Unstable(ValueError):
    """The value has no identity that survives a process restart."""


def source_hash(obj: Any) -> str:
    try:
        src = inspect.getsource(obj)
    except (OSError, TypeError) as err:
        raise Unstable(f"no source for {obj!r}") from err
    return hashlib.sha256(src.encode()).hexdigest()[:16]


def callable_identity(fn: Any) -> str:
    """`module.qualname#srchash` for an importable function or class; else Unstable."""
    inner = getattr(fn, "func", None) if type(fn).__name__ in ("JITImpl", "AutoTuneImpl") else None
    if inner is not None:
        return callable_identity(inner)
    qual = getattr(fn, "__qualname__", None)
    mod = getattr(fn, "__module__", None)
    if not qual or not mod or "<lambda>" in qual or "<locals>" in qual:
        raise Unstable(f"{fn!r} is a lambda or a local function")
    return f"{mod}.{qual}#{source_hash(fn)}"


def tensor_desc(t: Any) -> dict:
    return {
        "tensor": [int(d) for d in t.shape],
        "dtype": str(t.dtype).removeprefix("torch."),
        "device": getattr(t.device, "type", str(t.device)),
    }


def _is_tensor(v: Any) -> bool:
    return type(v).__name__ in ("Tensor", "Parameter", "TensorStub") and hasattr(v, "shape")


def stable(v: Any) -> Any:
    """A JSON-able description of `v` (see module docstring)."""
    if v is None or isinstance(v, (bool, int, float)):
        return v
    if isinstance(v, enum.Enum):
        return f"{type(v).__qualname__}.{v.name}"
    if isinstance(v, str):
        return str(v)
    if isinstance(v, (list, tuple)):
        return [stable(x) for x in v]
    if isinstance(v, (set, frozenset)):
        return sorted((stable(x) for x in v), key=repr)
    if isinstance(v, dict):
        return [[stable(k), stable(x)] for k, x in sorted(v.items(), key=lambda kv: repr(kv[0]))]
    if _is_tensor(v):
        return tensor_desc(v)
    if isinstance(v, types.ModuleType):
        return f"module:{v.__name__}"
    if hasattr(v, "to_dict") and type(v).__name__ == "Target":
        return v.to_dict()
    if callable(v):
        return callable_identity(v)
    text = repr(v)
    if " at 0x" in text or " object at " in text:
        raise Unstable(f"{text} has no stable identity")
    return f"{type(v).__qualname__}:{text}"


def freeze(v: Any) -> Any:
    """A hashable in-memory key for `v` (tensors by shape/dtype/device)."""
    if _is_tensor(v):
        return ("tensor", tuple(int(d) for d in v.shape), str(v.dtype), getattr(v.device, "type", str(v.device)))
    if isinstance(v, dict):
        return tuple(sorted(((k, freeze(x)) for k, x in v.items()), key=repr))
    if isinstance(v, (list, tuple)):
        return tuple(freeze(x) for x in v)
    if isinstance(v, (set, frozenset)):
        return frozenset(freeze(x) for x in v)
    try:
        hash(v)
    except TypeError:
        return ("unhashable", type(v).__qualname__, id(v))
    return v


def closure_constants(fn: Any) -> list:
    """Stable descriptions of the values captured in `fn`'s closure cells (Unstable if one has none)."""
    code = getattr(fn, "__code__", None)
    out = []
    for name, cell in zip(code.co_freevars if code else (), getattr(fn, "__closure__", None) or ()):
        try:
            value = cell.cell_contents
        except ValueError:  # empty cell
            out.append([name, "<empty>"])
            continue
        out.append([name, stable(value)])
    return out


def digest(parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
