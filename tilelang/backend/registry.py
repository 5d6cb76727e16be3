"""Backend registry: target kind → the object that lowers, builds and loads kernels.

Every backend provides the same small surface (`Backend` below), so the JIT,
the cache and the analysis layer never special-case a target. Asking for a
target whose backend is not available is an error, never a silent fallback.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import UnsupportedError
from ..ir.function import PrimFunc
from .target import Target


@dataclass
class BuiltKernel:
    """What a build produces and the disk cache stores."""

    kernel_source: str
    lib_path: str | None  # compiled artifact on disk (.so / .cubin), None for lower-only
    meta: dict = field(default_factory=dict)  # JSON-able launch metadata
    lowered: PrimFunc | None = None  # only present when freshly built
    # (file name, line) of the spans of the PrimFunc it was built from, in walk order: what its
    # `// file:line` markers mean (cache/markers.py re-anchors them for another kernel with the same IR)
    anchors: tuple = ()


class Backend(Protocol):
    kind: str
    device_kind: str  # "cpu" | "cuda"
    source_ext: str

    def lower(self, func: PrimFunc, target: Target, options: dict, stop_after: str | None = None) -> BuiltKernel:
        """The target's declared pipeline (`<kind>/pipeline.py: PASSES`) with the kernel's options,
        then code generation; with `stop_after`, only the passes up to that one (`lowered` is the
        IR after it, no source is generated)."""
        ...

    def build(self, func: PrimFunc, target: Target, options: dict, workdir: str) -> BuiltKernel: ...

    def load(self, built: BuiltKernel) -> Callable[[list, list], None]: ...

    def cache_salt(self, target: Target) -> str: ...

    def check_meta(self, meta: dict) -> None:
        """Raise ValueError unless `meta` (read back from the disk cache) is metadata this
        backend's `build` could have written; the cache then rebuilds the entry."""
        ...


_FACTORIES: dict[str, Callable[[], Any]] = {}
_INSTANCES: dict[str, Any] = {}


def register_backend(kind: str, factory: Callable[[], Any]) -> None:
    _FACTORIES[kind] = factory


def get_backend(target: Target) -> Backend:
    hit = _INSTANCES.get(target.kind)
    if hit is not None:
        return hit
    _load_builtin(target.kind)
    factory = _FACTORIES.get(target.kind)
    if factory is None:
        raise UnsupportedError(
            f"the {target.kind!r} backend is not available in this build of tilelang",
            None,
            "use target='c' (CPU) or target='cuda'",
        )
    inst = _INSTANCES[target.kind] = factory()
    return inst


def _load_builtin(kind: str) -> None:
    import importlib

    module = {
        "c": "tilelang.backend.c.backend",
        "cuda": "tilelang.backend.cuda.backend",
        "hip": "tilelang.backend.hip.backend",
        "metal": "tilelang.backend.metal.backend",
    }.get(kind)
    if module is None or kind in _FACTORIES:
        return
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name and err.name.startswith(module):
            return
        raise
    register_backend(kind, mod.make_backend)
