"""Profiler: input generation, correctness checks against a reference, timing.

`Profiler` is what `JITKernel.get_profiler()` returns; `do_bench` times any
zero-argument callable. torch is imported lazily (on first use).
"""

from .bench import do_bench
from .compare import assert_close, mismatch_report
from .profiler import Profiler
from .supply import TensorSupplyType, get_tensor_supply

__all__ = ["Profiler", "TensorSupplyType", "assert_close", "do_bench", "get_tensor_supply", "mismatch_report"]
