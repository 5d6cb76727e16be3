"""TileLang: a tile-level GPU kernel language embedded in Python.

`import tilelang.language as T`, decorate a kernel with `@tilelang.jit`, and
call it with torch tensors. Only torch and the standard library are imported
here; the language server lives in the separate `tilelang_lsp` package.
"""

__version__ = "0.1.0"

from . import language  # noqa: E402
from .backend.target import Target  # noqa: E402
from .cache import clear_cache, disable_cache, enable_cache, is_cache_enabled  # noqa: E402
from .engine.callback import register_c_postproc, register_cuda_postproc, register_hip_postproc  # noqa: E402
from .env import env  # noqa: E402
from .errors import DSLError, TileLangError  # noqa: E402
from .jit.jit import compile, jit  # noqa: E402,A004
from .jit.kernel import JITKernel  # noqa: E402
from .log import set_log_level  # noqa: E402
from .lower import lower  # noqa: E402
from .pass_config import PassConfigKey  # noqa: E402


def __getattr__(name: str):
    # heavier subsystems load on first use so `import tilelang` stays fast
    if name in ("autotune",):
        from .autotuner import autotune

        return autotune
    if name in ("TensorSupplyType", "Profiler"):
        from . import profiler

        return getattr(profiler, name)
    if name in ("Layout", "Fragment"):
        from . import layout

        return getattr(layout, name)
    if name in ("tools", "engine", "transform", "tileop", "carver", "autotuner", "profiler", "layout", "tvm"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    if name in ("cdiv", "next_power_of_2"):
        from . import math

        return getattr(math, name)
    if name in ("math", "utils"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    if name == "DataType":
        from .ir.dtype import DataType

        return DataType
    raise AttributeError(f"module 'tilelang' has no attribute {name!r}")


__all__ = ["JITKernel", "PassConfigKey", "Target", "compile", "jit", "language", "lower", "__version__"]
