"""The compile context every pass receives: one frozen object instead of a dict.

`CompileContext(target, pass_configs, options, trace)`:
- `target`: the resolved `backend.target.Target` the function is compiled for (None: the pass
  falls back to the function's own `target` attribute, see `backend.target.target_of`);
- `pass_configs`: the caller's `pass_configs` (string keys; `pass_config.in_force` merges them
  over the function's own);
- `options`: the other compile options (`compile_flags`, `build_dir`);
- `trace`: an optional `trace(pass_name, func)` callback the `PassRunner` calls after each pass.

`CompileContext.of(x)` accepts a `CompileContext`, None, or a dict with those keys (what tests
and older callers pass), so a pass can be called directly as `some_pass(func, {"target": t})`.
Guarantees: a context never changes once made (`with_` returns a new one); its mappings are
read-only views.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

_OPTION_KEYS = ("compile_flags", "build_dir")


@dataclass(frozen=True)
class CompileContext:
    target: Any = None  # a backend.target.Target (or None)
    pass_configs: Mapping = field(default_factory=dict)
    options: Mapping = field(default_factory=dict)
    trace: Callable | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.target is not None:
            from ..backend.target import parse

            object.__setattr__(self, "target", parse(self.target))
        object.__setattr__(self, "pass_configs", MappingProxyType(dict(self.pass_configs or {})))
        object.__setattr__(self, "options", MappingProxyType(dict(self.options or {})))

    @staticmethod
    def of(ctx: Any = None) -> CompileContext:
        """`ctx` as a context: a CompileContext as is, None as the empty one, a dict by its keys
        (`target`, `pass_configs`, `trace`, and the option keys `compile_flags`, `build_dir`)."""
        if isinstance(ctx, CompileContext):
            return ctx
        if ctx is None:
            return _DEFAULT
        if isinstance(ctx, Mapping):
            unknown = set(ctx) - {"target", "pass_configs", "trace", "options", *_OPTION_KEYS}
            if unknown:
                raise TypeError(f"unknown compile-context keys {sorted(unknown)}")
            options = dict(ctx.get("options") or {})
            options.update({k: ctx[k] for k in _OPTION_KEYS if k in ctx})
            return CompileContext(ctx.get("target"), ctx.get("pass_configs") or {}, options, ctx.get("trace"))
        raise TypeError(f"a compile context is a CompileContext or a dict, got {type(ctx).__name__}")

    def with_(self, **changes: Any) -> CompileContext:
        return replace(self, **changes)

    @property
    def compile_flags(self) -> list:
        return list(self.options.get("compile_flags") or ())

    @property
    def build_dir(self) -> str | None:
        d = self.options.get("build_dir")
        return str(d) if d else None


_DEFAULT = CompileContext()
