"""Autotuner: pick the fastest compile-time configuration of a kernel.

- `@autotune(configs=...)` above `@tilelang.jit` (decorator.py),
- `AutoTuner(fn, configs)` / `AutoTuner.from_kernel(...)` (tuner.py),
- `set_autotune_inputs(...)` / `get_autotune_inputs()` (inputs.py).

Configs compile in parallel through a `concurrent.futures.Executor` — a local
process pool by default, or any executor such as a Dask cluster's — and are
checked and timed one by one on the local device (executor.py, spec.py,
transfer.py). Results are cached in memory and under
`<cache_dir>/autotuner/<sha256>/` (cache.py, keys.py).
"""

from .decorator import AutoTuneImpl, autotune
from .inputs import get_autotune_inputs, set_autotune_inputs
from .tuner import AutoTuneError, AutoTuner, AutotuneResult

__all__ = [
    "AutoTuneError",
    "AutoTuneImpl",
    "AutoTuner",
    "AutotuneResult",
    "autotune",
    "get_autotune_inputs",
    "set_autotune_inputs",
]
