"""This process's private scratch space: one owner-only temporary directory, removed at exit.

Why: builds that do not go to the kernel cache (cache disabled or unusable, the C
compiler's and the native launcher's private builds) still need their libraries on
disk for as long as the process may load them. Each used to get its own
`/tmp/tilelang-*` directory that nothing removed; now they all live under one
directory per process, deleted when the process exits (and never by a forked child,
which gets a scratch directory of its own).

Guarantees: `workdir()` directories are removed when the `with` block ends, however
it ends; `keep_dir()` directories live until the process exits.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_root: str | None = None
_owner_pid = 0


def _cleanup() -> None:
    if _root is not None and _owner_pid == os.getpid():
        shutil.rmtree(_root, ignore_errors=True)


def _forget() -> None:  # in a forked child: the parent's directory is the parent's to remove
    global _root, _owner_pid
    _root, _owner_pid = None, 0


atexit.register(_cleanup)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)


def scratch_root() -> str:
    """The process's scratch directory (created 0700 on first use)."""
    global _root, _owner_pid
    with _lock:
        if _root is None or not os.path.isdir(_root):
            _root = tempfile.mkdtemp(prefix="tilelang-")
            _owner_pid = os.getpid()
            if "multiprocessing" in sys.modules:  # a pool worker ends with os._exit: no atexit
                import multiprocessing.util

                multiprocessing.util.Finalize(None, _cleanup, exitpriority=0)
        return _root


def keep_dir(prefix: str) -> str:
    """A new private directory that lives until the process exits."""
    return tempfile.mkdtemp(prefix=prefix, dir=scratch_root())


@contextlib.contextmanager
def workdir(prefix: str = "build-") -> Iterator[str]:
    """A new private directory, removed when the block ends (also on errors)."""
    d = keep_dir(prefix)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
