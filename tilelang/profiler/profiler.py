"""`Profiler`: generate inputs for a compiled kernel, check it against a
reference program, and time it.

The kernel is any callable `func(*inputs) -> output | (outputs...)` that takes
only the input tensors (the params whose index is not in `result_idx`) and
returns the output tensor(s), i.e. a JITKernel's `__call__` with `out_idx` set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .bench import do_bench as _do_bench
from .compare import mismatch_report
from .supply import TensorSupplyType, default_device, get_tensor_supply

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.param import KernelParam


def as_list(outs: Any) -> list[Any]:
    if outs is None:
        return []
    if isinstance(outs, (list, tuple)):
        return list(outs)
    return [outs]


def check_outputs(lib_outs: list, ref_outs: list, *, atol: float, rtol: float, max_mismatched_ratio: float) -> None:
    """AssertionError unless every kernel output matches its reference output (see
    `mismatch_report`). Also used by the autotuner, whose kernels run in another process."""
    if not lib_outs:
        raise AssertionError(
            "the kernel returned no outputs; compile it with out_idx, or use manual_assert_close for in-place kernels"
        )
    if len(lib_outs) != len(ref_outs):
        raise AssertionError(f"the kernel returned {len(lib_outs)} outputs but the reference returned {len(ref_outs)}")
    errors = []
    for k, (got, exp) in enumerate(zip(lib_outs, ref_outs)):
        name = f"output {k}" if len(lib_outs) > 1 else "output"
        msg = mismatch_report(got, exp, atol=atol, rtol=rtol, max_mismatched_ratio=max_mismatched_ratio, name=name)
        if msg:
            errors.append(msg)
    if errors:
        raise AssertionError("\n".join(errors))


@dataclass
class Profiler:
    """Inputs, correctness checks and timing for one kernel.

    params: every kernel parameter, outputs included, in signature order.
    result_idx: indices (negative allowed) of the params the kernel returns.
    supply_type: how inputs are generated (see `TensorSupplyType`).
    func: the kernel callable (inputs only -> output tensor(s)).
    device: where inputs are generated; None = current CUDA device, else CPU.
        A kernel compiled for the CPU backend must pass "cpu".
    """

    params: list[KernelParam]
    result_idx: list[int] = field(default_factory=list)
    supply_type: TensorSupplyType = TensorSupplyType.Auto
    func: Callable[..., Any] | None = None
    device: Any = None

    def __post_init__(self) -> None:
        n = len(self.params)
        idx = [self.result_idx] if isinstance(self.result_idx, int) else list(self.result_idx or [])
        norm = []
        for i in idx:
            if not -n <= i < n:
                raise ValueError(f"result index {i} is out of range for a kernel with {n} parameters")
            norm.append(i % n)
        self.result_idx = norm

    # -- plumbing -----------------------------------------------------------------
    @property
    def adapter(self) -> Callable[..., Any] | None:
        """Alias of `func` (upstream name)."""
        return self.func

    def with_default_adapter(self, adapter: Callable[..., Any]) -> Profiler:
        self.func = adapter
        return self

    def _kernel(self, func: Callable[..., Any] | None = None) -> Callable[..., Any]:
        f = func if func is not None else self.func
        if f is None:
            raise ValueError("Profiler has no kernel callable: pass func=... or construct it with func")
        return f

    def _get_inputs(
        self, with_output: bool = False, dynamic_symbolic_constraints: Mapping[str, int] | None = None
    ) -> list[Any]:
        """Generate one tensor per input param (outputs too if `with_output`)."""
        supply = get_tensor_supply(self.supply_type, dynamic_symbolic_constraints, self.device)
        return [supply(p) for i, p in enumerate(self.params) if with_output or i not in self.result_idx]

    def _run_pair(self, reference_program: Callable, input_tensors: Sequence[Any] | None) -> tuple[list, list]:
        ins = list(input_tensors) if input_tensors is not None else self._get_inputs()
        ref_outs = as_list(reference_program(*ins))
        lib_outs = as_list(self._kernel()(*ins))
        return lib_outs, ref_outs

    # -- checks ---------------------------------------------------------------------
    def assert_allclose(
        self,
        reference_program: Callable[..., Any],
        input_tensors: Sequence[Any] | None = None,
        atol: float = 1e-2,
        rtol: float = 1e-2,
        max_mismatched_ratio: float = 0.01,
    ) -> None:
        """Run reference and kernel on the same inputs; compare each output pair.

        At most `max_mismatched_ratio` of each output's elements may fall outside
        `atol + rtol * |expected|`; otherwise AssertionError lists the mismatch
        ratio and the worst elements. FP8/FP16/BF16 outputs are upcast first.
        """
        lib_outs, ref_outs = self._run_pair(reference_program, input_tensors)
        check_outputs(lib_outs, ref_outs, atol=atol, rtol=rtol, max_mismatched_ratio=max_mismatched_ratio)

    def manual_assert_close(
        self,
        reference_program: Callable[..., Any],
        input_tensors: Sequence[Any] | None = None,
        manual_check_prog: Callable[[list, list], Any] | None = None,
    ) -> None:
        """Run both programs and call `manual_check_prog(lib_outs, ref_outs)`."""
        if manual_check_prog is None:
            raise ValueError("manual_assert_close needs manual_check_prog(lib_outs, ref_outs)")
        lib_outs, ref_outs = self._run_pair(reference_program, input_tensors)
        manual_check_prog(lib_outs, ref_outs)

    def assert_consistent(self, repeat: int = 10) -> None:
        """Run the kernel `repeat` times on the same inputs; outputs must be bitwise identical."""
        import torch

        ins = self._get_inputs()
        first = [o.clone() if isinstance(o, torch.Tensor) else o for o in as_list(self._kernel()(*ins))]
        for r in range(repeat):
            outs = as_list(self._kernel()(*ins))
            for k, (a, b) in enumerate(zip(outs, first)):
                diff = a != b
                if a.is_floating_point():
                    diff &= ~(a.isnan() & b.isnan())
                if bool(diff.any()):
                    flat = int(diff.reshape(-1).nonzero()[0].item())
                    raise AssertionError(
                        f"run {r + 1}: output {k} differs from the first run at flat index {flat}: "
                        f"{a.reshape(-1)[flat].item()} vs {b.reshape(-1)[flat].item()} (data race?)"
                    )

    # -- running and timing ---------------------------------------------------------
    def run_once(self, func: Callable[..., Any] | None = None) -> Any:
        """Run `func` (default: the kernel) once on freshly generated inputs."""
        return self._kernel(func)(*self._get_inputs())

    def do_bench(
        self,
        func: Callable[..., Any] | None = None,
        warmup: float = 25,
        rep: float = 100,
        n_warmup: int = 0,
        n_repeat: int = 0,
        input_tensors: Sequence[Any] | None = None,
        backend: str = "event",
        quantiles: Sequence[float] | None = None,
        return_mode: str = "mean",
        dynamic_symbolic_constraints: Mapping[str, int] | None = None,
        device: Any = None,
        early_stop_baseline: float | None = None,
    ) -> float | list[float]:
        """Milliseconds per call of `func(*inputs)` (default: the kernel); see `tilelang.profiler.do_bench`."""
        import torch

        f = self._kernel(func)
        ins = (
            list(input_tensors) if input_tensors is not None else self._get_inputs(False, dynamic_symbolic_constraints)
        )
        if device is None:
            tensors = [t for t in ins if isinstance(t, torch.Tensor)]
            device = tensors[0].device if tensors else default_device(self.device)
        return _do_bench(
            lambda: f(*ins),
            warmup=warmup,
            rep=rep,
            _n_warmup=n_warmup,
            _n_repeat=n_repeat,
            quantiles=quantiles,
            backend=backend,
            return_mode=return_mode,
            device=device,
            early_stop_baseline=early_stop_baseline,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._kernel()(*args, **kwargs)
