"""Checking and timing one compiled candidate, always on the local device.

Inputs come from, in priority order: `set_autotune_inputs(...)`, then
`supply_prog(input_params)`, then the profiler's `supply_type` generator
(reused across configs with `cache_input_tensors=True` while the input shapes
stay the same). A candidate is checked against `ref_prog` with
`Profiler.assert_allclose` (or `manual_check_prog`) unless `skip_check`, then
timed with `warmup`/`rep` as iteration counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..jit.kernel import JITKernel
from ..profiler import Profiler, TensorSupplyType
from ..profiler.profiler import as_list, check_outputs
from ..profiler.supply import get_tensor_supply
from .isolation import isolation_enabled, run_isolated
from .spec import call_with_timeout


@dataclass
class ProfileArgs:
    warmup: int = 25
    rep: int = 100
    timeout: float = 30
    supply_type: Any = TensorSupplyType.Auto
    ref_prog: Callable | None = None
    supply_prog: Callable | None = None
    rtol: float = 1e-2
    atol: float = 1e-2
    max_mismatched_ratio: float = 0.01
    skip_check: bool = False
    manual_check_prog: Callable | None = None
    cache_input_tensors: bool = False
    backend: str = "event"


def _device(kernel: JITKernel) -> str | None:
    return "cpu" if getattr(kernel.backend, "device_kind", "cuda") == "cpu" else None


def fit_inputs(tensors: Any, kernel: JITKernel, what: str) -> list:
    """`tensors` as the kernel's inputs: all inputs, or every parameter with outputs dropped."""
    tensors = list(tensors)
    params = kernel.params
    n_in = sum(1 for p in params if not p.is_output)
    if len(tensors) == n_in:
        return tensors
    if len(tensors) == len(params):
        return [t for t, p in zip(tensors, params) if not p.is_output]
    names = ", ".join(p.name for p in params if not p.is_output)
    raise ValueError(f"{what} gave {len(tensors)} tensor(s); the kernel takes {n_in} input(s) ({names})")


class Evaluator:
    """Checks and times candidates with one set of profile arguments."""

    def __init__(self, args: ProfileArgs, fixed_inputs: tuple | None) -> None:
        self.args = args
        self.fixed = fixed_inputs
        self._cached: tuple[tuple, list] | None = None

    def profiler(self, kernel: JITKernel) -> Profiler:
        return Profiler(kernel.params, kernel.out_idx, self.args.supply_type, kernel, device=_device(kernel))

    def inputs(self, kernel: JITKernel) -> list:
        if self.fixed is not None:
            return fit_inputs(self.fixed, kernel, "set_autotune_inputs")
        ins = [p for p in kernel.params if not p.is_output]
        if self.args.supply_prog is not None:
            return fit_inputs(self.args.supply_prog(ins), kernel, "supply_prog")
        sig = tuple((p.shape, str(p.dtype)) for p in ins)
        if self.args.cache_input_tensors and self._cached is not None and self._cached[0] == sig:
            return self._cached[1]
        supply = get_tensor_supply(self.args.supply_type, None, _device(kernel))
        tensors = [supply(p) for p in ins]
        if self.args.cache_input_tensors:
            self._cached = (sig, tensors)
        return tensors

    def check(self, kernel: JITKernel, inputs: list) -> None:
        a = self.args
        if a.skip_check or a.ref_prog is None:
            return
        prof = self.profiler(kernel)
        if a.manual_check_prog is not None:
            prof.manual_assert_close(a.ref_prog, inputs, a.manual_check_prog)
        else:
            prof.assert_allclose(
                a.ref_prog, inputs, atol=a.atol, rtol=a.rtol, max_mismatched_ratio=a.max_mismatched_ratio
            )

    def latency(self, kernel: JITKernel, inputs: list, baseline: float | None = None) -> float:
        """Mean ms per call; with `baseline`, the quick estimate once it exceeds it."""
        a = self.args
        return float(
            self.profiler(kernel).do_bench(
                n_warmup=a.warmup, n_repeat=a.rep, input_tensors=inputs, backend=a.backend, early_stop_baseline=baseline
            )
        )

    def evaluate(self, kernel: JITKernel, baseline: float | None, timeout: float | None) -> tuple[float, list]:
        """Check and time `kernel` within `timeout` seconds: `(latency ms, inputs)`.

        The kernel runs in the benchmark worker (isolation.py); the reference program runs
        here. With TILELANG_AUTOTUNE_ISOLATE=0 both run in this process."""
        inputs = self.inputs(kernel)
        if not isolation_enabled():
            return call_with_timeout(lambda: self._evaluate_here(kernel, inputs, baseline), timeout), inputs
        a = self.args
        check = None if a.skip_check or a.ref_prog is None else (lambda outs: self.check_outputs(outs, inputs))
        return run_isolated(kernel, inputs, timeout, check, (a.warmup, a.rep, a.backend, baseline)), inputs

    def _evaluate_here(self, kernel: JITKernel, inputs: list, baseline: float | None) -> float:
        self.check(kernel, inputs)
        return self.latency(kernel, inputs, baseline)

    def check_outputs(self, lib_outs: Any, inputs: list) -> None:
        """Compare outputs the kernel produced elsewhere with `ref_prog(*inputs)` run here."""
        a = self.args
        ref_outs = as_list(a.ref_prog(*inputs))
        device = next((t.device for t in inputs if hasattr(t, "device")), None)
        lib_outs = [o.to(device) if device is not None and hasattr(o, "to") else o for o in as_list(lib_outs)]
        if a.manual_check_prog is not None:
            a.manual_check_prog(lib_outs, ref_outs)
        else:
            check_outputs(lib_outs, ref_outs, atol=a.atol, rtol=a.rtol, max_mismatched_ratio=a.max_mismatched_ratio)

    def ref_latency(self, kernel: JITKernel, inputs: list) -> float | None:
        if self.args.ref_prog is None:
            return None
        a = self.args
        return float(
            self.profiler(kernel).do_bench(
                self.args.ref_prog, n_warmup=a.warmup, n_repeat=a.rep, input_tensors=inputs, backend=a.backend
            )
        )
