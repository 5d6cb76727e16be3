"""`tilelang.tvm.target`: only `Target(target, host=None)`, which builds a `tilelang.Target`."""

from __future__ import annotations

from typing import Any

from ..backend.target import Target as _Target
from ..backend.target import parse
from ..errors import UnsupportedError
from ._shim import caller_span, unsupported

_HOSTS = (None, "c", "llvm", "cpu")


class _TargetMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, _Target)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise unsupported(
            f"target.Target.{name}", "tilelang.tvm.target.Target is only the constructor Target(target, host=None)"
        )


class Target(metaclass=_TargetMeta):
    """`tvm.target.Target("cuda")`, `Target("cuda -arch=sm_90a")`, `Target({"kind": "cuda",
    "arch": "sm_80"})`, `Target("c")`: the same `tilelang.Target` that `target=` accepts. The
    host code of every kernel here is C, so `host` may only be "c" / "llvm" (or omitted)."""

    def __new__(cls, target: Any, host: Any = None) -> _Target:  # type: ignore[misc]
        h = host.kind if isinstance(host, _Target) else host
        if h not in _HOSTS:
            raise UnsupportedError(
                f"tvm.target.Target: host target {host!r} — host code here is always C",
                caller_span(2),
                'omit host, or pass "c" / "llvm"',
            )
        return parse(target)


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise unsupported(f"target.{name}", "tilelang.tvm.target provides only Target")


__all__ = ["Target"]
