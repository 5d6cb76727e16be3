"""Which passes a compile spends its time in.

    from tilelang.tools.pass_timing import pass_timing

    with pass_timing(top=10) as timing:   # prints the slowest passes at the end
        kernel = matmul(1024, 1024, 1024)
    timing.slowest(3)                                    # [(pass, target, total ms, runs), ...]

`TL_PASS_TIMING=1` prints the slowest passes of every compile to stderr (`tl.pass_profile` prints
every pass of a compile). The times are the pass runner's own (`transform/runner.PassRunner`),
so they cover every target.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TextIO

_ACTIVE: list[PassTimes] = []


@dataclass
class PassTimes:
    """Pass times collected while a `pass_timing()` block ran."""

    records: list[tuple[str, str, str, float]] = field(default_factory=list)  # kernel, target, pass, ms

    def slowest(self, n: int = 10) -> list[tuple[str, str, float, int]]:
        """(pass, target, total ms, runs), slowest first."""
        total: dict[tuple[str, str], list[float]] = {}
        for _kernel, target, name, ms in self.records:
            total.setdefault((name, target), []).append(ms)
        rows = [(name, target, sum(v), len(v)) for (name, target), v in total.items()]
        return sorted(rows, key=lambda r: -r[2])[:n]

    def report(self, n: int = 10) -> str:
        kernels = {(k, t) for k, t, _, _ in self.records}
        total = sum(ms for *_, ms in self.records)
        lines = [f"[tilelang] pass timing: {len(kernels)} compile(s), {total:.1f} ms in passes; slowest:"]
        for name, target, ms, runs in self.slowest(n):
            share = 100.0 * ms / total if total else 0.0
            lines.append(f"  {name:<28} {target:<5} {ms:9.2f} ms  {share:5.1f} %  ({runs} run{'s' * (runs != 1)})")
        return "\n".join(lines)


def env_enabled() -> bool:
    return os.environ.get("TL_PASS_TIMING", "0").strip().lower() in ("1", "true", "yes", "on")


def collecting() -> bool:
    """Whether pass times are wanted (a `pass_timing()` block is open, or TL_PASS_TIMING=1)."""
    return bool(_ACTIVE) or env_enabled()


def record(kernel: str, target: str, times: list[tuple[str, float]]) -> None:
    """Called by the pass runner at the end of every compile."""
    for timing in _ACTIVE:
        timing.records.extend((kernel, target, name, ms) for name, ms in times)
    if env_enabled() and times:
        one = PassTimes([(kernel, target, name, ms) for name, ms in times])
        print(one.report(5).replace("pass timing:", f"pass timing ({kernel}, {target}):", 1), file=sys.stderr)


@contextmanager
def pass_timing(top: int = 10, file: TextIO | None = None, report: bool = True) -> Iterator[PassTimes]:
    """Collect the pass times of every compile inside the block; print the `top` slowest at the end."""
    timing = PassTimes()
    _ACTIVE.append(timing)
    try:
        yield timing
    finally:
        _ACTIVE.remove(timing)
        if report:
            print(timing.report(top), file=file or sys.stderr)
