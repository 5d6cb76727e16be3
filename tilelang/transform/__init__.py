"""Passes: one per file, each `def pass_name(func, ctx=None) -> PrimFunc`."""
