"""Running an external tool (cc, nvcc) with a time limit.

Why: a compiler that hangs (a wedged license server, a pathological kernel, a broken
`$CC`) must not hang the program that asked for a kernel. Every compiler invocation
goes through `run_tool`, which runs the tool in its own process group, kills the
whole group when the limit passes (nvcc's cicc/ptxas children included, so their
pipes close and nothing waits on them), and raises a `ToolTimeoutError` naming the
tool and the kernel.

The limit is `TILELANG_COMPILE_TIMEOUT` seconds (`TILELANG_COMPILE_TIMEOUT_SECONDS` is
read too), default 600; quick queries (`cc --version`) use at most 60 s.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import signal
import subprocess
from collections.abc import Iterator
from typing import Any

from ..errors import TileLangError

DEFAULT_TIMEOUT = 600.0
QUERY_TIMEOUT = 60.0
TIMEOUT_ENV = "TILELANG_COMPILE_TIMEOUT"


_current_kernel: contextvars.ContextVar[str | None] = contextvars.ContextVar("tilelang_kernel", default=None)


@contextlib.contextmanager
def building(kernel: str) -> Iterator[None]:
    """Name `kernel` in the errors of tools run inside the block without a kernel of their own."""
    token = _current_kernel.set(kernel)
    try:
        yield
    finally:
        _current_kernel.reset(token)


class ToolTimeoutError(TileLangError):
    """An external tool did not finish within the compile timeout."""

    kind = "timeout"


class ToolError(TileLangError):
    """An external tool could not be started."""


def compile_timeout() -> float:
    """The time limit of one compiler run, in seconds."""
    raw = os.environ.get(TIMEOUT_ENV) or os.environ.get(TIMEOUT_ENV + "_SECONDS")
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise TileLangError(f"{TIMEOUT_ENV}={raw!r} is not a positive number of seconds", None, "e.g. 600")
    return value


def run_tool(
    cmd: list[str], tool: str, kernel: str | None = None, timeout: float | None = None
) -> subprocess.CompletedProcess:
    """Run `cmd` (text output captured, no stdin) within `timeout` seconds (default
    `compile_timeout()`, at most that); `tool` and `kernel` (default: the one `building`
    names) say what ran, for the error."""
    limit = compile_timeout() if timeout is None else min(timeout, compile_timeout())
    kernel = kernel or _current_kernel.get()
    what = f" for kernel `{kernel}`" if kernel else ""
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,  # its own process group: killed as a whole
        )
    except OSError as err:
        raise ToolError(f"cannot run {tool} (`{cmd[0]}`){what}: {err}", None) from None
    with proc:
        try:
            out, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            proc.communicate()
            raise ToolTimeoutError(
                f"{tool} did not finish within {limit:g} s{what} and was stopped",
                None,
                f"set {TIMEOUT_ENV} to a larger number of seconds if it is only slow",
            ) from None
        except BaseException:  # KeyboardInterrupt: the group would outlive us
            kill_group(proc)
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def kill_group(proc: Any) -> None:
    """SIGKILL the process group `proc` leads (a `Popen` or `multiprocessing.Process` started in
    a session of its own), or `proc` alone when it leads none."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except (ProcessLookupError, OSError):
            pass
