"""ptxas's figures for the kernels on screen: the register estimate replaced within seconds.

The analysis child returns, with each CUDA kernel's report, the source a build of it compiles
(`KernelInfo.build`, only when nvcc is installed and the kernel cache has no measurement yet).
`Measurements.attach` hands it to `tilelang.analysis.background_ptxas.BackgroundPtxas` — started
on first use, in this process: nvcc compiles generated code, never user code — which compiles it
in the background (debounced, cancelled by a newer version of the same kernel, cached by the
generated source). Figures already known are merged at once; the others when ptxas answers,
after which `on_measured()` asks for a refresh of the hints. `TILELANG_LSP_PTXAS=0` turns it off.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


def apply_stats(res: dict, stats: dict) -> None:
    """Mark `res` (a `Resources` as a dict) measured, with ptxas's `stats`."""
    res["measured"] = True
    res["source"] = f"ptxas, {stats.get('arch') or res.get('target')}"
    res["regs_per_thread"] = stats["registers"]
    if res.get("threads"):
        res["regs_per_block"] = stats["registers"] * res["threads"]
    for k, key in (
        ("spill_stores", "spill_stores"),
        ("spill_loads", "spill_loads"),
        ("static_smem_bytes", "static_shared_bytes"),
    ):
        res[key] = stats.get(k, 0)
    if stats.get("shared_bytes") is not None:
        res["shared_bytes"] = stats["shared_bytes"]
    if stats.get("blocks_per_sm") is not None:
        res["blocks_per_sm"], res["limiting"] = stats["blocks_per_sm"], stats.get("limiting", "")


class Measurements:
    def __init__(self, on_measured: Callable[[], None] | None = None, delay_s: float = 1.0) -> None:
        self.on_measured = on_measured
        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.waiting: dict[str, dict] = {}  # key -> the report (a dict) to update when ptxas answers
        self._jobs = None
        self.enabled = os.environ.get("TILELANG_LSP_PTXAS", "1") != "0"  # 0: keep the estimate

    def jobs(self):
        if self._jobs is None:
            from tilelang.analysis.background_ptxas import BackgroundPtxas  # first use only: tilelang's import

            self._jobs = BackgroundPtxas(self._done, delay_s=self.delay_s)
        return self._jobs

    def attach(self, key: str, info: dict | None) -> None:
        build = info.pop("build", None) if info else None
        if not build or not self.enabled or not info.get("resources"):
            return
        try:
            stats = self.jobs().submit(key, build["source"], build["arch"], build["entry"], build["threads"],
                                       build["smem"])  # fmt: skip
        except Exception:  # noqa: BLE001 - no measurement, the estimate stays
            log.exception("background ptxas unavailable")
            self.enabled = False
            return
        with self.lock:
            if stats is not None:
                self.waiting.pop(key, None)
                apply_stats(info["resources"], stats)
            else:
                self.waiting[key] = info

    def _done(self, key: str, stats: dict) -> None:
        with self.lock:
            info = self.waiting.pop(key, None)
            if info is None:
                return
            apply_stats(info["resources"], stats)
        if self.on_measured is not None:
            self.on_measured()

    def close(self) -> None:
        if self._jobs is not None:
            self._jobs.close()
