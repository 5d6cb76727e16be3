"""Running candidate programs for the delta debugger, bounded in time, every process reaped.

Two backends, as the public command line names them:
- `runner` (default, faster): this process imports tilelang and torch once, then forks one child
  per candidate; the child runs the candidate as `__main__` with its output sent to a file.
- `subproc` (more stable): a fresh `python candidate.py` per candidate, for programs that leave
  state behind in the interpreter (CUDA contexts, threads) that a fork would inherit.

Each child leads its own process group, so a timeout or the end of the search kills the
candidate and everything it started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..backend.toolrun import kill_group


@dataclass(frozen=True)
class Outcome:
    """What one run of a candidate printed, and how it ended."""

    output: str  # stdout and stderr together
    returncode: int | None  # None: killed at the time limit
    seconds: float


class _Running:
    def __init__(self, pid: int, log: Path, started: float, popen: subprocess.Popen | None = None) -> None:
        self.pid, self.log, self.started, self.popen = pid, log, started, popen


def _child_main(script: Path, log: Path, search_path: list[str]) -> None:  # runs in the forked child; never returns
    code = 1
    try:
        os.setpgid(0, 0)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 — lives until os._exit
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        sys.argv = [str(script)]
        sys.path[:0] = [str(script.parent), *search_path]
        import runpy
        import traceback

        try:
            runpy.run_path(str(script), run_name="__main__")
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:  # noqa: BLE001 — the candidate's error is the output we look for
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


class Pool:
    """Up to `jobs` candidates running at once, each under `timeout` seconds."""

    def __init__(
        self, backend: str = "runner", timeout: float = 60.0, jobs: int = 1, search_path: list[str] | None = None
    ) -> None:
        """`search_path`: directories the candidates import from besides their own (the original
        program's directory, so its sibling modules still import)."""
        if backend not in ("runner", "subproc"):
            raise ValueError(f"backend must be 'runner' or 'subproc', not {backend!r}")
        self.backend, self.timeout, self.jobs = backend, float(timeout), max(1, int(jobs))
        self.search_path = list(search_path or [])
        self._tmp = tempfile.TemporaryDirectory(prefix="tilelang-autodd-")
        self.dir = Path(self._tmp.name)
        self._count = 0
        self._running: list[_Running] = []
        if backend == "runner":
            self._preimport()

    @staticmethod
    def _preimport() -> None:
        # What every candidate imports anyway: paid once here instead of once per candidate.
        import tilelang  # noqa: F401
        import tilelang.language  # noqa: F401

        try:
            import torch  # noqa: F401
        except ImportError:
            pass

    def _start(self, source: str, name: str) -> _Running:
        self._count += 1
        script = self.dir / f"c{self._count}" / name
        script.parent.mkdir()
        script.write_text(source)
        log = script.with_suffix(".log")
        started = time.monotonic()
        if self.backend == "subproc":
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join([*self.search_path, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
            with open(log, "wb") as out:
                proc = subprocess.Popen(
                    [sys.executable, str(script)],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=env,
                    start_new_session=True,
                )
            return _Running(proc.pid, log, started, proc)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child_main(script, log, self.search_path)
        try:
            os.setpgid(pid, pid)  # also from this side: no window where a kill would miss it
        except (PermissionError, ProcessLookupError):
            pass
        return _Running(pid, log, started)

    def _poll(self, r: _Running) -> int | None | str:
        """Return code, "running", or None after a kill at the time limit."""
        if r.popen is not None:
            code = r.popen.poll()
            if code is not None:
                return code
        else:
            pid, status = os.waitpid(r.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
        if time.monotonic() - r.started > self.timeout:
            self._kill(r)
            return None
        return "running"

    def _kill(self, r: _Running) -> None:
        if r.popen is not None:
            kill_group(r.popen)
            r.popen.wait()
            return
        try:
            os.killpg(r.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            os.waitpid(r.pid, 0)
        except ChildProcessError:
            pass

    def run_all(self, sources: list[str], name: str = "candidate.py") -> list[Outcome]:
        """Run every source (at most `jobs` at a time); outcomes in the order given."""
        outcomes: list[Outcome | None] = [None] * len(sources)
        pending = list(enumerate(sources))
        active: list[tuple[int, _Running]] = []
        try:
            while pending or active:
                while pending and len(active) < self.jobs:
                    i, src = pending.pop(0)
                    active.append((i, self._start(src, name)))
                still: list[tuple[int, _Running]] = []
                for i, r in active:
                    state = self._poll(r)
                    if state == "running":
                        still.append((i, r))
                        continue
                    text = r.log.read_text(errors="replace") if r.log.exists() else ""
                    outcomes[i] = Outcome(text, state, time.monotonic() - r.started)  # type: ignore[arg-type]
                active = still
                if active:
                    time.sleep(0.01)
        finally:
            for _, r in active:
                self._kill(r)
        return [o for o in outcomes if o is not None]

    def close(self) -> None:
        self._tmp.cleanup()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
