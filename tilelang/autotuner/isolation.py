"""Running candidate kernels where they cannot hurt the tuning: a benchmark worker process.

A config whose kernel crashes (a wild store that segfaults the CPU backend, an
illegal address on a GPU) or hangs must cost the tuning that config only. So
every candidate is run and timed in a spawned worker process, never in the
tuning process:

- the tuning process sends the kernel as data (its PrimFunc, compile options and
  the built library's bytes — `transfer.pack`) and the input tensors (pickled;
  CUDA tensors travel through host memory), the worker loads the library and
  runs the kernel once (outputs come back for the correctness check, which runs
  here against `ref_prog`, so the reference never has to be picklable), then
  times it with the profiler;
- a worker that dies is reported as "crashed: … (SIGSEGV)" and replaced; a worker
  that does not answer within the config's timeout is killed with its whole
  process group — never abandoned, so it cannot slow down the configs timed
  after it — and replaced.

One worker is kept for the whole process (started on first use, before a
config's clock starts; killed at exit). `TILELANG_AUTOTUNE_ISOLATE=0` runs
candidates in the tuning process instead (for debugging with pdb; a crash then
ends the tuning).
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import pickle
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ..backend.toolrun import kill_group

_START_TIMEOUT = 120.0  # seconds for a new worker to import torch + tilelang and answer


class WorkerCrashed(RuntimeError):
    """The benchmark worker died while running a candidate."""


def isolation_enabled() -> bool:
    return os.environ.get("TILELANG_AUTOTUNE_ISOLATE", "1").strip().lower() not in ("0", "false", "no", "off")


def _signal_name(code: int | None) -> str:
    if code is None or code >= 0:
        return f"exit code {code}"
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


# -- the worker side ------------------------------------------------------------------------------


def _to_device(x: Any, device: str) -> Any:
    import torch

    if isinstance(x, torch.Tensor):
        return x.to(device)
    if isinstance(x, (list, tuple)):
        return type(x)(_to_device(v, device) for v in x)
    return x


def _to_host(x: Any) -> Any:
    import torch

    if isinstance(x, torch.Tensor):
        return x.detach().cpu()
    if isinstance(x, (list, tuple)):
        return type(x)(_to_host(v) for v in x)
    return x


class _Served:
    """What the worker holds between requests: the loaded kernel and its inputs."""

    def __init__(self) -> None:
        self.kernel: Any = None
        self.device = "cpu"
        self.inputs: list = []
        self.tmp = tempfile.TemporaryDirectory(prefix="tilelang-bench-")

    def load(self, spec: dict) -> None:
        from ..backend.registry import BuiltKernel
        from ..jit.kernel import JITKernel

        art = spec["artifact"]
        lib = None
        if art.get("lib_bytes") is not None:
            lib = Path(self.tmp.name) / f"k{time.monotonic_ns()}{art.get('lib_suffix') or ''}"
            lib.write_bytes(art["lib_bytes"])
        built = BuiltKernel(art["source"], str(lib) if lib else None, dict(art.get("meta") or {}))
        if spec["device_index"] is not None:
            import torch

            torch.cuda.set_device(spec["device_index"])
            self.device = f"cuda:{spec['device_index']}"
        else:
            self.device = "cpu"
        self.kernel = JITKernel(
            spec["func"],
            out_idx=spec["out_idx"],
            target=spec["target"],
            pass_configs=spec["pass_configs"],
            compile_flags=spec["compile_flags"],
            execution_backend=spec["execution_backend"],
            built=built,
        )

    def run(self) -> Any:
        outs = self.kernel(*self.inputs)
        if self.device != "cpu":
            import torch

            torch.cuda.synchronize()
        return _to_host(outs)

    def bench(self, warmup: int, rep: int, backend: str, baseline: float | None) -> float:
        from ..profiler import Profiler

        kernel = self.kernel
        prof = Profiler(kernel.params, kernel.out_idx, func=kernel, device="cpu" if self.device == "cpu" else None)
        return float(
            prof.do_bench(
                n_warmup=warmup, n_repeat=rep, input_tensors=self.inputs, backend=backend, early_stop_baseline=baseline
            )
        )


def _serve(conn: Any) -> None:
    """Worker main loop: answer ("ok", value) or ("error", text) to each request."""
    os.setsid()  # its own process group: the tuner kills the worker with everything it started
    import torch  # noqa: F401 - imported before the ready answer: start-up is not a config's time

    from ..jit.kernel import JITKernel  # noqa: F401
    from ..profiler import Profiler  # noqa: F401

    served = _Served()
    conn.send_bytes(pickle.dumps(("ok", os.getpid())))
    while True:
        try:
            op, *args = pickle.loads(conn.recv_bytes())
        except EOFError:
            return
        try:
            if op == "kernel":
                served.load(args[0])
                value = None
            elif op == "inputs":
                served.inputs = _to_device(args[0], served.device)
                value = None
            elif op == "run":
                value = served.run()
            elif op == "bench":
                value = served.bench(*args)
            else:
                raise ValueError(f"unknown request {op!r}")
            reply = ("ok", value)
        except BaseException as err:  # noqa: BLE001 - every failure goes back as text
            from .spec import describe_error

            reply = ("error", describe_error(err))
        conn.send_bytes(pickle.dumps(reply))


# -- the tuning side ------------------------------------------------------------------------------


class BenchWorker:
    """A handle on one spawned benchmark worker."""

    def __init__(self) -> None:
        self.proc: Any = None
        self.conn: Any = None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.is_alive()

    def start(self) -> None:
        from .executor import hidden_main

        ctx = multiprocessing.get_context("spawn")  # never fork a process that holds CUDA / torch threads
        parent, child = ctx.Pipe()
        with hidden_main():  # the worker must not re-run the user's script
            proc = ctx.Process(target=_serve, args=(child,), daemon=True, name="tilelang-bench")
            proc.start()
        child.close()
        self.proc, self.conn = proc, parent
        self._reply(_START_TIMEOUT, "starting")

    def kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        kill_group(proc)  # with everything it started (it leads its own session)
        proc.join(5)
        try:
            self.conn.close()
        except OSError:
            pass
        self.conn = None

    def _reply(self, left: float, what: str, limit: float | None = None) -> Any:
        if not self.conn.poll(None if left == float("inf") else max(left, 0.0)):
            self.kill()
            raise TimeoutError(f"timed out after {limit or left:g} s while {what} (benchmark worker killed)")
        try:
            status, value = pickle.loads(self.conn.recv_bytes())
        except (EOFError, OSError):
            self.proc.join(5)
            code = self.proc.exitcode
            self.kill()
            raise WorkerCrashed(f"crashed while {what}: the kernel's process died ({_signal_name(code)})") from None
        if status != "ok":
            raise RuntimeError(value)
        return value

    def request(self, deadline: float, limit: float, what: str, op: str, *args: Any) -> Any:
        try:
            self.conn.send_bytes(pickle.dumps((op, *args)))
        except (BrokenPipeError, OSError):
            code = self.proc.exitcode if self.proc is not None else None
            self.kill()
            raise WorkerCrashed(f"crashed before {what} ({_signal_name(code)})") from None
        return self._reply(deadline - time.monotonic(), what, limit)


_WORKER = BenchWorker()
_LOCK = threading.Lock()
atexit.register(_WORKER.kill)


def kernel_spec(kernel: Any) -> dict:
    """The kernel as plain data a worker can load without compiling anything."""
    from .transfer import pack

    func = kernel.prim_func
    return {
        "func": func,
        "out_idx": None if func.attrs.get("out_idx") is not None else kernel.out_idx,
        "target": kernel.target,
        "pass_configs": kernel.pass_configs,
        "compile_flags": kernel.compile_flags,
        "execution_backend": kernel.execution_backend,
        "artifact": pack(kernel.built),
        "device_index": kernel.adapter.device_index,
    }


def run_isolated(kernel: Any, inputs: list, timeout: float | None, check: Any, bench: tuple) -> float:
    """Load `kernel` in the benchmark worker; with `check`, run it once on `inputs` and call
    `check(outputs)` here (outputs come back on the host; an AssertionError ends the
    evaluation before timing); then time it. Returns the latency in ms.

    `bench` = (warmup, rep, backend, early-stop baseline). The whole evaluation must finish
    within `timeout` seconds (None / <= 0: no limit); a worker that is killed for it or dies
    raises TimeoutError / WorkerCrashed and is replaced before the next config."""
    with _LOCK:
        if not _WORKER.alive():
            _WORKER.kill()
            _WORKER.start()  # before the clock starts: worker start-up is not the config's time
        limit = timeout if timeout and timeout > 0 else float("inf")
        deadline = time.monotonic() + limit
        try:
            _WORKER.request(deadline, limit, "loading the kernel", "kernel", kernel_spec(kernel))
            _WORKER.request(deadline, limit, "receiving the inputs", "inputs", _to_host(list(inputs)))
            if check is not None:
                check(_WORKER.request(deadline, limit, "running the kernel", "run"))
            return _WORKER.request(deadline, limit, "timing the kernel", "bench", *bench)
        except RuntimeError:
            _WORKER.kill()  # a kernel that failed may have left its CUDA context unusable: start afresh
            raise


def shutdown_worker() -> None:
    """Kill the benchmark worker (a new one starts on the next use)."""
    with _LOCK:
        _WORKER.kill()
