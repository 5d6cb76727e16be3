"""Open documents and when to analyse them (debounce, staleness); no protocol types.

An edit schedules a pass after `debounce` seconds; a request that needs fresh
results (`current`) starts the pending pass at once and waits for it. A pass
runs `Analyzer.analyse` in a thread and stops early when a newer version
arrives; unchanged functions come from the analyser's cache.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .config import Settings
from .documents import Analyzer, DocResult

log = logging.getLogger(__name__)


@dataclass
class DocState:
    uri: str
    path: str
    text: str
    version: int | None
    last: DocResult | None = None  # latest finished pass (may be a syntax error)
    good: DocResult | None = None  # latest pass whose module parsed
    good_line_count: int = 0
    analysed_version: int | None = -1
    timer: asyncio.TimerHandle | None = None
    task: asyncio.Task | None = None
    task_version: int | None = -2
    waiters: int = 0
    extras: dict[str, tuple[str, list[str]]] = field(default_factory=dict)  # fn -> (fn source, hint labels)

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    def fresh(self) -> bool:
        return self.analysed_version == self.version

    def usable(self) -> DocResult | None:
        """Results to show now: the latest, or the last good one while the module does not parse."""
        if self.last is not None and self.last.syntax is None:
            return self.last
        if self.good is not None and self.good_line_count == len(self.lines):
            return self.good
        return None

    def extras_for(self, name: str, body: str) -> list[str]:
        got = self.extras.get(name)
        return got[1] if got and got[0] == body else []


class Session:
    def __init__(self, analyzer: Analyzer, settings: Settings, on_result: Callable[[DocState], None], debounce=0.15):
        self.analyzer = analyzer
        self.settings = settings
        self.on_result = on_result
        self.debounce = debounce
        self.docs: dict[str, DocState] = {}

    def open(self, uri: str, path: str, text: str, version: int | None) -> DocState:
        state = self.docs[uri] = DocState(uri, path, text, version)
        self._start(state)  # no debounce for the first analysis
        return state

    def change(self, uri: str, text: str, version: int | None) -> None:
        state = self.docs.get(uri)
        if state is None:
            return
        state.text, state.version = text, version
        if state.timer is not None:
            state.timer.cancel()
        state.timer = asyncio.get_running_loop().call_later(self.debounce, self._start, state)

    def close(self, uri: str) -> None:
        state = self.docs.pop(uri, None)
        if state and state.timer:
            state.timer.cancel()

    def reanalyse_all(self) -> None:
        for state in self.docs.values():
            state.analysed_version = -1
            self._start(state)

    def _start(self, state: DocState) -> asyncio.Task:
        if state.timer is not None:
            state.timer.cancel()
            state.timer = None
        if state.task is not None and not state.task.done() and state.task_version == state.version:
            return state.task
        state.task_version = state.version
        state.task = asyncio.get_running_loop().create_task(self._pass(state, state.version, state.text))
        return state.task

    async def _pass(self, state: DocState, version, text: str) -> None:
        s = self.settings
        t0, sent = time.perf_counter(), self.analyzer.analysed
        try:
            result = await asyncio.to_thread(
                self.analyzer.analyse, state.path, text, version, s.target, s.timeout_ms / 1000,
                lambda: state.version != version or self.docs.get(state.uri) is not state,
            )  # fmt: skip
        except Exception:  # noqa: BLE001 - a bug here must not leave requests waiting forever
            log.exception("analysis pass failed")
            result = DocResult(version)
        ms = (time.perf_counter() - t0) * 1000
        log.debug(
            "pass %s v%s: %.0f ms, %d function(s) analysed", state.uri, version, ms, self.analyzer.analysed - sent
        )
        if result is None or state.version != version:
            return
        state.last, state.analysed_version = result, version
        if result.syntax is None:
            state.good, state.good_line_count = result, len(text.splitlines())
        try:
            self.on_result(state)
        except Exception:  # noqa: BLE001 - a failed publish must not kill the pass
            log.exception("publishing results failed")

    async def current(self, uri: str, wait: float = 30.0) -> DocState | None:
        """The document's state, after the analysis of its latest version (or `wait` seconds)."""
        state = self.docs.get(uri)
        if state is None:
            return None
        state.waiters += 1
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + wait
            while not state.fresh() and loop.time() < deadline and self.docs.get(uri) is state:
                task = self._start(state)
                try:
                    await asyncio.wait_for(asyncio.shield(task), deadline - loop.time())
                except asyncio.TimeoutError:
                    break
        finally:
            state.waiters -= 1
        return state
