"""The language server's analysis worker bounds the code it traces: memory (RLIMIT_AS) and CPU
(RLIMIT_CPU) limits turn a runaway kernel factory into an error reply, and the processes traced
code starts die with the worker — on a timeout and when the server stops."""

from __future__ import annotations

import os
import textwrap
import time

import pytest

pytest.importorskip("pygls")

from tilelang_lsp.worker import Worker, WorkerError  # noqa: E402

SOURCE = textwrap.dedent(
    """
    import tilelang
    import tilelang.language as T

    @tilelang.jit(out_idx=[-1])
    def hog(N: int = 64, what: str = "none", pidfile: str = ""):
        if what == "memory":
            block = bytearray(1 << 30)  # 1 GiB
            block[::4096] = b"x" * len(block[::4096])
        if what == "cpu":
            while True:
                pass
        if what == "slow":
            import time

            time.sleep(0.5)
        if what == "spawn":
            import subprocess, sys, time  # the analyzer does not run module-level code

            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            open(pidfile, "w").write(str(child.pid))
            time.sleep(600)

        @T.prim_func
        def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
            with T.Kernel(1, threads=N) as bx:
                for i in T.Parallel(N):
                    B[i] = A[i] * 2.0

        return main
    """
)


def _request(path, **bindings):
    return {"op": "analyze", "source": SOURCE, "path": str(path), "function": "hog", "target": "c",
            "bindings": repr(bindings)}  # fmt: skip


def _errors(out: dict) -> str:
    """The request's error, or the diagnostics the analysis reported for the traced code."""
    if "error" in out:
        return out["error"]["message"]
    return " | ".join(d["message"] for d in out["result"]["diagnostics"])


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture
def worker(monkeypatch):
    monkeypatch.setenv("TILELANG_ANALYSIS_MEMORY_MB", "512")
    monkeypatch.setenv("TILELANG_ANALYSIS_CPU_S", "3")
    w = Worker()
    yield w
    w.stop()


def test_memory_and_cpu_limits_become_errors_and_the_worker_survives(worker, tmp_path):
    path = tmp_path / "k.py"
    path.write_text(SOURCE)
    assert "MemoryError" in _errors(worker.call(_request(path, what="memory"), timeout=60))
    assert "more than 3 s of CPU time" in _errors(worker.call(_request(path, what="cpu"), timeout=60))
    pid = worker.pid()
    out = worker.call(_request(path), timeout=60)
    assert "result" in out and worker.pid() == pid  # the same process, still usable


def test_processes_started_by_traced_code_die_with_the_worker(worker, tmp_path):
    path, pidfile = tmp_path / "k.py", tmp_path / "pid"
    path.write_text(SOURCE)
    with pytest.raises(WorkerError) as err:
        worker.call(_request(path, what="spawn", pidfile=str(pidfile)), timeout=8)
    assert err.value.kind == "timeout"
    grandchild = int(pidfile.read_text())
    for _ in range(50):
        if not _alive(grandchild):
            break
        time.sleep(0.1)
    assert not _alive(grandchild), "a process the traced code started survived the worker's kill"
    # and on server stop: the spare and the current worker go, with their groups
    procs = [worker.proc, worker.spare]
    worker.stop()
    for p in procs:
        if p is not None:
            assert p.wait(timeout=5) is not None
    assert os.getpid() > 0


def test_a_cancelled_analysis_stops_and_the_process_stays_warm(worker, tmp_path):
    """The server cancels the analysis of a kernel whose text changed: the child stops at the next
    check (after the trace, between passes) and stays usable; a trace that never gets there (a loop
    in user code) is killed after the grace time, and the spare takes over."""
    path = tmp_path / "k.py"
    path.write_text(SOURCE)
    worker.call(_request(path), timeout=60)  # started and warm
    pid, restarts = worker.pid(), worker.restarts
    t0 = time.monotonic()
    with pytest.raises(WorkerError) as err:
        worker.call(_request(path, what="slow"), timeout=60, cancel=lambda: time.monotonic() - t0 > 0.1)
    assert err.value.kind == "cancelled"
    assert worker.pid() == pid and worker.restarts == restarts  # stopped, not killed
    assert "result" in worker.call(_request(path), timeout=60)
    worker.cancel_grace_s = 0.3
    t0 = time.monotonic()
    with pytest.raises(WorkerError) as err:
        worker.call(_request(path, what="cpu"), timeout=60, cancel=lambda: time.monotonic() - t0 > 0.1)
    assert err.value.kind == "cancelled" and time.monotonic() - t0 < 5
    assert worker.pid() != pid  # the looping process was replaced
    assert "result" in worker.call(_request(path), timeout=60)
