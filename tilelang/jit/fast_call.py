"""The per-kernel call fast path: argument checks compiled into one Python function.

Requires: an `Adapter` (tilelang.jit.adapter) whose specs, dynamic variables and
output shapes are known. Guarantees: `make_fast_call(adapter)` returns either
None (the kernel's shapes use something the generator does not translate; the
adapter then always takes its checked path) or `entry(*args)` that

- accepts exactly the arguments the adapter's checked path accepts: the same
  count, tensor type, dtype (`is` on torch's singleton dtypes), device kind, one
  device for all tensors (the kernel's own GPU when it has one), rank, every static dimension, every dynamic dimension
  consistent with its first occurrence, every shape expression whose variables
  are bound at that point, contiguity, Python scalars for scalar parameters;
- on the first check that fails, hands the untouched arguments to the checked
  path (`adapter.checked_call`), which raises the error naming the parameter —
  or, where a fast check is merely stricter, completes the call itself;
- otherwise allocates the outputs and launches, with no loops, no dicts and no
  attribute lookups beyond the tensor properties each check reads.

Why generated code: a call of a tiny kernel must cost a few microseconds on the
host; a generic loop over parameter specs with per-dimension `isinstance`
dispatch costs several times the checks themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..ir.expr import Var
from ..ir.py_source import py_source, truncdiv

if TYPE_CHECKING:
    from .adapter import Adapter


class _Untranslatable(Exception):
    """A shape expression the generator does not turn into Python."""


def _py(e: Any, names: dict) -> str:
    """Python source for the integer shape expression `e` over the bound locals in `names`
    (`ir.py_source`, whose `div` truncates exactly as `adapter.eval_int` does)."""
    if isinstance(e, int):
        return str(e)
    try:
        return py_source(e, names)
    except (ValueError, TypeError) as err:  # an unbound variable, or not integer arithmetic
        raise _Untranslatable(str(e)) from err


class _DeviceObjects(dict):
    """device index → torch.device, built on first use (a torch.device costs ~0.3 µs)."""

    def __missing__(self, index: int) -> Any:
        import torch

        dev = self[index] = torch.device("cuda", index) if index >= 0 else torch.device("cpu")
        return dev


def make_fast_call(adapter: Adapter) -> Callable[..., Any] | None:
    """The generated `entry(*args)` for `adapter`, or None if its shapes are not translatable."""
    try:
        return _generate(adapter)
    except _Untranslatable:
        return None


def _generate(adapter: Adapter) -> Callable[..., Any]:
    import torch

    if adapter.device_kind not in ("cuda", "cpu"):  # mps (Metal): the checked path
        raise _Untranslatable("checked path only")
    on_cuda = adapter.device_kind == "cuda"
    if adapter.unbindable or (on_cuda and adapter.outputs and not any(s.is_buffer for s in adapter.inputs)):
        # errors, or the device taken from torch's current device: the checked path does it
        raise _Untranslatable("checked path only")
    if any(s.packed for s in adapter.specs):  # packed 4-bit tensors: two storage dtypes, halved last dim
        raise _Untranslatable("checked path only")
    ns: dict[str, Any] = {
        "Tensor": torch.Tensor,
        "scalar_types": (int, float, bool),
        "empty": torch.empty,
        "launch": adapter.launch,
        "slow": adapter.checked_call,
        "devices": _DeviceObjects(),
        "min": min,
        "max": max,
        "int": int,
        "_tdiv": truncdiv,
    }
    names: dict[Var, str] = {}  # dynamic dimension → the local holding its value
    n_in = len(adapter.inputs)
    lines = ["def entry(*args):", f"    if len(args) != {n_in}:", "        return slow(args)"]
    if n_in:
        lines.append("    " + ", ".join(f"a{s.index}" for s in adapter.inputs) + ", = args")
    fail = "        return slow(args)"
    first_tensor = True
    for spec in adapter.inputs:
        a = f"a{spec.index}"
        if not spec.is_buffer:  # exact int/float/bool in the dtype's range; anything else: checked path
            lines += [f"    if not {spec.rule.fast_check(a)}:", fail]
            continue
        ns[f"dt{spec.index}"] = spec.torch_dtype
        conds = [
            f"isinstance({a}, Tensor)",
            f"{a}.dtype is dt{spec.index}",
            f"{a}.is_cuda" if on_cuda else f"{a}.is_cpu",
        ]
        if on_cuda and not first_tensor:
            conds.append(f"{a}.get_device() == dev")
        static = all(isinstance(d, int) for d in spec.dims)
        if static:
            ns[f"shape{spec.index}"] = tuple(spec.dims)
            conds.append(f"{a}.shape == shape{spec.index}")
        conds.append(f"{a}.is_contiguous()")
        lines += [f"    if not ({' and '.join(conds)}):", fail]
        if on_cuda and first_tensor:
            lines.append(f"    dev = {a}.get_device()")
            if adapter.device_index is not None:  # the GPU the kernel was loaded on
                lines += [f"    if dev != {int(adapter.device_index)}:", fail]
        first_tensor = False
        if static:
            continue
        s = f"s{spec.index}"
        lines += [f"    {s} = {a}.shape", f"    if len({s}) != {spec.ndim}:", fail]
        for k, d in enumerate(spec.dims):
            got = f"{s}[{k}]"
            if isinstance(d, int):
                lines += [f"    if {got} != {d}:", fail]
            elif isinstance(d, Var):
                if d in names:
                    lines += [f"    if {got} != {names[d]}:", fail]
                else:
                    names[d] = f"v{len(names)}"
                    lines.append(f"    {names[d]} = {got}")
            else:
                try:
                    want = _py(d, names)
                except _Untranslatable:
                    continue  # not all of its variables are known yet: the checked path skips it too
                lines += [f"    if {got} != {want}:", fail]
    tensors = [s for s in adapter.inputs if s.is_buffer]
    if adapter.outputs and not tensors:
        lines.append("    device = devices[dev]" if on_cuda else "    device = devices[-1]")
    for spec in adapter.outputs:
        ns[f"dt{spec.index}"] = spec.torch_dtype
        # sizes as separate arguments: torch parses them faster than a tuple
        shape = ", ".join(_py(d, names) for d in spec.dims) or "()"
        if not tensors:
            lines.append(f"    a{spec.index} = empty({shape}, dtype=dt{spec.index}, device=device)")
            continue
        # `new_empty` of a checked input (same device; same dtype where one matches) skips
        # parsing dtype and device: ~0.4 us of a tiny kernel's call (H200 host, 2026-11-29)
        like = next((t for t in tensors if t.torch_dtype is spec.torch_dtype), None)
        if like is not None:
            lines.append(f"    a{spec.index} = a{like.index}.new_empty({shape})")
        else:
            lines.append(f"    a{spec.index} = a{tensors[0].index}.new_empty({shape}, dtype=dt{spec.index})")
    values = ", ".join(f"a{i}" for i in range(len(adapter.specs)))
    dyn = ", ".join(_py(v, names) for v in adapter.dyn_vars)
    lines.append(f"    launch([{values}], {f'[{dyn}]' if dyn else '()'})")
    outs = [f"a{s.index}" for s in adapter.outputs]
    lines.append("    return " + ("None" if not outs else outs[0] if len(outs) == 1 else f"[{', '.join(outs)}]"))
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<call {adapter.func.name}>", "exec"), ns)  # noqa: S102
    entry = ns["entry"]
    entry.source = source
    return entry
