"""Compile-and-dump and benchmark, run in throw-away child processes; no protocol types."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .bindings import KernelFunction, analyze_module
from .config import Settings
from .render import fmt_bytes
from .worker import WorkerError, run_job

COMPILE_TIMEOUT_S = 60.0
BENCH_TIMEOUT_S = 300.0


class ActionError(Exception):
    pass


@dataclass
class Outcome:
    message: str
    hint: str | None = None  # label for the kernel line
    path: str | None = None  # the dumped file
    data: dict | None = None  # the raw result (GeneratedSource / BenchResult)


def find_function(text: str, name: str) -> KernelFunction:
    try:
        fn = next((f for f in analyze_module(text) if f.name == name), None)
    except SyntaxError as e:
        raise ActionError(f"the file does not parse: {e.msg} (line {e.lineno})") from None
    if fn is None:
        raise ActionError(f"no kernel function named {name!r} in this file")
    return fn


def request(op: str, text: str, path: str, fn: KernelFunction, settings: Settings) -> dict:
    return {
        "op": op, "source": text, "path": path, "function": fn.name,
        "target": settings.target, "bindings": repr(fn.bindings),
    }  # fmt: skip


def _run(req: dict, settings: Settings, timeout: float, on_event=None, cancel=None) -> dict:
    try:
        msg = run_job(settings.python, req, timeout, on_event, cancel)
    except WorkerError as e:
        if e.kind == "cancelled":
            raise
        raise ActionError(f"{req['op']} of {req['function']} failed: {e.message}") from None
    if "error" in msg:
        raise ActionError(f"{req['op']} of {req['function']} failed: {msg['error'].get('message')}")
    return msg["result"]


def dump_path(root: str | None, path: str, function: str, ext: str) -> Path:
    base = Path(root) if root else Path(path).parent
    return base / ".tilelang" / "dump" / f"{Path(path).stem}.{function}.{ext or 'txt'}"


def compile_and_dump(
    text: str,
    path: str,
    root: str | None,
    name: str,
    settings: Settings,
    on_event=None,
    cancel=None,
    op: str = "generate",
) -> Outcome:
    """Blocking: generate the source (op "generate") or the lowering trace (op "trace")
    of `name` and write it under <root>/.tilelang/dump/."""
    fn = find_function(text, name)
    gen = _run(request(op, text, path, fn, settings), settings, COMPILE_TIMEOUT_S, on_event, cancel)
    out = dump_path(root, path, name, gen.get("extension", "txt"))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
    tmp.write_text(gen.get("text", ""), encoding="utf-8")
    tmp.replace(out)
    hint = ptxas_label(gen.get("ptxas"))
    msg = f"{name}: {gen.get('language', '?')} source for {settings.target} written to {out}" + _assuming(fn)
    return Outcome(msg + (f" ({hint})" if hint else ""), hint, str(out), gen)


def _assuming(fn: KernelFunction) -> str:
    """Say so when representative values stand in for ones the file does not give."""
    if not fn.assumed:
        return ""
    return " — with assumed " + ", ".join(f"{k}={fn.bindings[k]!r}" for k in fn.assumed)


def ptxas_label(ptxas: dict | None) -> str | None:
    if not ptxas:
        return None
    parts = []
    if ptxas.get("registers") is not None:
        parts.append(f"{ptxas['registers']} regs")
    if ptxas.get("spill_bytes") is not None:
        parts.append(f"{ptxas['spill_bytes']} B spill")
    if ptxas.get("shared_bytes") is not None:
        parts.append(f"smem {fmt_bytes(ptxas['shared_bytes'])}")
    return "ptxas: " + ", ".join(parts) if parts else None


def benchmark(
    text: str, path: str, name: str, settings: Settings, on_event: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
) -> Outcome:  # fmt: skip
    """Blocking: compile and time `name` in a subprocess (killed when `cancel` is set)."""
    fn = find_function(text, name)
    res = _run(request("benchmark", text, path, fn, settings), settings, BENCH_TIMEOUT_S, on_event, cancel)
    rate = []
    if res.get("tflops") is not None:
        rate.append(f"{res['tflops']:.2f} TFLOP/s")
    if res.get("gbps") is not None:
        rate.append(f"{res['gbps']:.1f} GB/s")
    hint = " · ".join([f"{res.get('latency_ms', float('nan')):.3f} ms", *rate])
    device = res.get("device", "?")
    cpu = "cpu" in device.lower() or "c backend" in device.lower()
    where = f"timed the CPU backend ({device}): no GPU on this machine" if cpu else f"on {device}"
    msg = f"{name}: {hint} — {where}" + _assuming(fn) + (f". {res['note']}" if res.get("note") else "")
    return Outcome(msg, f"bench {hint}" + (" (CPU)" if cpu else ""), None, res)
