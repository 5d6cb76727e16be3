"""Post-processing hooks on generated source: `register_cuda_postproc(func)` /
`@register_cuda_postproc_callback`.

A hook is `func(code: str, target) -> str`; the CUDA backend calls it on every
kernel's generated source before nvcc compiles it (and before
`get_kernel_source()` or `tilelang.lower` show it). One hook per language;
registering another replaces it (`override=True`, the default) or raises
(`override=False`).

Caching: a hook changes the source, and its behaviour is not something a key
can see from its name, so while a hook is registered the disk cache keys each
kernel on the post-processed source itself (lowering runs, nvcc is still
skipped on a hit); in-process kernel memos are keyed on `generation()`, which
changes whenever a hook is added or removed. A kernel built without the hook is
therefore never served for a build with it, or the other way round.

A HIP hook edits the generated HIP source before clang compiles it
(`backend/hip/backend.py`). C-host and Metal hooks are accepted for API
compatibility; this compiler generates no separate C host source and does not
apply Metal hooks, so registering one warns that it has no effect.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

PostProc = Callable[[str, Any], str]

_HOOKS: dict[str, PostProc] = {}
# bumped on every change of _HOOKS; jit memos compare it (a list so readers need no global lookup dance)
GENERATION = [0]

_NO_EFFECT = {
    "c": "this compiler generates no separate C host source",
    "metal": "this compiler has no Metal backend",
}


def generation() -> int:
    return GENERATION[0]


def _register(lang: str, func: PostProc, override: bool) -> PostProc:
    if not callable(func):
        raise TypeError(f"register_{lang}_postproc expects a callable (code, target) -> str, got {func!r}")
    if lang in _HOOKS and not override:
        raise ValueError(
            f"a {lang} postproc callback is already registered ({_HOOKS[lang]!r}); pass override=True to replace it"
        )
    if lang in _NO_EFFECT:
        warnings.warn(f"register_{lang}_postproc has no effect: {_NO_EFFECT[lang]}", UserWarning, stacklevel=3)
    _HOOKS[lang] = func
    GENERATION[0] += 1
    return func


def unregister_postproc(lang: str = "cuda") -> None:
    """Remove the hook for `lang` ("cuda", "hip", "c", "metal"), if any."""
    if _HOOKS.pop(lang, None) is not None:
        GENERATION[0] += 1


def postproc_for(lang: str) -> PostProc | None:
    return _HOOKS.get(lang)


def apply_postproc(lang: str, code: str, target: Any) -> str:
    """`code` after the registered hook for `lang` (unchanged when there is none)."""
    hook = _HOOKS.get(lang)
    if hook is None:
        return code
    out = hook(code, target)
    if not isinstance(out, str):
        raise TypeError(f"the {lang} postproc callback {hook!r} returned {type(out).__name__}, not the source str")
    return out


def register_cuda_postproc(func: PostProc, override: bool = True) -> PostProc:
    return _register("cuda", func, override)


def register_hip_postproc(func: PostProc, override: bool = True) -> PostProc:
    return _register("hip", func, override)


def register_c_postproc(func: PostProc, override: bool = True) -> PostProc:
    return _register("c", func, override)


def register_metal_postproc(func: PostProc, override: bool = True) -> PostProc:
    return _register("metal", func, override)


def _decorator(lang: str) -> Callable:
    def register(func: PostProc | None = None, override: bool = True) -> Any:
        if func is None:  # @register_..._callback(override=...)
            return lambda f: _register(lang, f, override)
        return _register(lang, func, override)

    register.__name__ = f"register_{lang}_postproc_callback"
    register.__doc__ = f"Decorator (bare or called) registering a {lang} source post-processing callback."
    return register


register_cuda_postproc_callback = _decorator("cuda")
register_hip_postproc_callback = _decorator("hip")
register_c_postproc_callback = _decorator("c")
register_metal_postproc_callback = _decorator("metal")

__all__ = [
    "apply_postproc",
    "generation",
    "postproc_for",
    "register_c_postproc",
    "register_c_postproc_callback",
    "register_cuda_postproc",
    "register_cuda_postproc_callback",
    "register_hip_postproc",
    "register_hip_postproc_callback",
    "register_metal_postproc",
    "register_metal_postproc_callback",
    "unregister_postproc",
]
