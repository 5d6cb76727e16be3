"""`@tilelang.jit`: the two kernel styles.

- Lazy: a factory that returns a PrimFunc — its own inner `@T.prim_func def main(...)`
  or one a helper builds. Calling the factory returns a `JITKernel` (memoised per
  arguments). Which style a function is: `style.py`.
- Eager: the decorated function *is* the kernel body; tensor parameters are
  annotated in the body (`A: T.Tensor((M, K), dtype)`), `T.const` symbols are
  bound from tensor shapes or keyword arguments, `T.empty` declares outputs.
  Calling it compiles once per specialisation and runs.

Tracing happens in two phases for eager kernels: phase 1 traces once per
tuple of compile-time values (with `T.const` as symbols), phase 2 substitutes
the const values read from tensors — so a new problem size does not re-trace.
"""

from __future__ import annotations

import ast
import functools
import inspect
from collections.abc import Callable
from typing import Any

from ..engine.callback import GENERATION as _PP_GEN
from ..errors import DSLError
from ..frontend.builder import Builder
from ..frontend.trace import find_function_node, finish, rewritten_callable, run_traced, span_of
from ..ir.buffer import Buffer
from ..ir.expr import IntImm, Var
from ..ir.function import PrimFunc
from ..ir.visitor import substitute
from ..language.types import TensorPlaceholder
from .binding import bind_call, const_value, missing_arguments, unexpected_keyword
from .exceptions import EagerJITBuildError, JITNoBuilderError
from .kernel import JITKernel
from .style import static_style


class _BecameEager(Exception):
    """Raised by the lazy path when a function called as a factory turned out to be a kernel body."""


def _freeze(v: Any) -> Any:
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, set):
        return frozenset(_freeze(x) for x in v)
    try:
        hash(v)
    except TypeError as err:
        raise TypeError(f"compile-time argument {v!r} is not hashable") from err
    return v


def _arg_key(v: Any) -> Any:
    # a tensor contributes its shape only: that is all specialisation reads from it (the
    # kernel's own checks cover dtype, device and strides on every call)
    if type(v).__name__ in ("Tensor", "Parameter"):
        return (type(v), v.shape)
    return (type(v), v)


def _call_signature(args: tuple, kwargs: dict) -> Any:
    """A hashable key that fixes everything an eager call's specialisation depends on, or
    None when an argument is not hashable (such calls always take the full path)."""
    try:
        sig = tuple(_arg_key(a) for a in args)
        if kwargs:
            sig += tuple((k, _arg_key(v)) for k, v in kwargs.items())
        hash(sig)
    except TypeError:
        return None
    return sig


def _tensor_params(fn_node: ast.FunctionDef, sig: inspect.Signature) -> set[str]:
    """Parameters annotated as tensors — in the body (`A: T.Tensor(...)`) or the signature."""
    names = set(sig.parameters)
    found = set()
    for stmt in ast.walk(fn_node):
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id in names:
            found.add(stmt.target.id)
    for p in sig.parameters.values():
        if p.annotation is not inspect.Parameter.empty and type(p.annotation).__name__ == "TensorType":
            found.add(p.name)
    return found


class JITImpl:
    def __init__(
        self,
        func: Callable,
        out_idx: Any = None,
        target: Any = None,
        pass_configs: dict | None = None,
        compile_flags: Any = None,
        execution_backend: str | None = None,
        verbose: bool | None = None,
        debug_root_path: str | None = None,
        target_host: Any = None,
    ) -> None:
        self.func = func
        self.out_idx = out_idx
        self.target = target
        self.pass_configs = dict(pass_configs or {})
        self.compile_flags = compile_flags
        self.execution_backend = execution_backend or "auto"
        self.verbose = bool(verbose)
        self.debug_root_path = debug_root_path
        self.signature = inspect.signature(func)
        self._node = None
        self._mode: str | None = None
        self._by_return = False  # mode still to be confirmed by what the first call returns
        self._tensor_names: set[str] = set()
        self._kernels: dict = {}
        self._templates: dict = {}
        # eager calls: call signature (types, tensor shapes, constant values) -> (kernel, where
        # each kernel input sits in the call), so a repeated call skips specialisation
        self._calls: dict = {}
        self._pp_gen = _PP_GEN[0]
        functools.update_wrapper(self, func)

    # -- mode -----------------------------------------------------------------
    @property
    def mode(self) -> str:
        """'lazy' or 'eager' (`tilelang.jit.style`): from the source where it tells, else 'lazy'
        until the first call shows the function does not return a PrimFunc but traces a kernel."""
        if self._mode is None:
            try:
                node, _ = find_function_node(self.func)
            except DSLError:
                node = None  # no source: it can only be a factory (an eager body is traced from source)
            self._node = node
            style = static_style(self.func, node, self.signature)
            self._by_return = style is None
            self._set_mode(style or "lazy")
        return self._mode

    def _set_mode(self, mode: str) -> None:
        if mode == "eager":
            if self.out_idx is not None:
                raise ValueError(
                    f"@tilelang.jit(out_idx=...) is for factories that return a @T.prim_func; "
                    f"`{self.func.__name__}` is an eager kernel — declare outputs with T.empty and return them"
                )
            if self._node is None:
                self._node, _ = find_function_node(self.func)  # raises the missing-source error
            self._tensor_names = _tensor_params(self._node, self.signature)
        else:
            self._tensor_names = set()
        self._mode = mode

    def is_lazy_mode(self) -> bool:
        return self.mode == "lazy"

    # -- public API -------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.mode == "lazy":
            try:
                return self._lazy_kernel(args, kwargs)
            except _BecameEager:
                pass
        if self._pp_gen != _PP_GEN[0]:  # a source postproc hook changed: no kernel built before it is reused
            self._calls.clear()
            self._pp_gen = _PP_GEN[0]
        sig = _call_signature(args, kwargs)
        hit = self._calls.get(sig) if sig is not None else None
        if hit is not None:
            kernel, picks = hit
            return kernel(*[args[i] if type(i) is int else kwargs[i] for i in picks])
        kernel, inputs, names = self._eager_kernel(args, kwargs, require_tensors=True)
        if sig is not None:
            order = {n: i for i, n in enumerate(self.signature.parameters)}
            self._calls[sig] = (kernel, [order[n] if order[n] < len(args) else n for n in names])
        return kernel(*inputs)

    def compile(self, *args: Any, **kwargs: Any) -> JITKernel:
        """The kernel for these arguments, built without running. `target=` (when the function
        has no parameter of that name) builds for that target instead of the decorator's."""
        target = None
        if "target" in kwargs and "target" not in self.signature.parameters:
            kwargs = dict(kwargs)
            target = kwargs.pop("target")
        if self.mode == "lazy":
            try:
                return self._lazy_kernel(args, kwargs, target)
            except _BecameEager:
                pass
        return self._eager_kernel(args, kwargs, require_tensors=False, target=target)[0]

    def get_tir(self, *args: Any, **kwargs: Any) -> PrimFunc:
        if self.mode == "lazy":
            try:
                return self._lazy_func(args, kwargs)
            except _BecameEager:
                pass
        return self._eager_func(args, kwargs)

    def get_kernel_source(self, *args: Any, **kwargs: Any) -> str:
        return self.compile(*args, **kwargs).get_kernel_source()

    def par_compile(self, configs: Any, num_workers: int | None = None, ignore_error: bool = False) -> list:
        from concurrent.futures import ThreadPoolExecutor

        def one(cfg: Any) -> Any:
            try:
                return self.compile(**cfg) if isinstance(cfg, dict) else self.compile(*cfg)
            except Exception:
                if ignore_error:
                    return None
                raise

        with ThreadPoolExecutor(num_workers or min(8, len(configs) or 1)) as ex:
            return list(ex.map(one, configs))

    def _compile(self, func: PrimFunc, out_idx: Any, target: Any = None) -> JITKernel:
        return JITKernel(
            func,
            out_idx=out_idx,
            target=self.target if target is None else target,
            pass_configs=self.pass_configs,
            compile_flags=self.compile_flags,
            execution_backend=self.execution_backend,
            verbose=self.verbose,
        )

    # -- lazy -------------------------------------------------------------------
    def _lazy_func(self, args: tuple, kwargs: dict) -> PrimFunc:
        try:
            func = self.func(*args, **kwargs)
        except JITNoBuilderError:
            if not self._by_return:
                raise
            # T.Kernel & co. outside a trace: not a factory but a kernel body with no eager marker
            # in its own source (say, all of it in a macro); trace it as one
            self._by_return = False
            self._set_mode("eager")
            raise _BecameEager from None
        if not isinstance(func, PrimFunc):
            raise TypeError(
                f"@tilelang.jit factory `{self.func.__name__}` must return a @T.prim_func (built inline or by a "
                f"helper), got {type(func).__name__}; an eager kernel annotates its tensors in the body "
                f"(`A: T.Tensor(...)`) and returns its T.empty outputs"
            )
        self._by_return = False  # settled: it returns a PrimFunc
        return func

    def _lazy_kernel(self, args: tuple, kwargs: dict, target: Any = None) -> JITKernel:
        key = (_freeze(args), _freeze(kwargs), _PP_GEN[0]) + (() if target is None else (_freeze(target),))
        hit = self._kernels.get(key)
        if hit is None:
            hit = self._compile(self._lazy_func(args, kwargs), self.out_idx, target)
            self._kernels[key] = hit
        return hit

    # -- eager --------------------------------------------------------------------
    def _split_args(self, args: tuple, kwargs: dict, require_tensors: bool) -> tuple[dict, dict, dict]:
        """(tensor arguments, compile-time values, keywords naming no parameter), bound by
        Python's rules (`binding.py`); the leftover keywords are checked against the kernel's
        `T.const` names once its template is traced (`_specialize`)."""
        params = self.signature.parameters
        fname = self.func.__name__
        given, extra = bind_call(fname, self.signature, args, kwargs)
        tensors: dict[str, Any] = {}
        consts: dict[str, Any] = {}
        missing = []
        for name, p in params.items():
            has_default = p.default is not inspect.Parameter.empty
            if name in self._tensor_names:
                v = given.get(name, p.default if has_default else None)
                if v is None and require_tensors and not has_default:
                    missing.append(name)
                tensors[name] = v
            elif name in given:
                consts[name] = given[name]
            elif has_default:
                consts[name] = p.default
            else:
                missing.append(name)
        if missing:
            raise missing_arguments(fname, self.signature, missing)
        for name, v in list(consts.items()):
            if type(v).__name__ in ("Tensor", "Parameter"):
                raise TypeError(
                    f"argument `{name}` of {fname}() got a tensor but is not annotated as one — "
                    f"add `{name}: T.Tensor(shape, dtype)` at the top of the kernel body"
                )
        return tensors, consts, extra

    def _template(self, consts: dict) -> tuple[PrimFunc, list[Var]]:
        key = _freeze(consts)
        hit = self._templates.get(key)
        if hit is not None:
            return hit
        fn, user_codes = rewritten_callable(self.func)
        builder = Builder(eager=True)
        call_args = {}
        for name, p in self.signature.parameters.items():
            if type(p.annotation).__name__ == "TensorType":  # annotated in the signature
                with builder:
                    builder.params[name] = call_args[name] = p.annotation.make_buffer(name)
            else:
                call_args[name] = TensorPlaceholder(name) if name in self._tensor_names else consts[name]
        ret = run_traced(builder, fn, user_codes, (), call_args)
        missing = [n for n in self._tensor_names if n not in builder.params]  # ir-eq: keys are names
        if missing:
            raise DSLError(f"tensor parameter `{missing[0]}` is never annotated with T.Tensor", span_of(self.func))
        returned = ret if isinstance(ret, tuple) else (() if ret is None else (ret,))
        at_return = builder.return_span or span_of(self.func)
        for r in returned:
            if not isinstance(r, Buffer) or r not in builder.outputs:
                is_input = isinstance(r, Buffer) and r.name in builder.params  # ir-eq: keys are names
                what = f"its input `{r.name}`" if is_input else repr(r)
                raise DSLError(
                    f"kernel `{self.func.__name__}` returns {what}; an eager kernel may only return its T.empty outputs",
                    at_return,
                    "allocate the result with T.empty, write it in the kernel and return that",
                )
        unreturned = [o.name for o in builder.outputs if o not in returned]
        if unreturned:
            raise DSLError(
                f"output `{unreturned[0]}` created with T.empty is never returned",
                at_return,
                f"add `return {unreturned[0]}`",
            )
        inputs = [builder.params[n] for n in self.signature.parameters if n in builder.params]  # ir-eq: keys are names
        params = inputs + list(returned)
        attrs: dict = {}
        if returned:
            attrs["out_idx"] = tuple(range(len(inputs), len(params)))
        func = finish(builder, self.func.__name__, params, span_of(self.func), attrs)
        self._templates[key] = (func, list(builder.consts))
        return func, list(builder.consts)

    def _bind_consts(self, template: PrimFunc, const_vars: list[Var], tensors: dict, extra: dict) -> list[int]:
        """Phase 2: the value of each T.const, from a `NAME=` keyword or the first tensor
        argument that has the symbol directly as a dimension."""
        values = []
        for v in const_vars:
            val = const_value(self.func.__name__, v.name, extra[v.name]) if v.name in extra else None
            for p in template.buffer_params if val is None else ():
                t = tensors.get(p.name)
                dims = [k for k, d in enumerate(p.shape) if d is v] if t is not None else []
                if dims and dims[0] < t.dim():
                    val = int(t.shape[dims[0]])
                    if p.dtype.bits < 8 and dims[0] == len(p.shape) - 1:
                        val *= 2  # a packed 4-bit tensor's last dimension counts bytes
                    break
            if val is None:
                raise EagerJITBuildError(
                    f"T.const `{v.name}` of `{self.func.__name__}` has no value: no tensor argument has it as a "
                    f"dimension, and no `{v.name}=` keyword was given",
                    span_of(self.func),
                    f"pass the tensors, or call {self.func.__name__}.compile({v.name}=...)",
                )
            values.append(val)
        return values

    def _specialize(self, args: tuple, kwargs: dict, require_tensors: bool) -> tuple[Any, PrimFunc, list, list, dict]:
        _ = self.mode
        tensors, consts, extra = self._split_args(args, kwargs, require_tensors)
        template, const_vars = self._template(consts)
        const_names = [v.name for v in const_vars]
        for key in extra:
            if key not in const_names:
                raise unexpected_keyword(self.func.__name__, key, list(self.signature.parameters) + const_names)
        values = self._bind_consts(template, const_vars, tensors, extra)
        key = (_freeze(consts), tuple(values))
        return key, template, const_vars, values, tensors

    @staticmethod
    def _substituted(template: PrimFunc, const_vars: list, values: list) -> PrimFunc:
        dim_names = {p.name: [d.name if isinstance(d, Var) else None for d in p.shape] for p in template.buffer_params}
        func = substitute(template, dict(zip(const_vars, values))) if const_vars else template
        for p in func.buffer_params:  # a dimension like `M - 16` is negative for M < 16
            for k, d in enumerate(p.shape):
                if isinstance(d, IntImm) and d.value < 0:
                    given = ", ".join(f"{v.name}={x}" for v, x in zip(const_vars, values))
                    raise DSLError(
                        f"dimension {k} of `{p.name}` is {d.value} with {given}; sizes must be ≥ 0", p.span or None
                    )
        return func.with_attrs(dim_names=dim_names)

    def _eager_func(self, args: tuple, kwargs: dict) -> PrimFunc:
        _, template, const_vars, values, _ = self._specialize(args, kwargs, False)
        return self._substituted(template, const_vars, values)

    def _eager_kernel(
        self, args: tuple, kwargs: dict, require_tensors: bool, target: Any = None
    ) -> tuple[JITKernel, tuple, list]:
        """The kernel for this call, its input tensors in kernel order, and their parameter names."""
        key, template, const_vars, values, tensors = self._specialize(args, kwargs, require_tensors)
        key = (key, _PP_GEN[0])
        if target is not None:
            key += (_freeze(target),)
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._compile(self._substituted(template, const_vars, values), None, target)
            self._kernels[key] = kernel
        names = [p.name for p in template.buffer_params if p.name in tensors]
        return kernel, tuple(tensors[n] for n in names), names


def jit(
    func: Callable | None = None,
    *,
    out_idx: Any = None,
    target: Any = None,
    target_host: Any = None,
    execution_backend: str | None = None,
    verbose: bool | None = None,
    pass_configs: dict | None = None,
    debug_root_path: str | None = None,
    compile_flags: Any = None,
) -> Any:
    """Decorator: `@tilelang.jit` or `@tilelang.jit(out_idx=..., target=..., pass_configs=...)`."""

    def wrap(f: Callable) -> JITImpl:
        return JITImpl(
            f,
            out_idx=out_idx,
            target=target,
            pass_configs=pass_configs,
            compile_flags=compile_flags,
            execution_backend=execution_backend,
            verbose=verbose,
            debug_root_path=debug_root_path,
            target_host=target_host,
        )

    return wrap(func) if func is not None else wrap


def compile(
    func: PrimFunc,
    out_idx: Any = None,
    execution_backend: str | None = None,
    target: Any = None,
    target_host: Any = None,
    verbose: bool | None = None,
    pass_configs: dict | None = None,
    compile_flags: Any = None,
) -> JITKernel:  # noqa: A001
    if not isinstance(func, PrimFunc):
        raise TypeError(f"tilelang.compile expects a PrimFunc (from @T.prim_func), got {type(func).__name__}")
    return JITKernel(
        func,
        out_idx=out_idx,
        target=target,
        pass_configs=pass_configs,
        compile_flags=compile_flags,
        execution_backend=execution_backend or "auto",
        verbose=bool(verbose),
    )
