"""Open documents and when to analyse them (coalescing edits, staleness); no protocol types.

An edit starts a pass at once when none is running (so the first result after a pause costs no
debounce); edits that arrive while one runs are coalesced: the pass stops at its next kernel —
or, when the kernel being analysed is the one edited, after the worker's current compiler pass —
and one pass for the latest version follows. A request that needs fresh results (`current`)
waits for it. Unchanged functions come from the analyser's cache.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .config import Settings
from .documents import FRONTEND_CODES, Analyzer, DocResult, FunctionResult, shift_locs, shifted

log = logging.getLogger(__name__)


@dataclass
class DocState:
    uri: str
    path: str
    text: str
    version: int | None
    last: DocResult | None = None  # latest finished pass (stale kernels filled in from `good`)
    good: dict[str, FunctionResult] = field(default_factory=dict)  # kernel name -> its last good analysis
    analysed_version: int | None = -1
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
        """Results to show now: the latest pass, where a kernel that does not parse or has a
        frontend error shows its last good analysis, marked stale."""
        return self.last

    def merge_stale(self, result: DocResult) -> DocResult:
        """Keep each kernel's last good analysis and show it (stale) while it cannot be analysed."""
        for i, fr in enumerate(result.functions):
            ok = fr.info is not None and not any(
                d.get("severity") == "error" and d.get("code") in FRONTEND_CODES
                for d in (fr.info.get("diagnostics") or []) + fr.diagnostics
            )
            old = self.good.get(fr.fn.name)
            if ok:
                self.good[fr.fn.name] = fr
            elif old is not None and old.info is not None:
                delta = fr.fn.def_line - old.fn.def_line
                info = shift_locs(old.info, delta)
                info["diagnostics"] = [d for d in fr.info.get("diagnostics") or []] if fr.info else []
                result.functions[i] = FunctionResult(
                    fr.fn, info, fr.diagnostics, "stale: the kernel has an error (see diagnostics)"
                )
        for name, (def_line, end) in result.broken.items():
            old = self.good.get(name)
            if old is None or old.info is None or result.function_named(name) is not None:
                continue
            delta = def_line - old.fn.def_line
            info = shift_locs(old.info, delta)
            info["diagnostics"] = []
            fn = shifted(old.fn, def_line, max(end, old.fn.end_line + delta))
            result.functions.append(FunctionResult(fn, info, [], "stale: the file does not parse here"))
        live = {f.fn.name for f in result.functions}
        for name in [n for n in self.good if n not in live]:
            del self.good[name]
        return result

    def extras_for(self, name: str, body: str) -> list[str]:
        got = self.extras.get(name)
        return got[1] if got and got[0] == body else []


class Session:
    def __init__(self, analyzer: Analyzer, settings: Settings, on_result: Callable[[DocState], None]):
        self.analyzer = analyzer
        self.settings = settings
        self.on_result = on_result
        self.docs: dict[str, DocState] = {}

    def open(self, uri: str, path: str, text: str, version: int | None) -> DocState:
        state = self.docs[uri] = DocState(uri, path, text, version)
        self._start(state)  # the first analysis at once
        return state

    def change(self, uri: str, text: str, version: int | None) -> None:
        state = self.docs.get(uri)
        if state is None:
            return
        state.text, state.version = text, version
        if state.task is None or state.task.done():
            self._start(state)  # leading edge: nothing to coalesce with
        # else: the running pass sees it is stale and starts the latest version when it stops

    def close(self, uri: str) -> None:
        self.docs.pop(uri, None)

    def reanalyse_all(self) -> None:
        for state in self.docs.values():
            state.analysed_version = -1
            self._start(state)

    def _start(self, state: DocState) -> asyncio.Task:
        if state.task is not None and not state.task.done():
            # the running pass (perhaps for an older version) stops at its next kernel when it is
            # stale, and then starts the latest one: passes never pile up on the workers
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
                lambda: state.version != version or self.docs.get(state.uri) is not state, s.trust,
                lambda: state.text,
            )  # fmt: skip
        except Exception:  # noqa: BLE001 - a bug here must not leave requests waiting forever
            log.exception("analysis pass failed")
            result = DocResult(version)
        ms = (time.perf_counter() - t0) * 1000
        log.debug(
            "pass %s v%s: %.0f ms, %d function(s) analysed", state.uri, version, ms, self.analyzer.analysed - sent
        )
        if result is None or state.version != version:
            if self.docs.get(state.uri) is state:
                asyncio.get_running_loop().call_soon(self._start, state)
            return
        state.last, state.analysed_version = state.merge_stale(result), version
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
