"""Finding the kernel function inside a compile worker.

A `FunctionRef` names the tuned function by module and qualified name, with
its source file (path and text) as fallbacks and a hash of its source to
check that the worker found the same version. `resolve()` tries, in order:
importing the module; loading the file at the recorded path; loading the
shipped text from a temporary file.

Loading a *file* (a `__main__` script, or a module the worker cannot import)
runs only its definitions: imports, `def`/`class` statements and assignments,
one statement at a time, skipping bare expressions, `with`/`for`/`while`
blocks and `if __name__ == "__main__":`, and carrying on past a statement that
fails. While a worker loads user code, starting a tuning run raises
`NestedTuningError` — so a script whose top level tunes a kernel (as the
tutorials' snippets do) never recurses into workers of its own.
"""

from __future__ import annotations
import __future__

import ast
import hashlib
import importlib
import inspect
import os
import sys
import types
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

MAX_SHIPPED_SOURCE = 1 << 20
UNRESOLVED = "compile worker cannot find kernel function "
_LOADING = 0


class NestedTuningError(RuntimeError):
    """A tuning run was started while a compile worker was loading user code."""


def check_not_loading() -> None:
    if _LOADING:
        raise NestedTuningError("not tuning while a compile worker loads the kernel's module")


@contextmanager
def _loading() -> Any:
    global _LOADING
    _LOADING += 1
    try:
        yield
    finally:
        _LOADING -= 1


def raw_function(obj: Any) -> Any:
    """The plain Python function under `@autotune` / `@tilelang.jit` wrappers."""
    for _ in range(8):
        name = type(obj).__name__
        if name == "AutoTuneImpl":
            obj = obj.jit_impl
        elif name == "JITImpl":
            obj = obj.func
        else:
            return obj
    return obj


def _sha(fn: Any) -> str:
    return hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()


def _is_main_guard(stmt: ast.stmt) -> bool:
    t = stmt.test if isinstance(stmt, ast.If) else None
    return isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == "__name__"


def _definitions(tree: ast.Module) -> list[ast.stmt]:
    skip = (ast.Expr, ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While)
    return [s for s in tree.body if not isinstance(s, skip) and not _is_main_guard(s)]


def load_definitions(path: str, name: str) -> types.ModuleType:
    """A module made of the definitions in the file at `path` (see module docstring)."""
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    with open(path, encoding="utf-8") as f:
        source = f.read()
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.append(folder)
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod
    flags = 0  # the script's own `from __future__` imports, never this module's
    with _loading():
        for stmt in _definitions(ast.parse(source, path)):
            if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
                flags |= sum(getattr(__future__, a.name).compiler_flag for a in stmt.names)
                continue
            try:
                code = compile(ast.Module([stmt], []), path, "exec", flags=flags, dont_inherit=True)
                exec(code, mod.__dict__)
            except Exception:  # noqa: BLE001 - a failing statement may not matter for this kernel
                continue
    return mod


@dataclass(frozen=True)
class FunctionRef:
    module: str
    qualname: str
    source_sha: str
    file: str | None = None
    file_text: str | None = field(default=None, repr=False)

    @classmethod
    def of(cls, fn: Any) -> FunctionRef | None:
        """A reference a worker can resolve, or None (lambda, local function, no source)."""
        raw = raw_function(fn)
        qual, mod = getattr(raw, "__qualname__", ""), getattr(raw, "__module__", None)
        if not qual or not mod or "<locals>" in qual or "<lambda>" in qual:
            return None
        try:
            sha = _sha(raw)
            path = inspect.getsourcefile(raw)
        except (OSError, TypeError):
            return None
        text = None
        if path and os.path.isfile(path) and os.path.getsize(path) <= MAX_SHIPPED_SOURCE:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        if mod == "__main__" and text is None:
            return None  # a notebook cell or `python -c`: nothing a worker could load
        return cls(mod, qual, sha, path, text)

    def resolve(self) -> Any:
        """The raw function, found by import, then by source file path, then by shipped text."""
        hit = _RESOLVED.get(self)
        if hit is not None:
            return hit
        tried = []
        for loader in (self._by_import, self._by_path, self._by_text):
            try:
                fn = loader()
            except Exception as err:  # noqa: BLE001 - any failure means: try the next way
                tried.append(f"{loader.__name__.strip('_')}: {type(err).__name__}: {err}")
                continue
            if fn is None:
                continue
            fn = raw_function(fn)
            if _sha(fn) == self.source_sha:
                _RESOLVED[self] = fn
                return fn
            tried.append(f"{loader.__name__.strip('_')}: found a different version of the source")
        raise ImportError(f"{UNRESOLVED}{self.module}.{self.qualname}: " + "; ".join(tried))

    def _walk(self, mod: Any) -> Any:
        obj = mod
        for part in self.qualname.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj

    def _by_import(self) -> Any:
        if self.module == "__main__" and self.file:
            return None  # this process's __main__ is not the user's script: load the file
        with _loading():
            return self._walk(importlib.import_module(self.module))

    def _load(self, path: str) -> Any:
        name = "_tilelang_autotune_" + self.source_sha[:12] + "_" + hashlib.sha256(path.encode()).hexdigest()[:8]
        return self._walk(load_definitions(path, name))

    def _by_path(self) -> Any:
        return self._load(self.file) if self.file and os.path.isfile(self.file) else None

    def _by_text(self) -> Any:
        if not self.file_text:
            return None
        from ..cache import scratch

        # this process's own owner-only scratch directory: a shared /tmp folder would let
        # another user plant the file this process then executes
        folder = os.path.join(scratch.scratch_root(), "autotune-src", self.source_sha[:16])
        os.makedirs(folder, mode=0o700, exist_ok=True)
        path = os.path.join(folder, os.path.basename(self.file or "kernel.py"))
        if not os.path.exists(path):
            with open(path + f".{os.getpid()}.tmp", "w", encoding="utf-8") as f:
                f.write(self.file_text)
            os.replace(path + f".{os.getpid()}.tmp", path)
        return self._load(path)


_RESOLVED: dict[FunctionRef, Any] = {}


def warm_worker(ref: FunctionRef | None, seconds: float) -> int:
    """Pool warm-up task: load the kernel's module, linger so every worker gets a task; the pid."""
    import time

    if ref is not None:
        try:
            ref.resolve()
        except ImportError:
            pass  # the compile jobs will report it
    time.sleep(seconds)
    return os.getpid()
