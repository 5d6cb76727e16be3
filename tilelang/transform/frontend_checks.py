"""Checks run right after tracing, before any pass.

Requires: a freshly traced PrimFunc. Guarantees: the function has at least one
`KernelLaunch` (a kernel that never opens `T.Kernel` is a user error). Several
launches in sequence are split into single-kernel functions before any pass
(`transform/split_kernels.py`), so every pass still sees exactly one.
"""

from __future__ import annotations

from ..errors import DSLError
from ..ir.function import PrimFunc
from ..ir.stmt import KernelLaunch
from ..ir.visitor import collect


def check_traced(func: PrimFunc) -> None:
    kernels = collect(func.body, lambda n: isinstance(n, KernelLaunch))
    if not kernels:
        raise DSLError(
            f"kernel `{func.name}` has no `with T.Kernel(...)` block",
            func.span,
            "wrap the body in `with T.Kernel(grid..., threads=128) as (bx, by):`",
        )
