"""What crosses the process boundary when a config is compiled elsewhere.

A `CompileJob` is plain, picklable data: a `FunctionRef` naming the kernel
function (module + qualified name, plus its source file — path and text — as
a fallback for `__main__` scripts and machines without the module), the call
arguments with tensors replaced by `TensorStub`s (shape and dtype only), the
config, and the compile options with the target already resolved. `run_job`
runs in the worker: it finds the function, re-traces it, lowers and compiles
through the worker's kernel cache, and returns a `CompileOutcome` with the
packed artifact (see transfer.py) or the error text. Nothing here needs a GPU.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..backend.target import Target
from .locate import FunctionRef


@dataclass(frozen=True)
class TensorStub:
    """Stands in for a tensor argument when only its shape and dtype matter (tracing)."""

    shape: tuple
    dtype: str
    device: str = "cpu"

    def dim(self) -> int:
        return len(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def size(self, d: int | None = None) -> Any:
        return self.shape if d is None else self.shape[d]


def stub_tensors(v: Any) -> Any:
    """`v` with every torch tensor (also inside lists/tuples/dicts) replaced by a `TensorStub`."""
    if type(v).__name__ in ("Tensor", "Parameter") and hasattr(v, "shape"):
        return TensorStub(tuple(int(d) for d in v.shape), str(v.dtype).removeprefix("torch."), v.device.type)
    if isinstance(v, (list, tuple)):
        return type(v)(stub_tensors(x) for x in v)
    if isinstance(v, dict):
        return {k: stub_tensors(x) for k, x in v.items()}
    return v


_JITS: dict[FunctionRef, Any] = {}


@dataclass
class CompileJob:
    index: int
    ref: FunctionRef
    kind: str  # "jit": trace with JITImpl.get_tir; "factory": fn(**kw) returns a PrimFunc
    args: tuple
    kwargs: dict
    target: Target
    pass_configs: dict
    compile_flags: Any = None
    timeout: float | None = None


@dataclass
class CompileOutcome:
    index: int
    ok: bool
    error: str = ""
    pid: int = 0
    host: str = ""
    seconds: float = 0.0
    key: str | None = None
    ir_sha: str | None = None
    artifact: dict | None = None


def call_with_timeout(fn: Callable[[], Any], timeout: float | None) -> Any:
    """Run `fn()` in a daemon thread; TimeoutError if it takes longer than `timeout` s.

    A timed-out call cannot be interrupted; its thread is abandoned (daemon,
    so it never blocks interpreter exit).
    """
    if not timeout or timeout <= 0:
        return fn()
    box: dict = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller
            box["error"] = err

    t = threading.Thread(target=target, daemon=True, name="tilelang-autotune")
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise TimeoutError(f"timed out after {timeout:g} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def describe_error(err: BaseException, limit: int = 2000) -> str:
    text = f"{type(err).__name__}: {err}"
    return text if len(text) <= limit else text[:limit] + " ..."


def failure_reason(err: BaseException, stage: str) -> str:
    """How a skipped config is reported: "timeout: ...", "check failed: ...", "<stage> failed: ..."."""
    if isinstance(err, TimeoutError):
        return f"timeout: {stage} {err}"
    if isinstance(err, AssertionError):
        return f"check failed: {err}"
    return f"{stage} failed: {describe_error(err)}"


def _compile(job: CompileJob) -> CompileOutcome:
    from ..backend.registry import get_backend
    from ..cache import load_or_build
    from ..ir.function import PrimFunc
    from . import transfer

    raw = job.ref.resolve()
    if job.kind == "jit":
        jit = _JITS.get(job.ref)
        if jit is None:
            from ..jit.jit import JITImpl

            jit = _JITS[job.ref] = JITImpl(raw)
        func = jit.get_tir(*job.args, **job.kwargs)
    else:
        func = raw(*job.args, **job.kwargs)
        if not isinstance(func, PrimFunc):  # e.g. a factory that compiles itself: nothing to ship
            return CompileOutcome(job.index, True)
    options = transfer.build_options(func, job.pass_configs, job.compile_flags)
    built = load_or_build(get_backend(job.target), func, job.target, options)
    return CompileOutcome(
        job.index,
        True,
        key=transfer.kernel_key(func, job.target, options),
        ir_sha=transfer.ir_hash(func),
        artifact=transfer.pack(built),
    )


def run_job(job: CompileJob) -> CompileOutcome:
    """Worker entry point: compile one config; never raises."""
    t0 = time.perf_counter()
    try:
        out = call_with_timeout(lambda: _compile(job), job.timeout)
    except BaseException as err:  # noqa: BLE001 - every failure is reported as data
        out = CompileOutcome(job.index, False, error=failure_reason(err, "compile"))
    out.pid, out.host, out.seconds = os.getpid(), socket.gethostname(), time.perf_counter() - t0
    return out
