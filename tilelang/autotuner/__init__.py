"""Autotuner: pick the fastest compile-time configuration of a kernel.

Public API:
- `@autotune(configs=...)` above `@tilelang.jit`          decorator.py
- `AutoTuner(fn, configs)`, `AutoTuner.from_kernel(...)`   tuner.py
- `set_autotune_inputs(...)`, `get_autotune_inputs()`      inputs.py

How a run works: source.py turns each config into a PrimFunc / JITKernel /
picklable `CompileJob` (spec.py); compiling.py sends the jobs to an executor
(executor.py: a local process pool by default, or any
`concurrent.futures.Executor`, e.g. a Dask cluster's), where workers find the
kernel function (locate.py), compile it and send the artifact back
(transfer.py); bench.py checks and times each candidate on the local device;
results.py / cache.py / keys.py keep the answer in memory and under
`<cache_dir>/autotuner/<sha256>/`.
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
