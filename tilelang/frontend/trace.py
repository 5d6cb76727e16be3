"""Tracing a Python kernel function into a `PrimFunc`.

Requires: a function whose source is available (a file, or text registered in
`linecache` by the analysis layer). Guarantees: the function body is rewritten
(ast_rewrite.py) with its original positions, executed once under a
`Builder`, and the collected statements become a PrimFunc whose every node
carries a span into the user's file. Errors raised by user code or by T.*
builders come out as `TileLangError`s pointing at the offending line.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import linecache
import threading
import types
from collections.abc import Callable
from typing import Any

from ..errors import DSLError, TileLangError
from ..ir.buffer import Buffer
from ..ir.function import PrimFunc
from ..ir.node import FrozenDict
from ..ir.span import Span
from . import runtime
from .ast_rewrite import rewrite_function
from .builder import Builder

_TREES: dict[tuple[str, str], ast.Module] = {}
_CODES: dict[int, tuple] = {}
_COMPILE_LOCK = threading.RLock()  # guards _TREES, _CODES and every ast.parse / AST compile here


def parse_file(filename: str, text: str | None = None) -> ast.Module:
    """Parse (and cache) the module `filename`; `text` overrides what is on disk."""
    if text is None:
        text = "".join(linecache.getlines(filename))
    key = (filename, hashlib.sha1(text.encode()).hexdigest())
    tree = _TREES.get(key)
    if tree is None:
        # CPython 3.11 converts between C and Python AST objects with a process-wide recursion
        # counter: two threads parsing at once can fail with "AST constructor recursion depth
        # mismatch" (fixed in 3.12). Every parse and AST compile of the tracer holds one lock.
        with _COMPILE_LOCK:
            tree = _TREES.get(key)
            if tree is None:
                tree = ast.parse(text, filename)
                if len(_TREES) > 256:
                    _TREES.clear()
                _TREES[key] = tree
    return tree


def find_function_node(func: Callable) -> tuple[ast.FunctionDef, str]:
    code = func.__code__
    filename = code.co_filename
    if not linecache.getlines(filename):
        try:
            filename = inspect.getsourcefile(func) or filename
        except TypeError:
            pass
    lines = linecache.getlines(filename)
    if not lines:
        raise DSLError(
            f"cannot find the source of kernel `{func.__name__}`",
            Span(filename, code.co_firstlineno),
            "kernels must be defined in a file (not typed at an interactive prompt or built with exec)",
        )
    tree = parse_file(filename)
    first = code.co_firstlineno
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func.__name__:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            if start == first or node.lineno == first:
                return node, filename
    raise DSLError(
        f"cannot locate the definition of `{func.__name__}` in {filename}",
        Span(filename, first),
        "was the file edited after it was imported? reload it",
    )


def _all_codes(code: types.CodeType) -> frozenset:
    """ids of `code` and every code object nested in it (lambdas, comprehensions)."""
    out = {id(code)}
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _all_codes(c)
    return frozenset(out)


def compile_rewritten(fn_node: ast.FunctionDef, filename: str) -> tuple[types.CodeType, frozenset, types.CodeType]:
    """Rewrite + compile a kernel function: (module code, ids of user code objects, function code)."""
    mod = ast.Module(body=[rewrite_function(fn_node)], type_ignores=[])
    code = compile(mod, filename, "exec", dont_inherit=True)
    fn_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    return code, _all_codes(fn_code), fn_code


def make_namespace(func: Callable | None, globals_: dict, closure: dict | None = None) -> dict:
    ns = dict(globals_)
    if func is not None and func.__closure__:
        for name, cell in zip(func.__code__.co_freevars, func.__closure__):
            try:
                ns[name] = cell.cell_contents
            except ValueError:  # empty cell
                pass
    if closure:
        ns.update(closure)
    ns["__tl__"] = runtime
    return ns


def rewritten_callable(func: Callable) -> tuple[Callable, frozenset]:
    """The rewritten version of `func`, bound to its globals and closure (compiled once per function)."""
    orig = func.__code__
    hit = _CODES.get(id(orig))
    if hit is None or hit[0] is not orig:  # the cached entry holds `orig`, so its id is not reused
        with _COMPILE_LOCK:  # kernels are traced from thread pools (parallel builds, autotuning)
            hit = _CODES.get(id(orig))
            if hit is None or hit[0] is not orig:
                node, filename = find_function_node(func)
                if len(_CODES) > 512:
                    _CODES.clear()
                hit = _CODES[id(orig)] = (orig, *compile_rewritten(node, filename))
    _, code, user_codes, _fn_code = hit
    ns = make_namespace(func, func.__globals__)
    exec(code, ns)
    return ns[func.__name__], user_codes


def run_traced(builder: Builder, fn: Callable, user_codes: frozenset, args: tuple, kwargs: dict) -> Any:
    """Execute a rewritten function under `builder`, converting user-code errors."""
    builder.user_codes |= user_codes
    with builder:
        try:
            return fn(*args, **kwargs)
        except TileLangError as err:
            raise err.with_span(_innermost_user_span(err, user_codes) or builder.span_here()) from None
        except RecursionError:
            raise
        except Exception as err:  # an error in user code while tracing
            span = _innermost_user_span(err, user_codes)
            if span is None:
                raise
            raise DSLError(f"{type(err).__name__}: {err}", span, _hint_for(err)) from err


def _innermost_user_span(err: BaseException, user_codes: frozenset) -> Span | None:
    from .builder import _position

    tb = err.__traceback__
    found = None
    while tb is not None:
        if id(tb.tb_frame.f_code) in user_codes:
            found = _position(tb.tb_frame.f_code, tb.tb_lasti)
        tb = tb.tb_next
    return found


def _hint_for(err: Exception) -> str:
    if isinstance(err, AttributeError) and "tilelang.language" in str(err):
        return "check the spelling; see the T.* reference in the README"
    if isinstance(err, NameError):
        return "define it, import it, or pass it as a parameter"
    if isinstance(err, TypeError) and "argument" in str(err):
        return "check the number and names of the arguments"
    return ""


def trace_prim_func(func: Callable, scope: dict | None = None) -> PrimFunc:
    """Lazy style: `@T.prim_func def main(A: T.Tensor(shape, dtype), ...)`."""
    from ..language.types import TensorType, declare_scalar_param

    fn, user_codes = rewritten_callable(func)
    builder = Builder(eager=False)
    sig = inspect.signature(func)
    if any(type(p.annotation) is str for p in sig.parameters.values()):
        # `from __future__ import annotations` in the user's file: evaluate them in the factory's scope
        ns = make_namespace(func, func.__globals__, scope)
        sig = sig.replace(
            parameters=[
                p.replace(annotation=eval(p.annotation, ns) if type(p.annotation) is str else p.annotation)
                for p in sig.parameters.values()
            ]
        )
    args = []
    params: list = []
    with builder:
        for name, p in sig.parameters.items():
            ann = p.annotation
            if p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise DSLError(f"parameter `{name}` of a prim_func must be a plain parameter", None)
            if isinstance(ann, TensorType):
                buf = ann.make_buffer(name)
            else:
                buf = declare_scalar_param(name, ann)
            params.append(buf)
            args.append(buf)
    run_traced(builder, fn, user_codes, tuple(args), {})
    return finish(builder, func.__name__, params, span_of(func))


def span_of(func: Callable) -> Span:
    code = func.__code__
    return Span(code.co_filename, code.co_firstlineno, 0, code.co_firstlineno, 0)


def finish(builder: Builder, name: str, params: list, span: Span, attrs: dict | None = None) -> PrimFunc:
    from ..transform.frontend_checks import check_traced

    body = builder.frames[0].body()
    all_attrs = dict(attrs or {})
    all_attrs.update(builder.attrs)
    func = PrimFunc(name, tuple(params), body, FrozenDict(all_attrs), span)
    check_traced(func)
    return func


def is_buffer(x: Any) -> bool:
    return isinstance(x, Buffer)
