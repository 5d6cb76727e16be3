"""The launch adapter: checks run-time arguments and calls the compiled kernel.

Built once per loaded kernel from its PrimFunc, so a call only does what must
be done per call: dtype/rank/shape/device/contiguity checks against
precomputed expectations, binding of dynamic dimensions, output allocation,
and the launch. Nothing is launched with bad arguments; every error names the
parameter and what was expected.

Two paths with one meaning: `checked_call` is the reference (a loop over the
parameter specs that raises the precise error), and `call` is the same checks
compiled into one generated function per kernel (`fast_call.py`), which hands
any argument list it does not accept to `checked_call`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..engine.param import KernelParam
from ..errors import ArgumentError, ArgumentValueError
from ..ir.buffer import Buffer
from ..ir.expr import BinaryOp, Cast, IntImm, PrimExpr, Var
from ..ir.function import PrimFunc
from ..ir.py_source import truncdiv
from .fast_call import make_fast_call
from .scalars import ScalarRule


def eval_int(e: Any, env: dict) -> int:
    """Evaluate an integer shape expression given values of its Vars."""
    if isinstance(e, int):
        return e
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, Var):
        return env[e]
    if isinstance(e, Cast):
        return eval_int(e.value, env)
    if isinstance(e, BinaryOp):
        a, b = eval_int(e.a, env), eval_int(e.b, env)
        return {
            "add": lambda: a + b,
            "sub": lambda: a - b,
            "mul": lambda: a * b,
            "floordiv": lambda: a // b,
            "floormod": lambda: a % b,
            "div": lambda: truncdiv(a, b),
            "min": lambda: min(a, b),
            "max": lambda: max(a, b),
        }[e.op]()
    raise ValueError(f"cannot evaluate shape expression {e}")


class ParamSpec:
    __slots__ = (
        "name", "index", "is_buffer", "dtype", "torch_dtype", "dims", "dim_names", "ndim", "is_output", "rule",
        "packed",
    )  # fmt: skip

    def __init__(self, p: Buffer | Var, index: int, is_output: bool, dim_names: list | None) -> None:
        self.name = p.name
        self.index = index
        self.is_output = is_output
        self.is_buffer = isinstance(p, Buffer)
        self.dtype = p.dtype
        self.torch_dtype = p.dtype.as_torch() if p.dtype.base != "handle" else None
        self.rule = None if self.is_buffer else ScalarRule(p.dtype)  # range and accepted types, once
        # int4 / uint4 / float4_e2m1fn: a byte tensor whose last dimension is half the logical one
        self.packed = self.is_buffer and p.dtype.bits < 8
        if self.is_buffer:
            self.dims = [d.value if isinstance(d, IntImm) else d for d in p.shape]
            self.ndim = len(self.dims)
            self.dim_names = dim_names or [d.name if isinstance(d, Var) else None for d in p.shape]
        else:
            self.dims, self.ndim, self.dim_names = [], 0, []


class Adapter:
    """Callable: `adapter(*inputs)` → outputs (one tensor, a list, or None)."""

    def __init__(
        self,
        func: PrimFunc,
        out_idx: list[int],
        device_kind: str,
        launch: Callable[[list, list], None],
        device_index: int | None = None,
    ) -> None:
        self.func = func
        self.device_kind = device_kind  # "cpu" | "cuda" | "mps" (Metal)
        self.launch = launch
        # the GPU whose context holds the loaded kernel (None: any device of the kind)
        self.device_index = device_index
        n = len(func.params)
        self.out_idx = [i % n for i in out_idx]
        names_attr = dict(func.attrs.get("dim_names", {}))
        self.specs = [ParamSpec(p, i, i in self.out_idx, names_attr.get(p.name)) for i, p in enumerate(func.params)]
        self.inputs = [s for s in self.specs if not s.is_output]
        self.outputs = [s for s in self.specs if s.is_output]
        self.dyn_vars = func.dynamic_vars()
        # where each dynamic dim is first read from (an input tensor dimension that IS the var)
        self.dyn_source: dict[Var, tuple[ParamSpec, int]] = {}
        for s in self.inputs:
            for k, d in enumerate(s.dims):
                if isinstance(d, Var) and d not in self.dyn_source:
                    self.dyn_source[d] = (s, k)
        missing = [v.name for v in self.dyn_vars if v not in self.dyn_source]
        self.unbindable = missing
        self.call: Callable[..., Any] = make_fast_call(self) or self._call_checked_varargs

    @property
    def params(self) -> list[KernelParam]:
        out = []
        for s in self.specs:
            shape = tuple(d if isinstance(d, int) else str(d) for d in s.dims)
            out.append(KernelParam(s.name, s.dtype, shape, s.is_output, not s.is_buffer))
        return out

    def _expected_device(self) -> str:
        return {"cuda": "CUDA GPU", "mps": "Apple GPU (mps)"}.get(self.device_kind, "CPU")

    def __call__(self, *args: Any) -> Any:
        return self.call(*args)

    def _call_checked_varargs(self, *args: Any) -> Any:
        return self.checked_call(args)

    def checked_call(self, args: tuple) -> Any:
        """Check `args` spec by spec (raising the error that names the parameter), then launch."""
        import torch

        if len(args) != len(self.inputs):
            names = ", ".join(s.name for s in self.inputs)
            raise ArgumentError(
                f"kernel `{self.func.name}` takes {len(self.inputs)} input argument(s) ({names}), got {len(args)}"
            )
        if self.unbindable:
            raise ArgumentError(
                f"kernel `{self.func.name}`: dynamic dimension(s) {', '.join(self.unbindable)} appear only in outputs or "
                "expressions, so they cannot be read from the input tensors"
            )
        env: dict = {}
        device = None
        values: list = [None] * len(self.specs)
        for spec, a in zip(self.inputs, args):
            if spec.is_buffer:
                device = self._check_tensor(spec, a, env, device)
            else:  # the value the launchers store: range-checked, numpy scalars unwrapped
                a = spec.rule.convert(a, spec.name, self.func.name)
            values[spec.index] = a
        for v in self.dyn_vars:
            if v not in env:
                s, k = self.dyn_source[v]
                env[v] = values[s.index].shape[k] * (2 if s.packed and k == s.ndim - 1 else 1)
        outs = []
        if device is None:
            device = default_device(self.device_kind)
        for spec in self.outputs:
            shape = [d if isinstance(d, int) else eval_int(d, env) for d in spec.dims]
            if spec.packed:
                shape = packed_storage_shape(spec, shape)
            t = torch.empty(shape, dtype=spec.torch_dtype, device=device)
            values[spec.index] = t
            outs.append(t)
        self.launch(values, [env[v] for v in self.dyn_vars])
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else outs

    def _check_tensor(self, spec: ParamSpec, a: Any, env: dict, device: Any) -> Any:
        import torch

        if not isinstance(a, torch.Tensor):
            raise ArgumentError(
                f"argument `{spec.name}` must be a torch.Tensor of {spec.dtype}, got {type(a).__name__}"
            )
        if spec.packed:
            check_packed_dtype(spec, a)
        elif a.dtype != spec.torch_dtype:
            raise ArgumentError(
                f"argument `{spec.name}`: expected dtype {spec.dtype}, got {str(a.dtype).removeprefix('torch.')} "
                f"— convert it with .to({spec.torch_dtype})"
            )
        if a.dim() != spec.ndim:
            raise ArgumentValueError(
                f"argument `{spec.name}`: expected a {spec.ndim}-D tensor {_fmt_dims(spec)}, got shape {list(a.shape)}"
            )
        want = self.device_kind if self.device_kind in ("cuda", "mps") else "cpu"
        if a.device.type != want:
            raise ArgumentValueError(
                f"argument `{spec.name}` is on {a.device} but kernel `{self.func.name}` was compiled for the "
                f"{self._expected_device()} — move it with .to('{want}') or compile for the other target"
            )
        if device is not None and a.device != device:
            raise ArgumentValueError(f"argument `{spec.name}` is on {a.device} but other arguments are on {device}")
        if self.device_index is not None and a.device.index != self.device_index:
            raise ArgumentValueError(
                f"argument `{spec.name}` is on {a.device} but kernel `{self.func.name}` was loaded on "
                f"{want}:{self.device_index} — move it there, or compile the kernel with that device current"
            )
        for k, d in enumerate(spec.dims):
            got = a.shape[k] * (2 if spec.packed and k == spec.ndim - 1 else 1)  # packed: logical elements
            if isinstance(d, int):
                if got != d:
                    nm = spec.dim_names[k] if k < len(spec.dim_names) and spec.dim_names[k] else None
                    what = f"{nm}={d}" if nm else str(d)
                    raise ArgumentValueError(
                        f"argument `{spec.name}`: dimension {k} must be {what} (from the other arguments / compile-time values), "
                        f"got {got}; shape {list(a.shape)} vs expected {_fmt_dims(spec)}"
                    )
            elif isinstance(d, Var):
                prev = env.get(d)
                if prev is None:
                    env[d] = got
                elif prev != got:
                    raise ArgumentValueError(
                        f"argument `{spec.name}`: dimension {k} is {d.name}={got}, but an earlier argument gave {d.name}={prev}"
                    )
            elif isinstance(d, PrimExpr):
                try:
                    val = eval_int(d, env)
                except KeyError:
                    continue
                if val != got:
                    raise ArgumentValueError(f"argument `{spec.name}`: dimension {k} must be {d} = {val}, got {got}")
        if not a.is_contiguous():
            raise ArgumentValueError(
                f"argument `{spec.name}` must be contiguous (row-major), got strides {list(a.stride())} — pass {spec.name}.contiguous()"
            )
        return a.device


def default_device(device_kind: str) -> Any:
    """Where outputs go when no input tensor says: torch's current CUDA device, `mps`, or the CPU."""
    import torch

    if device_kind == "cuda":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("mps") if device_kind == "mps" else torch.device("cpu")


def check_packed_dtype(spec: ParamSpec, a: Any) -> None:
    """A packed 4-bit parameter takes an int8 / uint8 tensor (or float4_e2m1fn_x2 for float4_e2m1fn)."""
    import torch

    ok = [torch.int8, torch.uint8]
    if spec.dtype.base == "float4_e2m1fn" and hasattr(torch, "float4_e2m1fn_x2"):
        ok.append(torch.float4_e2m1fn_x2)
    if a.dtype not in ok:
        raise ArgumentError(
            f"argument `{spec.name}`: {spec.dtype} is packed two elements per byte, so it takes a "
            f"{' / '.join(str(t).removeprefix('torch.') for t in ok)} tensor whose last dimension is half the "
            f"logical one, got {str(a.dtype).removeprefix('torch.')} — pack it with "
            f"tilelang.quantize.{'pack_fp4' if spec.dtype.is_float4() else 'pack_int4'}(x) (docs/subbyte.md)"
        )


def packed_storage_shape(spec: ParamSpec, shape: list) -> list:
    """The byte tensor's shape of a packed output: the logical last dimension halved (it must be even)."""
    if shape and shape[-1] % 2:
        raise ArgumentValueError(
            f"output `{spec.name}` of {spec.dtype}: the last dimension {shape[-1]} must be even — "
            "two 4-bit elements share each byte of the int8 tensor"
        )
    return [*shape[:-1], shape[-1] // 2] if shape else shape


def _fmt_dims(spec: ParamSpec) -> str:
    return "[" + ", ".join(str(d) for d in spec.dims) + "]"
