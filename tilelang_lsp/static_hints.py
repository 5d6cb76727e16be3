"""Hints without running anything (trust "none"): allocations whose shape and dtype are
literal once the kernel's bindings and the factory's literal constants are known.

The result has the `KernelInfo` dict shape the renderer reads; layouts, registers,
lowering decisions and resource checks need the compiler and are absent.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from .literals import module_constants, try_eval

_ALLOCS = {
    "alloc_shared": "shared.dyn",
    "alloc_fragment": "local.fragment",
    "alloc_local": "local",
    "alloc_var": "local.var",
}
_BITS = {"bool": 8, "float8_e4m3": 8, "float8_e5m2": 8, "float8_e4m3fn": 8, "float8_e5m2fnuz": 8, "float8_e4m3fnuz": 8}


def _bits(dtype: str) -> int | None:
    if dtype in _BITS:
        return _BITS[dtype]
    digits = "".join(c for c in dtype if c.isdigit())
    return int(digits) if digits else None


def _loc(node: ast.AST) -> dict:
    return {
        "line": node.lineno,
        "col": node.col_offset,
        "end_line": node.end_lineno or node.lineno,
        "end_col": node.end_col_offset or node.col_offset + 1,
    }


def static_info(fn, module_env: dict[str, Any], lang_aliases: set[str]) -> dict:
    """`fn` is a bindings.KernelFunction with its ast node."""
    node = fn.node
    env = {**module_env, **fn.bindings}
    envs: dict[int, dict] = {}

    def scope_env(f: ast.AST, outer: dict) -> None:
        here = {**outer, **module_constants(f.body, outer)}
        envs[id(f)] = here
        for child in ast.walk(f):
            if child is not f and isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) and id(child) not in envs:
                scope_env(child, here)

    scope_env(node, env)
    buffers = []
    for f in [n for n in ast.walk(node) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]:
        fenv = envs.get(id(f), env)
        for st in ast.walk(f):
            if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)):
                continue
            call = st.value
            if not (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr in _ALLOCS
                and isinstance(call.func.value, ast.Name)
                and call.func.value.id in lang_aliases
                and call.args
            ):
                continue
            scope = _ALLOCS[call.func.attr]
            shape_node = call.args[0]
            dtype_node = (
                call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "dtype"), None)
            )
            elts = shape_node.elts if isinstance(shape_node, ast.Tuple | ast.List) else [shape_node]
            if scope == "local.var":
                elts = []
            dims = [try_eval(e, fenv) for e in elts]
            shape = [v if ok and isinstance(v, int) else None for ok, v in dims]
            ok, dtype = try_eval(dtype_node, fenv) if dtype_node is not None else (False, None)
            dtype = dtype if ok and isinstance(dtype, str) else "?"
            bits = _bits(dtype)
            nbytes = math.prod(shape) * bits // 8 if bits and None not in shape else None
            buffers.append(
                {
                    "name": st.targets[0].id,
                    "scope": scope,
                    "dtype": dtype,
                    "shape": shape,
                    "shape_text": [ast.unparse(e) for e in elts],
                    "bytes": nbytes,
                    "stages": 1,
                    "layout": "",
                    "layout_detail": "",
                    "regs_per_thread": None,
                    "loc": _loc(st),
                }  # fmt: skip
            )
    return {
        "function": fn.name, "loc": _loc(node), "kernel_loc": None, "bindings": dict(fn.bindings), "unresolved": [],
        "buffers": buffers, "ops": [], "resources": None, "diagnostics": [],
    }  # fmt: skip
