"""Input generation for the profiler: `TensorSupplyType` and `get_tensor_supply`.

A *supply* turns a `KernelParam` (dtype + shape) into a torch tensor. The rules
per supply type (upstream TileLang semantics):

========= ==================================================================
Auto      unsigned: randint[0, 3); float8: randint[-128, 128) cast; bool:
          {0, 1}; float16/bfloat16/float32: uniform(-1, 1); anything else
          (signed ints, float64): randint[-2, 3)
Integer   bool: {0, 1}; unsigned: randint[0, 3); float8: randint[-128, 128)
          cast; every other dtype, floats included: randint[-2, 3)
Uniform   floats: uniform(-1, 1); integer/bool dtypes: ones
Normal    floats: normal(mean=-1, std=1); integer/bool dtypes: ones
Randn     floats: standard normal; integer/bool dtypes: ones
Zero      zeros
One       ones
========= ==================================================================

torch is imported lazily, so `from tilelang.profiler import TensorSupplyType`
costs nothing at `import tilelang` time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from ..engine.param import KernelParam


class TensorSupplyType(Enum):
    """How the profiler fills the kernel's input tensors."""

    Integer = 1
    Uniform = 2
    Normal = 3
    Randn = 4
    Zero = 5
    One = 6
    Auto = 7


def default_device(device: Any = None) -> torch.device:
    """`device` as a torch.device; None means the current CUDA device, else the CPU."""
    import torch

    if device is not None:
        return torch.device(device)
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def resolve_shape(param: KernelParam, constraints: Mapping[str, int] | None = None) -> tuple[int, ...]:
    """Concrete shape of `param`; dynamic dims are looked up in `constraints` by name."""
    dims = []
    for d in param.shape:
        if isinstance(d, int):
            dims.append(d)
            continue
        name = getattr(d, "name", None) or str(d)
        if constraints is None or name not in constraints:
            raise ValueError(
                f"parameter {param.name!r} has dynamic dimension {name!r} (shape {tuple(map(str, param.shape))}); "
                f"pass dynamic_symbolic_constraints={{{name!r}: <size>}} or give input_tensors explicitly"
            )
        dims.append(int(constraints[name]))
    return tuple(dims)


def _as_supply_type(supply_type: TensorSupplyType | int | str) -> TensorSupplyType:
    if isinstance(supply_type, TensorSupplyType):
        return supply_type
    if isinstance(supply_type, int):
        return TensorSupplyType(supply_type)
    if isinstance(supply_type, str):
        for member in TensorSupplyType:
            if member.name.lower() == supply_type.lower():
                return member
    raise ValueError(f"unknown tensor supply type {supply_type!r}; use one of {[m.name for m in TensorSupplyType]}")


def _generate(kind: TensorSupplyType, dt, shape: tuple[int, ...], device) -> torch.Tensor:
    import torch

    if dt.bits < 8 and shape:
        return _generate_packed(kind, dt, shape, device)
    tdt = dt.as_torch()
    if kind is TensorSupplyType.Zero:
        return torch.zeros(shape, dtype=tdt, device=device)
    if kind is TensorSupplyType.One:
        return torch.ones(shape, dtype=tdt, device=device)
    if kind in (TensorSupplyType.Uniform, TensorSupplyType.Normal, TensorSupplyType.Randn):
        if dt.is_integer or dt.is_bool:
            return torch.ones(shape, dtype=tdt, device=device)
        base = torch.empty(shape, dtype=torch.float32, device=device)
        if kind is TensorSupplyType.Uniform:
            base.uniform_(-1.0, 1.0)
        elif kind is TensorSupplyType.Normal:
            base.normal_(-1.0, 1.0)
        else:
            base.normal_(0.0, 1.0)
        return base.to(tdt)
    # Auto / Integer
    if dt.is_bool:
        return torch.randint(0, 2, shape, device=device).to(torch.bool)
    if dt.is_uint:
        return torch.randint(0, 3, shape, device=device).to(tdt)
    if dt.is_float8:  # Auto and Integer alike
        return torch.randint(-128, 128, shape, device=device).to(torch.float32).to(tdt)
    if kind is TensorSupplyType.Auto:
        if dt.base in ("float16", "bfloat16", "float32"):
            return torch.empty(shape, dtype=torch.float32, device=device).uniform_(-1.0, 1.0).to(tdt)
    return torch.randint(-2, 3, shape, device=device).to(tdt)


def _generate_packed(kind: TensorSupplyType, dt, shape: tuple[int, ...], device) -> torch.Tensor:
    """A 4-bit parameter's packed int8 tensor (last dimension halved; docs/subbyte.md), its
    elements drawn by the same rules: FP4 codes randint[0, 16) for Auto / Integer."""
    import torch

    from ..quantize import fp4_values, pack_fp4, pack_int4

    if kind is TensorSupplyType.Zero:
        vals = torch.zeros(shape)
    elif kind is TensorSupplyType.One:
        vals = torch.ones(shape)
    elif kind in (TensorSupplyType.Uniform, TensorSupplyType.Normal, TensorSupplyType.Randn):
        if dt.is_float:
            vals = torch.empty(shape).uniform_(-1.0, 1.0) if kind is TensorSupplyType.Uniform else torch.randn(shape)
        else:
            vals = torch.ones(shape)
    elif dt.is_float:
        vals = fp4_values(torch.randint(0, 16, shape))
    else:
        vals = torch.randint(0, 3, shape) if dt.is_uint else torch.randint(-2, 3, shape)
    packed = pack_fp4(vals) if dt.is_float else pack_int4(vals.to(torch.int64), signed=dt.is_int)
    return packed.to(device)


def get_tensor_supply(
    supply_type: TensorSupplyType | int | str = TensorSupplyType.Auto,
    dynamic_symbolic_constraints: Mapping[str, int] | None = None,
    device: Any = None,
) -> Callable[[KernelParam], Any]:
    """Return `supply(param) -> torch.Tensor` generating inputs by `supply_type`.

    Tensors are made on `device` (default: the current CUDA device if CUDA is
    available, else the CPU). Dynamic dimensions are taken from
    `dynamic_symbolic_constraints` (name -> size); without it they raise a
    ValueError that says so. Scalar parameters get a Python number drawn by the
    same rule.
    """
    from ..ir.dtype import DataType

    kind = _as_supply_type(supply_type)
    dev = default_device(device)

    def supply(param: KernelParam) -> Any:
        dt = DataType(param.dtype)
        if param.is_scalar():
            return _generate(kind, dt, (1,), "cpu").item()
        return _generate(kind, dt, resolve_shape(param, dynamic_symbolic_constraints), dev)

    return supply
