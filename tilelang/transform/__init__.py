"""Passes: one per file, each `def pass_name(func, ctx=None) -> PrimFunc`."""

from .legalize_memory_access import legalize_memory_access
from .lower_tile_ops import lower_tile_ops
from .pass_config import PassConfigKey
from .simplify import simplify, simplify_expr
from .verify import verify
