"""Tensor utilities of the public API (`tilelang.utils.tensor`).

- `TensorSupplyType`, `get_tensor_supply(supply_type=TensorSupplyType.Integer)`:
  the profiler's input generation (`tilelang.profiler.supply`), with this
  module's default supply type (Integer).
- `map_torch_type(name)`: a dtype name (including the legacy spellings
  "e4m3_float8" / "e5m2_float8" / "float8_e4m3") as a torch dtype.
- `torch_assert_close(a, b, rtol=1e-2, atol=1e-3, max_mismatched_ratio=1e-3, ...)`:
  passes when at most `int(numel * max_mismatched_ratio)` elements violate
  `|a - b| <= atol + rtol * |b|`; otherwise raises an AssertionError that
  starts "Too many mismatched elements: N > allowed (...)" and names the first
  mismatch, the greatest differences and the worst elements. `tilelang.testing`
  re-exports it.

torch is imported when a function runs, not at import time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..profiler.compare import _format_index, _to_tensor, _upcast
from ..profiler.supply import TensorSupplyType
from ..profiler.supply import get_tensor_supply as _profiler_supply

__all__ = ["TensorSupplyType", "get_tensor_supply", "map_torch_type", "torch_assert_close"]


def map_torch_type(intype: Any) -> Any:
    """The torch dtype named by `intype` (a dtype name, a `DataType` or a torch dtype)."""
    import torch

    from ..ir.dtype import DataType

    if isinstance(intype, torch.dtype):
        return intype
    try:
        return DataType(intype).as_torch()
    except TypeError:
        pass
    # torch dtypes our IR has no name for (e.g. float8_e4m3fnuz) keep torch's own name
    found = getattr(torch, str(intype), None) if isinstance(intype, str) else None
    if isinstance(found, torch.dtype):
        return found
    raise TypeError(f"map_torch_type: {intype!r} names no torch dtype — use a name like 'float16' or 'float8_e4m3fn'")


def get_tensor_supply(
    supply_type: TensorSupplyType | int | str = TensorSupplyType.Integer,
    dynamic_symbolic_constraints: Mapping[str, int] | None = None,
    device: Any = None,
) -> Callable[[Any], Any]:
    """`supply(param) -> torch.Tensor` for a `KernelParam`; see `tilelang.profiler.supply`
    for what each `TensorSupplyType` generates. Tensors go to the current CUDA
    device if there is one, else the CPU (or `device`)."""
    return _profiler_supply(supply_type, dynamic_symbolic_constraints, device)


def _attribute_check(a: Any, b: Any, check_device: bool, check_dtype: bool, check_layout: bool, check_stride: bool):
    def differ(attr: str, x: Any, y: Any) -> None:
        raise AssertionError(f"The values for attribute '{attr}' do not match: {x} != {y}.")

    if tuple(a.shape) != tuple(b.shape):
        differ("shape", a.shape, b.shape)
    if check_layout and a.layout != b.layout:
        differ("layout", a.layout, b.layout)
    if check_stride and a.stride() != b.stride():
        differ("stride()", a.stride(), b.stride())
    if check_device and a.device != b.device:
        differ("device", a.device, b.device)
    if check_dtype and a.dtype != b.dtype:
        differ("dtype", a.dtype, b.dtype)


def torch_assert_close(
    tensor_a: Any,
    tensor_b: Any,
    rtol: float = 1e-2,
    atol: float = 1e-3,
    max_mismatched_ratio: float = 0.001,
    verbose: bool = False,
    equal_nan: bool = True,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    base_name: str = "LHS",
    ref_name: str = "RHS",
) -> bool:
    """Assert that `tensor_a` is close to `tensor_b`, allowing a fraction of mismatches.

    Shapes must match; device, dtype and layout must match unless their
    `check_*` flag is False (then both sides are compared on the CPU). Values
    are compared in float64 (fp8/fp16/bf16/integer inputs upcast exactly).
    Returns True when the check passes.
    """
    import torch

    a, b = _to_tensor(tensor_a), _to_tensor(tensor_b)
    _attribute_check(a, b, check_device, check_dtype, check_layout, check_stride)
    if a.device != b.device:
        a, b = a.cpu(), b.cpu()
    total = a.numel()
    allowed = int(total * max_mismatched_ratio)
    if total == 0:
        return True
    a64, b64 = _upcast(a.detach()).reshape(-1), _upcast(b.detach()).reshape(-1)
    bad = ~torch.isclose(a64, b64, rtol=rtol, atol=atol, equal_nan=equal_nan)
    n_bad = int(bad.sum().item())
    if verbose:
        print(f"Number of mismatched elements: {n_bad} / {total} (allowed: {allowed})")
    if n_bad <= allowed:
        return True
    diff = (a64 - b64).abs()
    rel = diff / (b64.abs() + 1e-12)
    first = int(torch.argmax(bad.to(torch.int8)).item())
    shape = tuple(a.shape)
    fa, fb = a64[first].item(), b64[first].item()
    lines = [
        f"Too many mismatched elements: {n_bad} > {allowed} ({max_mismatched_ratio * 100:.2f}% allowed, "
        f"but get {n_bad / total * 100:.2f}%).",
        f"First mismatch at index {_format_index(first, shape)}: lhs={fa:.6f}, rhs={fb:.6f}, "
        f"abs_diff={abs(fa - fb):.6f}, rel_diff={abs(fa - fb) / (abs(fb) + 1e-12):.6f}",
        f"Greatest absolute difference: {_nanmax(diff)}, Greatest relative difference: {_nanmax(rel)}",
    ]
    # the worst offenders, by how far they exceed the tolerance
    excess = torch.where(bad, diff - (atol + rtol * b64.abs()), torch.full_like(diff, -float("inf")))
    excess = torch.nan_to_num(excess, nan=float("inf"))
    k = min(5, n_bad)
    lines.append(f"Worst {k} ({base_name} vs {ref_name}, atol={atol:g}, rtol={rtol:g}):")
    for i in torch.topk(excess, k).indices.tolist():
        lines.append(f"  at {_format_index(i, shape)}: {base_name}={a64[i].item():.6g}, {ref_name}={b64[i].item():.6g}")
    raise AssertionError("\n".join(lines))


def _nanmax(t: Any) -> float:
    import torch

    finite = t[~torch.isnan(t)]
    return float(finite.max().item()) if finite.numel() else float("nan")
