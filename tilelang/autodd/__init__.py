"""`tilelang.autodd`: a delta debugger over the Python source of a failing program.

    python -m tilelang.autodd source.py --err-msg MSG -o OUTPUT [--backend runner|subproc]
                             [--timeout SEC] [-j N]

It runs the program, checks that its output (stdout and stderr together) contains MSG, then
keeps rewriting the program's AST — runs of statements dropped, `if`/`for`/`with` replaced by
their bodies, calls replaced by an argument, integers and tile sizes shrunk — and keeps each
candidate whose output still contains MSG (lines of the candidate's own source that a traceback
echoes do not count), until no edit does. The smallest program found is
written to OUTPUT. Every candidate runs in its own process group under the time limit and is
killed at the end (`tilelang.autodd.runner`).

Code the reduction must keep is marked with `__freeze__` (it does nothing at run time):

    from tilelang.autodd import __freeze__
    with __freeze__:          # statements in here are never removed
        setup_that_matters()
    x = __freeze__(make_input())   # nor is a statement holding __freeze__(...)
"""

from __future__ import annotations

import ast
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import TileLangError
from .rewrites import candidates, size
from .runner import Outcome, Pool


class _Freeze:
    """Marks code the delta debugger must keep; at run time a no-op context manager / identity."""

    def __call__(self, value=None):
        return value

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False

    def __repr__(self) -> str:
        return "__freeze__"


__freeze__ = _Freeze()


class AutoDDError(TileLangError):
    """The reduction cannot start (the program does not show the message, or does not parse)."""


@dataclass(frozen=True)
class Reduction:
    source: str  # the smallest program found that still prints the message
    runs: int  # candidates run
    seconds: float
    original_lines: int
    lines: int


def _batches(items: Iterator[str], n: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for item in items:
        batch.append(item)
        if len(batch) == n:
            yield batch
            batch = []
    if batch:
        yield batch


def _untried_smaller(current: str, current_size: int, tried: set[str]) -> Iterator[str]:
    for cand in candidates(current):
        if cand in tried:
            continue
        tried.add(cand)
        if size(ast.parse(cand)) < current_size:
            yield cand


def _shows(output: str, source: str, err_msg: str) -> bool:
    """Whether the program printed `err_msg` — not counting lines of its own source that a
    traceback echoes (a shrunk `raise "message"` must not pass because its line is shown)."""
    own = {line.strip() for line in source.splitlines() if line.strip()}
    printed = "\n".join(line for line in output.splitlines() if line.strip() not in own)
    return err_msg in printed


def _count_lines(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.strip())


def reduce_source(
    source: str,
    err_msg: str,
    *,
    backend: str = "runner",
    timeout: float = 60.0,
    jobs: int = 1,
    name: str = "candidate.py",
    search_path: list[str] | None = None,
    log: Callable[[str], None] | None = None,
) -> Reduction:
    """Shrink `source` while its output still contains `err_msg` (see the module docstring)."""
    if not err_msg:
        raise AutoDDError("--err-msg must not be empty: every output contains the empty string")
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise AutoDDError(f"{name}:{e.lineno}:{e.offset}: the program does not parse: {e.msg}") from None
    say = log or (lambda _msg: None)
    t0 = time.monotonic()
    runs = 0
    with Pool(backend, timeout, jobs, search_path) as pool:
        first: Outcome = pool.run_all([source], name)[0]
        runs += 1
        if first.returncode is None:
            raise AutoDDError(f"{name}: the original program ran past the {timeout:g} s time limit — raise --timeout")
        if not _shows(first.output, source, err_msg):
            tail = "\n".join(first.output.rstrip().splitlines()[-5:])
            raise AutoDDError(
                f"{name}: the original program's output does not contain {err_msg!r} — nothing to reduce; "
                f"its last lines were:\n{tail}"
            )
        current, current_size = source, size(tree)
        tried = {source}
        while True:
            accepted = None
            for batch in _batches(_untried_smaller(current, current_size, tried), pool.jobs):
                outcomes = pool.run_all(batch, name)
                runs += len(batch)
                for cand, out in zip(batch, outcomes):
                    if out.returncode is not None and _shows(out.output, cand, err_msg):
                        accepted = cand
                        break
                if accepted is not None:
                    break
            if accepted is None:
                break
            current, current_size = accepted, size(ast.parse(accepted))
            say(f"autodd: {_count_lines(current)} lines after {runs} runs ({time.monotonic() - t0:.1f} s)")
    return Reduction(current, runs, time.monotonic() - t0, _count_lines(source), _count_lines(current))


def main(argv: list[str] | None = None) -> int:
    """The command line (`python -m tilelang.autodd`); returns the exit status."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m tilelang.autodd", description="Shrink a failing program to the smallest one that still fails."
    )
    parser.add_argument("source", help="the Python program that shows the error")
    parser.add_argument("--err-msg", required=True, help="text to look for in the program's stdout or stderr")
    parser.add_argument("-o", "--output", required=True, help="where the minimized program is written")
    parser.add_argument("--backend", choices=("runner", "subproc"), default="runner", help="runner (faster) or subproc")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds each candidate may run (default 60)")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="candidates run at once (default 1)")
    args = parser.parse_args(argv)
    src_path = Path(args.source)
    try:
        source = src_path.read_text()
    except OSError as e:
        print(f"autodd: cannot read {args.source}: {e.strerror}", file=sys.stderr)
        return 2
    if args.timeout <= 0 or args.jobs < 1:
        print("autodd: --timeout must be > 0 and -j at least 1", file=sys.stderr)
        return 2
    try:
        result = reduce_source(
            source,
            args.err_msg,
            backend=args.backend,
            timeout=args.timeout,
            jobs=args.jobs,
            name=src_path.name,
            search_path=[str(src_path.resolve().parent)],
            log=lambda msg: print(msg, file=sys.stderr),
        )
    except AutoDDError as e:
        print(f"autodd: {e}", file=sys.stderr)
        return 1
    Path(args.output).write_text(result.source)
    print(
        f"autodd: {result.original_lines} -> {result.lines} lines in {result.runs} runs ({result.seconds:.1f} s); "
        f"wrote {args.output}",
        file=sys.stderr,
    )
    return 0


__all__ = ["AutoDDError", "Reduction", "__freeze__", "main", "reduce_source"]
