"""ast_print: print the tile IR when `tl.ast_print_enable` is set.

Requires: any PrimFunc. Guarantees: the function is returned unchanged; with
`tl.ast_print_enable`, its printed IR (`PrimFunc.script()`) goes to stdout,
headed by the kernel name. Run first in every target's pipeline, so what is
printed is what the passes receive.
"""

from __future__ import annotations

from ..ir.function import PrimFunc
from ..pass_config import in_force
from .context import CompileContext


def ast_print(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    if in_force(func, ctx).get("tl.ast_print_enable"):
        print(f"# tile IR of `{func.name}` (tl.ast_print_enable)\n{func.script()}")
    return func
