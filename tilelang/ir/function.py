"""`PrimFunc`: one kernel entry point.

`params` are global Buffers (tensors) and scalar Vars, in call order. Dynamic
dimensions are free Vars appearing in buffer shapes. `attrs` holds compile
metadata: `out_idx` (indices of params the runtime allocates), `layout_map`
(set by layout inference), `pass_configs`, ...
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .buffer import Buffer
from .expr import Var
from .node import EMPTY, FrozenDict, Node, span_field
from .span import Span
from .stmt import Stmt


@dataclass(frozen=True, eq=False)
class PrimFunc(Node):
    name: str
    params: tuple  # Buffer | Var
    body: Stmt
    attrs: FrozenDict = EMPTY
    span: Span = span_field()

    __hash__ = object.__hash__

    def with_body(self, body: Stmt) -> PrimFunc:
        return replace(self, body=body)

    def with_attrs(self, **kw) -> PrimFunc:
        return replace(self, attrs=self.attrs.set(**kw))

    @property
    def buffer_params(self) -> list[Buffer]:
        return [p for p in self.params if isinstance(p, Buffer)]

    @property
    def scalar_params(self) -> list[Var]:
        return [p for p in self.params if isinstance(p, Var)]

    def dynamic_vars(self) -> list[Var]:
        """Free Vars in parameter shapes, in first-appearance order."""
        from .visitor import free_vars_of

        seen: dict[Var, None] = {}
        for p in self.buffer_params:
            for d in p.shape:
                for v in free_vars_of(d):
                    seen.setdefault(v, None)
        param_ids = {id(p) for p in self.params}
        return [v for v in seen if id(v) not in param_ids]

    def script(self) -> str:
        from .printer import func_str

        return func_str(self)

    def __str__(self) -> str:
        return self.script()

    def __repr__(self) -> str:
        return f"<PrimFunc {self.name}>"

    def __call__(self, *args, **kwargs):
        from ..errors import DSLError

        raise DSLError(
            f"PrimFunc `{self.name}` cannot be called directly",
            self.span,
            "compile it first: tilelang.compile(func, out_idx=...) or decorate its factory with @tilelang.jit",
        )


__all__ = ["PrimFunc", "FrozenDict"]
